// When the recorder takes a boundary sample (at most one per 50 ms, a mark
// that comes sooner read later under the latest epoch) and what it sums.
#include "record/epoch_boundaries.h"

#include <gtest/gtest.h>

namespace stallscope {
namespace {

TEST(EpochBoundaryClock, ANewEpochIsReadAtOnceAndCloseMarksWaitFiftyMilliseconds) {
  EpochBoundaryClock clock;
  EXPECT_FALSE(clock.DueAt().has_value());
  EXPECT_FALSE(clock.TakeDue(1.0).has_value());
  clock.Mark({{0, 0, 1.0}, {1, 0, 1.001}});  // two ranks mark epoch 0
  EXPECT_EQ(clock.TakeDue(1.002), std::optional<int>(0));
  clock.Mark({{0, 0, 1.0}});  // seen again (the same events drained twice)
  EXPECT_FALSE(clock.DueAt().has_value());
  // Epochs 1 and 2 come 10 and 20 ms later: one reading, 50 ms after the last.
  clock.Mark({{0, 1, 1.012}});
  clock.Mark({{0, 2, 1.022}});
  ASSERT_TRUE(clock.DueAt().has_value());
  EXPECT_NEAR(*clock.DueAt(), 1.052, 1e-9);
  EXPECT_FALSE(clock.TakeDue(1.03).has_value());
  EXPECT_EQ(clock.TakeDue(1.06), std::optional<int>(2));
  EXPECT_FALSE(clock.TakeDue(5.0).has_value());
  // However fast epochs come, readings stay 50 ms apart.
  double last = 1.06;
  int readings = 0;
  for (int k = 3; k < 1003; ++k) {
    const double now = 1.06 + (k - 2) * 0.001;  // an epoch a millisecond
    clock.Mark({{0, k, now}});
    if (clock.TakeDue(now)) {
      EXPECT_GE(now - last, kMinBoundarySpacingSeconds - 1e-9);
      last = now;
      ++readings;
    }
  }
  EXPECT_LE(readings, 21);  // 1 s of epochs: at most 20 readings, and the one due at its end
  EXPECT_GE(readings, 19);
}

TEST(MakeBoundarySample, SumsTheTreeAndKeepsTheWholeDisksAsked) {
  ProcessTree tree;
  ProcessSample a;
  a.pid = 10;
  a.utime_ticks = 150;
  a.stime_ticks = 50;
  a.rss_bytes = 1000;
  a.io = ProcessIo{0, 0, 4096, 0, 0};
  ProcessSample b = a;
  b.pid = 11;
  b.io = ProcessIo{0, 0, 8192, 0, 0};
  ProcessSample c = a;  // its io unreadable: counted for CPU and RSS only
  c.pid = 12;
  c.io.reset();
  tree.processes = {a, b, c};
  DiskstatsSample disks;
  disks.devices.resize(4);
  disks.devices[0].name = "vda";
  disks.devices[0].sectors_read = 10;
  disks.devices[1].name = "vda1";
  disks.devices[1].sectors_read = 9;
  disks.devices[2].name = "loop7";
  disks.devices[2].sectors_read = 2048;
  disks.devices[3].name = "loop3";  // attached, never read: left out
  disks.devices[3].sectors_read = 0;
  BoundarySample s = MakeBoundarySample(2.5, 3, &tree, disks, {"vda", "loop7", "loop3"}, 100);
  EXPECT_DOUBLE_EQ(s.t, 2.5);
  EXPECT_EQ(s.epoch, std::optional<int>(3));
  EXPECT_EQ(s.processes, 3);
  EXPECT_EQ(s.tree_rss_bytes, 3000u);
  EXPECT_DOUBLE_EQ(s.tree_cpu_seconds, 6.0);
  EXPECT_EQ(s.tree_read_bytes, std::optional<uint64_t>(12288));
  EXPECT_EQ(s.disk_read_bytes,
            (std::vector<std::pair<std::string, uint64_t>>{{"vda", 5120}, {"loop7", 1048576}}));
  // The job gone: no tree, the disks still read.
  s = MakeBoundarySample(9, std::nullopt, nullptr, disks, {"loop7"}, 100);
  EXPECT_EQ(s.processes, 0);
  EXPECT_FALSE(s.tree_read_bytes.has_value());
  ASSERT_EQ(s.disk_read_bytes.size(), 1u);
}

}  // namespace
}  // namespace stallscope
