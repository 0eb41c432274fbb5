#include "probe/vmstat.h"

#include <gtest/gtest.h>

#include "core/file.h"

namespace stallscope {
namespace {

TEST(VmStatTest, ParsesLiveCapture) {
  Result<VmStat> stat = ReadVmStat(Root(STALLSCOPE_FIXTURES "/live_debian12"));
  ASSERT_TRUE(stat.ok()) << stat.status().ToString();
  // The numbers in tests/fixtures/live_debian12/proc/vmstat (a 6.x kernel).
  EXPECT_EQ(stat->pgpgin_kib, 1408125u);
  EXPECT_EQ(stat->pgpgout_kib, 267120u);
  EXPECT_EQ(stat->pswpin_pages, 0u);
  EXPECT_EQ(stat->pswpout_pages, 0u);
  EXPECT_EQ(stat->pgfault, 6415009u);
  EXPECT_EQ(stat->pgmajfault, 1137u);
  ASSERT_TRUE(stat->oom_kill.has_value());
  EXPECT_EQ(*stat->oom_kill, 0u);
  EXPECT_EQ(stat->workingset_refault, 65950u);  // anon 0 + file 65950
  EXPECT_EQ(stat->nr_dirty_pages, 1206u);
  EXPECT_EQ(stat->allocstall, 0u);
}

TEST(VmStatTest, SwapHostHasHeavySwapTraffic) {
  Result<VmStat> stat = ReadVmStat(Root(STALLSCOPE_FIXTURES "/swap_host"));
  ASSERT_TRUE(stat.ok()) << stat.status().ToString();
  EXPECT_EQ(stat->pswpin_pages, 1843200u);
  EXPECT_EQ(stat->pswpout_pages, 3145728u);
  EXPECT_EQ(stat->pgmajfault, 982311u);
  EXPECT_EQ(stat->oom_kill, 2u);
}

TEST(VmStatTest, OldKernelPerZoneCountersAreSummedAndOomKillAbsent) {
  // A 4.4 kernel: reclaim counters per zone, no oom_kill, one refault counter.
  Result<VmStat> stat = ParseVmStat(
      "pgpgin 10\npgpgout 20\npswpin 3\npswpout 4\npgmajfault 5\n"
      "pgscan_kswapd_dma32 100\npgscan_kswapd_normal 200\n"
      "pgscan_direct_dma32 7\npgscan_direct_normal 8\npgscan_direct_throttle 99\n"
      "pgsteal_direct_normal 6\nallocstall 11\nworkingset_refault 42\n",
      "vmstat");
  ASSERT_TRUE(stat.ok()) << stat.status().ToString();
  EXPECT_FALSE(stat->oom_kill.has_value());
  EXPECT_EQ(stat->pgscan_kswapd_pages, 300u);
  EXPECT_EQ(stat->pgscan_direct_pages, 15u);  // throttle events are not pages
  EXPECT_EQ(stat->pgsteal_direct_pages, 6u);
  EXPECT_EQ(stat->allocstall, 11u);
  EXPECT_EQ(stat->workingset_refault, 42u);
}

TEST(VmStatTest, MalformedInputNamesFileAndLine) {
  struct BadInput {
    const char* text;
    const char* message;
  } cases[] = {
      {"pgpgin 1\npswpin\n", "/proc/vmstat:2: expected 'name value'"},
      {"pgpgin 1\npswpin 1 2\n", "/proc/vmstat:2: expected 'name value'"},
      {"pgpgin 1\npswpin x\n", "/proc/vmstat:2: pswpin: not a number"},
      {"pgpgin -1\n", "/proc/vmstat:1: pgpgin: not a number"},
      {"pgpgin 99999999999999999999\n", "/proc/vmstat:1: pgpgin: not a number"},
      {"", "/proc/vmstat: no counters"},
  };
  for (const BadInput& bad : cases) {
    Result<VmStat> stat = ParseVmStat(bad.text, "/proc/vmstat");
    ASSERT_FALSE(stat.ok()) << bad.text;
    EXPECT_EQ(stat.status().code(), Status::Code::kParseError);
    EXPECT_EQ(stat.status().message(), bad.message);
  }
}

TEST(VmStatRatesTest, PerSecondInBytes) {
  VmStat before;
  before.pswpin_pages = 1000;
  before.pswpout_pages = 2000;
  before.pgpgin_kib = 0;
  before.pgmajfault = 10;
  before.oom_kill = 1;
  VmStat after = before;
  after.pswpin_pages += 512;  // 2 MiB of 4 KiB pages in 2 s
  after.pswpout_pages += 1024;
  after.pgpgin_kib += 2048;
  after.pgmajfault += 100;
  after.oom_kill = 2;
  Result<VmStatRates> rates = ComputeVmStatRates(before, after, 2.0, 4096);
  ASSERT_TRUE(rates.ok()) << rates.status().ToString();
  EXPECT_DOUBLE_EQ(rates->swap_in_bytes_per_s, 1024.0 * 1024);
  EXPECT_DOUBLE_EQ(rates->swap_out_bytes_per_s, 2048.0 * 1024);
  EXPECT_DOUBLE_EQ(rates->page_in_bytes_per_s, 1024.0 * 1024);
  EXPECT_DOUBLE_EQ(rates->major_faults_per_s, 50.0);
  EXPECT_EQ(rates->oom_kills, 1u);
}

TEST(VmStatRatesTest, BackwardsCounterCountsAsZeroAndBadIntervalIsRejected) {
  VmStat before;
  before.pswpin_pages = 5000;
  VmStat after;  // rebooted: counters restarted
  after.pswpin_pages = 10;
  Result<VmStatRates> rates = ComputeVmStatRates(before, after, 1.0, 4096);
  ASSERT_TRUE(rates.ok());
  EXPECT_EQ(rates->swap_in_bytes_per_s, 0.0);
  EXPECT_FALSE(rates->oom_kills.has_value());
  EXPECT_FALSE(ComputeVmStatRates(before, after, 0.0, 4096).ok());
  EXPECT_FALSE(ComputeVmStatRates(before, after, -1.0, 4096).ok());
  EXPECT_FALSE(ComputeVmStatRates(before, after, 1.0, 0).ok());
}

}  // namespace
}  // namespace stallscope
