// InputTracker: samples of open files summed per path and role, and the data
// disk behind what the workers read.
#include "record/input_tracker.h"

#include <gtest/gtest.h>

namespace stallscope {
namespace {

OpenInput File(int32_t pid, const std::string& path, uint64_t pos, uint32_t major, uint32_t minor,
               const std::string& device) {
  OpenInput f;
  f.pid = pid;
  f.path = path;
  f.position = pos;
  f.size = 1000;
  f.major = major;
  f.minor = minor;
  f.device = device;
  f.fs_type = "ext4";
  return f;
}

TEST(InputTracker, SumsSamplesReadersAndPositionPerPathAndRole) {
  InputTracker t;
  OpenInput zip = File(11, "/data/train.zip", 100, 7, 0, "loop0");
  zip.format.kind = "zip";
  zip.format.archive = true;
  zip.format.compressed = true;
  zip.format.method = "deflate";
  t.Add(1.0, "worker", {zip});
  // The same pid with the file twice in one sample counts once.
  OpenInput again = zip;
  again.position = 900;
  t.Add(2.0, "worker", {zip, again});
  OpenInput other = zip;
  other.pid = 12;
  other.position = 300;
  t.Add(2.0, "worker", {other});
  t.Add(2.0, "rank", {File(10, "/data/train.zip", 5, 7, 0, "loop0")});
  // Both workers caught again in the next sample: both count.
  OpenInput later = zip;
  later.position = 950;
  t.Add(3.0, "worker", {other, later});
  std::vector<InputSeen> got = t.Inputs();
  ASSERT_EQ(got.size(), 2u);  // (path, rank) and (path, worker)
  const InputSeen& w = got[0].role == "worker" ? got[0] : got[1];
  EXPECT_EQ(w.path, "/data/train.zip");
  EXPECT_EQ(w.samples, 5);  // pid 11 at 1, 2 and 3; pid 12 at 2 and 3
  EXPECT_EQ(w.readers, 2);
  EXPECT_EQ(w.max_position, 950u);
  EXPECT_DOUBLE_EQ(w.first_t, 1.0);
  EXPECT_DOUBLE_EQ(w.last_t, 3.0);
  EXPECT_EQ(w.format, "zip");
  EXPECT_TRUE(w.archive);
  EXPECT_TRUE(w.compressed);
  EXPECT_EQ(w.method, "deflate");
  EXPECT_EQ(w.device, "loop0");
}

TEST(InputTracker, DataDeviceIsTheWorkersMostSeenElseTheRanks) {
  InputTracker t;
  EXPECT_FALSE(t.DataDevice().has_value());
  t.Add(1, "rank", {File(10, "/home/u/labels.csv", 0, 253, 1, "dm-1")});
  EXPECT_EQ(t.DataDevice(), std::pair(253u, 1u));  // no worker yet: the rank's
  t.Add(1, "worker", {File(11, "/mnt/a/1.jpg", 0, 7, 2, "loop2")});
  t.Add(2, "worker", {File(11, "/mnt/a/2.jpg", 0, 7, 2, "loop2")});
  t.Add(2, "worker", {File(12, "/scratch/x", 0, 8, 1, "sda1")});
  EXPECT_EQ(t.DataDevice(), std::pair(7u, 2u));
  // A remote file has no device: it does not count.
  OpenInput nfs = File(11, "/nfs/big.tar", 0, 0, 52, "");
  nfs.remote = true;
  for (int i = 0; i < 5; ++i) t.Add(3 + i, "worker", {nfs});
  EXPECT_EQ(t.DataDevice(), std::pair(7u, 2u));
}

TEST(InputTracker, BoundedAndCounted) {
  InputTracker t;
  for (size_t i = 0; i < kMaxInputsKept + 7; ++i) {
    t.Add(1, "worker", {File(11, "/d/" + std::to_string(i), 0, 8, 1, "sda1")});
  }
  EXPECT_EQ(t.Inputs().size(), kMaxInputsKept);
  EXPECT_EQ(t.dropped(), 7u);
  // A path already kept still counts.
  t.Add(2, "worker", {File(11, "/d/0", 0, 8, 1, "sda1")});
  EXPECT_EQ(t.dropped(), 7u);
}

}  // namespace
}  // namespace stallscope
