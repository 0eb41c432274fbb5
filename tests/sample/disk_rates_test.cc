#include "sample/disk_rates.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "core/file.h"
#include "core/text.h"
#include "probe/diskstats.h"

namespace stallscope {
namespace {

const std::string kFixtures = STALLSCOPE_FIXTURES;

DiskstatsSample MustRead(const std::string& root) {
  Result<DiskstatsSample> sample = ReadDiskstats(Root(root));
  EXPECT_TRUE(sample.ok()) << sample.status().ToString();
  return sample.ok() ? *sample : DiskstatsSample{};
}

// iostat's clock: the first field of /proc/uptime.
double Uptime(const std::string& root) {
  Result<std::string> text = ReadFile(Root(root).Path("/proc/uptime"));
  EXPECT_TRUE(text.ok());
  if (!text.ok()) return 0;
  std::optional<double> seconds = ParseDouble(SplitFields(*text).at(0));
  EXPECT_TRUE(seconds.has_value());
  return seconds.value_or(0);
}

const DiskCounters& Find(const DiskstatsSample& sample, const std::string& name) {
  for (const DiskCounters& device : sample.devices) {
    if (device.name == name) return device;
  }
  ADD_FAILURE() << "no device " << name;
  static const DiskCounters kNone;
  return kNone;
}

// The hand-made interval of tests/fixtures/disk_host: proc/ is before,
// later/proc/ is 2.5 s later. nvme0n1's deltas, written out:
//   reads +5000, merged +1250, sectors +2,560,000, read_ms +1000
//   writes +2000, merged +500, sectors +512,000, write_ms +3000
//   discards +10, merged 0, sectors +20,480, discard_ms +50
//   flushes +100, flush_ms +60; io_ms +2000; weighted_io_ms +4650
TEST(DiskRates, HandMadeDeltasFollowIostatFormulas) {
  const std::string before_root = kFixtures + "/disk_host";
  const std::string after_root = kFixtures + "/disk_host/later";
  const double s = Uptime(after_root) - Uptime(before_root);
  ASSERT_DOUBLE_EQ(s, 2.5);
  const DiskstatsSample before = MustRead(before_root), after = MustRead(after_root);
  DiskRates r = ComputeDiskRates(Find(before, "nvme0n1"), Find(after, "nvme0n1"), s);
  EXPECT_EQ(r.name, "nvme0n1");
  EXPECT_DOUBLE_EQ(r.reads_per_second, 5000 / s);
  EXPECT_DOUBLE_EQ(r.read_kib_per_second, 2560000 / s / 2);
  EXPECT_DOUBLE_EQ(r.read_merges_per_second, 1250 / s);
  EXPECT_DOUBLE_EQ(r.read_merge_percent, 100.0 * 1250 / (1250 + 5000));
  EXPECT_DOUBLE_EQ(r.read_await_ms, 1000.0 / 5000);
  EXPECT_DOUBLE_EQ(r.read_request_kib, 2560000.0 / 5000 / 2);
  EXPECT_DOUBLE_EQ(r.writes_per_second, 2000 / s);
  EXPECT_DOUBLE_EQ(r.write_kib_per_second, 512000 / s / 2);
  EXPECT_DOUBLE_EQ(r.write_merges_per_second, 500 / s);
  EXPECT_DOUBLE_EQ(r.write_merge_percent, 100.0 * 500 / (500 + 2000));
  EXPECT_DOUBLE_EQ(r.write_await_ms, 3000.0 / 2000);
  EXPECT_DOUBLE_EQ(r.write_request_kib, 512000.0 / 2000 / 2);
  EXPECT_TRUE(r.has_discard);
  EXPECT_DOUBLE_EQ(r.discards_per_second, 10 / s);
  EXPECT_DOUBLE_EQ(r.discard_kib_per_second, 20480 / s / 2);
  EXPECT_DOUBLE_EQ(r.discard_merge_percent, 0);
  EXPECT_DOUBLE_EQ(r.discard_await_ms, 50.0 / 10);
  EXPECT_DOUBLE_EQ(r.discard_request_kib, 20480.0 / 10 / 2);
  EXPECT_TRUE(r.has_flush);
  EXPECT_DOUBLE_EQ(r.flushes_per_second, 100 / s);
  EXPECT_DOUBLE_EQ(r.flush_await_ms, 60.0 / 100);
  EXPECT_DOUBLE_EQ(r.await_ms, (1000.0 + 3000 + 50) / (5000 + 2000 + 10));
  EXPECT_DOUBLE_EQ(r.request_kib, (2560000.0 + 512000 + 20480) / (5000 + 2000 + 10) / 2);
  EXPECT_DOUBLE_EQ(r.average_queue_size, 4650 / s / 1000);
  EXPECT_DOUBLE_EQ(r.util_percent, 2000 / (s * 1000) * 100);
}

// sda's read_ms and io_ms pass 2^32 during the interval (the kernel prints
// them as 32-bit values): 4294967000 -> 704 is +1000 ms, 4294966296 -> 1500
// is +2500 ms, all of the 2.5 s interval.
TEST(DiskRates, MillisecondFieldsWrapAt32Bits) {
  const DiskstatsSample before = MustRead(kFixtures + "/disk_host");
  const DiskstatsSample after = MustRead(kFixtures + "/disk_host/later");
  DiskRates r = ComputeDiskRates(Find(before, "sda"), Find(after, "sda"), 2.5);
  EXPECT_DOUBLE_EQ(r.reads_per_second, 4);
  EXPECT_DOUBLE_EQ(r.read_await_ms, 100);
  EXPECT_DOUBLE_EQ(r.util_percent, 100);
  EXPECT_DOUBLE_EQ(r.average_queue_size, 10);
  // No write completed: 0, not NaN.
  EXPECT_EQ(r.writes_per_second, 0);
  EXPECT_EQ(r.write_await_ms, 0);
  EXPECT_EQ(r.write_request_kib, 0);
  EXPECT_EQ(r.write_merge_percent, 0);
}

// The columns the real iostat printed (make_iostat_reference.sh beside the
// fixture; JSON numbers rounded to 2 decimals) for the interval report.
void ExpectMatchesIostat(const std::string& reference, const std::string& before_root,
                         const std::string& after_root, size_t expected_devices) {
  Result<std::string> text = ReadFile(reference);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  nlohmann::json json = nlohmann::json::parse(*text);
  const nlohmann::json& interval = json["sysstat"]["hosts"][0]["statistics"][1]["disk"];
  ASSERT_EQ(interval.size(), expected_devices);
  const double s = Uptime(after_root) - Uptime(before_root);
  std::vector<DiskRates> all = ComputeAllDiskRates(MustRead(before_root), MustRead(after_root), s);
  std::map<std::string, DiskRates> ours;
  for (const DiskRates& r : all) ours[r.name] = r;
  for (const nlohmann::json& row : interval) {
    const std::string name = row["disk_device"];
    SCOPED_TRACE(name);
    ASSERT_EQ(ours.count(name), 1u);
    const DiskRates& r = ours[name];
    const std::pair<const char*, double> columns[] = {
        {"r/s", r.reads_per_second},           {"w/s", r.writes_per_second},
        {"d/s", r.discards_per_second},        {"f/s", r.flushes_per_second},
        {"rkB/s", r.read_kib_per_second},      {"wkB/s", r.write_kib_per_second},
        {"dkB/s", r.discard_kib_per_second},   {"rrqm/s", r.read_merges_per_second},
        {"wrqm/s", r.write_merges_per_second}, {"drqm/s", r.discard_merges_per_second},
        {"rrqm", r.read_merge_percent},        {"wrqm", r.write_merge_percent},
        {"drqm", r.discard_merge_percent},     {"r_await", r.read_await_ms},
        {"w_await", r.write_await_ms},         {"d_await", r.discard_await_ms},
        {"f_await", r.flush_await_ms},         {"rareq-sz", r.read_request_kib},
        {"wareq-sz", r.write_request_kib},     {"dareq-sz", r.discard_request_kib},
        {"aqu-sz", r.average_queue_size},      {"util", r.util_percent}};
    for (const auto& [column, value] : columns) {
      EXPECT_NEAR(value, row[column].get<double>(), 0.0051) << column;
    }
  }
}

TEST(DiskRates, MatchesRealIostatOnHandMadeFixture) {
  ExpectMatchesIostat(kFixtures + "/disk_host/iostat_reference.json", kFixtures + "/disk_host",
                      kFixtures + "/disk_host/later", 6);
}

// Two captures of this machine 1.38 s apart while dd wrote 4 MiB with fsync.
TEST(DiskRates, LiveCaptureSeesTheWriteAndMatchesIostat) {
  const std::string dir = kFixtures + "/live_debian12/diskstats_interval";
  const std::string before_root = dir + "/before", after_root = dir + "/after";
  const double s = Uptime(after_root) - Uptime(before_root);
  ASSERT_NEAR(s, 1.38, 1e-9);
  const DiskstatsSample before_sample = MustRead(before_root);
  const DiskstatsSample after_sample = MustRead(after_root);
  const DiskCounters& before = Find(before_sample, "vda");
  const DiskCounters& after = Find(after_sample, "vda");
  DiskRates r = ComputeDiskRates(before, after, s);
  EXPECT_GT(r.writes_per_second, 0);
  // At least the 4 MiB dd wrote reached the disk during the interval.
  EXPECT_GE(r.write_kib_per_second * s, 4096 - 1e-6);
  EXPECT_DOUBLE_EQ(r.write_kib_per_second,
                   static_cast<double>(after.sectors_written - before.sectors_written) / s / 2);
  EXPECT_DOUBLE_EQ(r.write_await_ms, static_cast<double>(after.write_ms - before.write_ms) /
                                         (after.writes_completed - before.writes_completed));
  EXPECT_GT(r.util_percent, 0);
  EXPECT_LT(r.util_percent, 100);
  // iostat -p ALL lists the idle loop and zram devices too.
  ExpectMatchesIostat(dir + "/iostat_reference.json", before_root, after_root, 10);
}

DiskCounters Counters(uint64_t reads, uint64_t sectors_read, uint64_t read_ms, uint64_t io_ms) {
  DiskCounters c;
  c.name = "sdx";
  c.reads_completed = reads;
  c.sectors_read = sectors_read;
  c.read_ms = read_ms;
  c.io_ms = io_ms;
  return c;
}

TEST(DiskRates, IdleIntervalGivesZerosNotNaN) {
  DiskCounters same = Counters(100, 800, 50, 40);
  DiskRates r = ComputeDiskRates(same, same, 1.0);
  for (double value :
       {r.reads_per_second, r.read_await_ms, r.read_request_kib, r.read_merge_percent, r.await_ms,
        r.request_kib, r.flush_await_ms, r.util_percent, r.average_queue_size}) {
    EXPECT_FALSE(std::isnan(value));
    EXPECT_EQ(value, 0);
  }
}

TEST(DiskRates, NonPositiveIntervalGivesNoRatesButKeepsPerRequestValues) {
  DiskCounters before = Counters(100, 800, 50, 40), after = Counters(110, 880, 70, 60);
  for (double s : {0.0, -1.0, std::nan("")}) {
    DiskRates r = ComputeDiskRates(before, after, s);
    EXPECT_EQ(r.reads_per_second, 0);
    EXPECT_EQ(r.util_percent, 0);
    EXPECT_DOUBLE_EQ(r.read_await_ms, 2.0);
    EXPECT_DOUBLE_EQ(r.read_request_kib, 4.0);
  }
}

TEST(DiskRates, UtilIsCappedAt100) {
  // 1200 ms busy in a 1 s interval: the two reads were not simultaneous.
  DiskRates r = ComputeDiskRates(Counters(0, 0, 0, 0), Counters(10, 80, 10, 1200), 1.0);
  EXPECT_EQ(r.util_percent, 100);
}

TEST(DiskRates, DeviceReaddedIsComparedAgainstZero) {
  // Big counters before, small after: the device went away and came back.
  DiskRates r =
      ComputeDiskRates(Counters(1000000, 8000000, 90000, 80000), Counters(20, 160, 30, 25), 2.0);
  EXPECT_DOUBLE_EQ(r.reads_per_second, 10);
  EXPECT_DOUBLE_EQ(r.read_kib_per_second, 40);
  EXPECT_DOUBLE_EQ(r.read_await_ms, 1.5);
  EXPECT_DOUBLE_EQ(r.util_percent, 1.25);
}

TEST(DiskRates, A64BitCounterThatFellCountsZero) {
  // Requests grew but sectors fell: not a re-added device; the fallen
  // counter adds nothing, as in iostat.
  DiskRates r = ComputeDiskRates(Counters(100, 5000, 10, 10), Counters(110, 4000, 20, 20), 1.0);
  EXPECT_DOUBLE_EQ(r.reads_per_second, 10);
  EXPECT_EQ(r.read_kib_per_second, 0);
  EXPECT_EQ(r.read_request_kib, 0);
}

TEST(DiskRates, ComputeAllSkipsDevicesWithoutBaseline) {
  DiskstatsSample before, after;
  before.devices = {Counters(1, 8, 1, 1)};
  before.devices[0].name = "sda";
  after.devices = {Counters(5, 40, 3, 4), Counters(7, 56, 2, 2)};
  after.devices[0].name = "sdb";  // new
  after.devices[1].name = "sda";
  std::vector<DiskRates> rates = ComputeAllDiskRates(before, after, 1.0);
  ASSERT_EQ(rates.size(), 1u);
  EXPECT_EQ(rates[0].name, "sda");
  EXPECT_DOUBLE_EQ(rates[0].reads_per_second, 6);
}

}  // namespace
}  // namespace stallscope
