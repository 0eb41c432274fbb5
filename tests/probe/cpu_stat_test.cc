#include "probe/cpu_stat.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "core/file.h"

namespace stallscope {
namespace {

TEST(CpuStatTest, ParsesLiveCapture) {
  Result<CpuStat> stat = ReadCpuStat(Root(STALLSCOPE_FIXTURES "/live_debian12"));
  ASSERT_TRUE(stat.ok()) << stat.status().ToString();
  // tests/fixtures/live_debian12/proc/stat: "cpu  10533 0 10286 56100 387 0 152 0 0 0".
  EXPECT_EQ(stat->total.cpu, -1);
  EXPECT_EQ(stat->total.user_ticks, 10533u);
  EXPECT_EQ(stat->total.system_ticks, 10286u);
  EXPECT_EQ(stat->total.idle_ticks, 56100u);
  EXPECT_EQ(stat->total.iowait_ticks, 387u);
  EXPECT_EQ(stat->total.softirq_ticks, 152u);
  ASSERT_EQ(stat->per_cpu.size(), 2u);
  EXPECT_EQ(stat->per_cpu[0].cpu, 0);
  EXPECT_EQ(stat->per_cpu[0].user_ticks, 4041u);
  EXPECT_EQ(stat->per_cpu[1].cpu, 1);
  EXPECT_EQ(stat->per_cpu[1].iowait_ticks, 374u);
  EXPECT_EQ(stat->context_switches, 287885u);
  EXPECT_EQ(stat->processes_created, 7109u);
  EXPECT_EQ(stat->procs_running, 3u);
  EXPECT_EQ(stat->procs_blocked, 0u);
  EXPECT_EQ(stat->boot_time_s, 1795956092u);
}

TEST(CpuStatTest, OlderKernelsWithFewerColumnsAndOfflineCpus) {
  // 2.6.18 prints 8 columns (no guest), and CPU 1 is offline: no line.
  Result<CpuStat> stat = ParseCpuStat(
      "cpu  100 1 50 800 9 2 3 4\n"
      "cpu0 60 1 30 400 5 1 2 2\n"
      "cpu2 40 0 20 400 4 1 1 2\n"
      "intr 12345 1 2 3\n"
      "ctxt 777\n",
      "stat");
  ASSERT_TRUE(stat.ok()) << stat.status().ToString();
  EXPECT_EQ(stat->total.steal_ticks, 4u);
  EXPECT_EQ(stat->total.guest_ticks, 0u);
  ASSERT_EQ(stat->per_cpu.size(), 2u);
  EXPECT_EQ(stat->per_cpu[1].cpu, 2);
  EXPECT_EQ(stat->context_switches, 777u);
  // 2.4 had only user nice system idle.
  Result<CpuStat> ancient = ParseCpuStat("cpu 1 2 3 4\n", "stat");
  ASSERT_TRUE(ancient.ok());
  EXPECT_EQ(ancient->total.idle_ticks, 4u);
  EXPECT_EQ(ancient->total.total_ticks(), 10u);
}

TEST(CpuStatTest, MalformedInputNamesFileAndLine) {
  struct BadInput {
    const char* text;
    const char* message;
  } cases[] = {
      {"cpu 1 2 3\n", "/proc/stat:1: cpu: expected at least 4 time columns"},
      {"cpu 1 2 3 4\ncpu0 1 2 x 4\n", "/proc/stat:2: cpu0: column 3 is not a number"},
      {"cpu 1 2 3 4\ncpuX 1 2 3 4\n", "/proc/stat:2: bad CPU name 'cpuX'"},
      {"cpu 1 2 3 4\nctxt\n", "/proc/stat:2: ctxt: expected one unsigned number"},
      {"cpu 1 2 3 4\nprocs_running -1\n",
       "/proc/stat:2: procs_running: expected one unsigned number"},
      {"cpu0 1 2 3 4\n", "/proc/stat: no 'cpu' line"},
      {"", "/proc/stat: no 'cpu' line"},
      {"cpu 1 2", "/proc/stat:1: cpu: expected at least 4 time columns"},  // truncated
  };
  for (const BadInput& bad : cases) {
    Result<CpuStat> stat = ParseCpuStat(bad.text, "/proc/stat");
    ASSERT_FALSE(stat.ok()) << bad.text;
    EXPECT_EQ(stat.status().code(), Status::Code::kParseError);
    EXPECT_EQ(stat.status().message(), bad.message);
  }
}

CpuTimes Times(int cpu, uint64_t user, uint64_t system, uint64_t idle, uint64_t iowait,
               uint64_t steal = 0, uint64_t guest = 0) {
  CpuTimes t;
  t.cpu = cpu;
  t.user_ticks = user;
  t.system_ticks = system;
  t.idle_ticks = idle;
  t.iowait_ticks = iowait;
  t.steal_ticks = steal;
  t.guest_ticks = guest;
  return t;
}

TEST(CpuUsageTest, PercentagesLikeMpstat) {
  CpuStat before;
  before.total = Times(-1, 1000, 500, 8000, 100, 0, 0);
  CpuStat after;
  // Over the interval: user 300 (of which guest 100), system 100, idle 500,
  // iowait 50, steal 50: 1000 ticks. guest is not added to the total again.
  after.total = Times(-1, 1300, 600, 8500, 150, 50, 100);
  CpuUsage usage = ComputeCpuUsage(before, after);
  EXPECT_EQ(usage.total.interval_ticks, 1000u);
  EXPECT_DOUBLE_EQ(usage.total.user_percent, 20.0);
  EXPECT_DOUBLE_EQ(usage.total.guest_percent, 10.0);
  EXPECT_DOUBLE_EQ(usage.total.system_percent, 10.0);
  EXPECT_DOUBLE_EQ(usage.total.idle_percent, 50.0);
  EXPECT_DOUBLE_EQ(usage.total.iowait_percent, 5.0);
  EXPECT_DOUBLE_EQ(usage.total.steal_percent, 5.0);
  EXPECT_DOUBLE_EQ(usage.total.busy_percent(), 45.0);
  const CpuPercent& t = usage.total;
  double sum = t.user_percent + t.nice_percent + t.system_percent + t.iowait_percent +
               t.irq_percent + t.softirq_percent + t.steal_percent + t.guest_percent +
               t.guest_nice_percent + t.idle_percent;
  EXPECT_NEAR(sum, 100.0, 1e-9);
}

TEST(CpuUsageTest, PerCpuMatchedByIndexAcrossHotplug) {
  CpuStat before;
  before.per_cpu = {Times(0, 0, 0, 0, 0), Times(1, 0, 0, 0, 0), Times(3, 0, 0, 0, 0)};
  CpuStat after;
  // CPU 1 went offline, CPU 2 came online; CPU 3 moved in the list.
  after.per_cpu = {Times(0, 100, 0, 100, 0), Times(2, 10, 0, 0, 0), Times(3, 0, 0, 50, 50)};
  CpuUsage usage = ComputeCpuUsage(before, after);
  ASSERT_EQ(usage.per_cpu.size(), 2u);
  EXPECT_EQ(usage.per_cpu[0].cpu, 0);
  EXPECT_DOUBLE_EQ(usage.per_cpu[0].user_percent, 50.0);
  EXPECT_EQ(usage.per_cpu[1].cpu, 3);
  EXPECT_DOUBLE_EQ(usage.per_cpu[1].iowait_percent, 50.0);
}

TEST(CpuUsageTest, BackwardsAndIdleIntervalsStayInRange) {
  CpuStat before;
  before.total = Times(-1, 100, 100, 100, 500);
  CpuStat after;
  // iowait went backwards (NO_HZ accounting does this); guest ran ahead of user.
  after.total = Times(-1, 110, 100, 190, 400, 0, 20);
  CpuUsage usage = ComputeCpuUsage(before, after);
  EXPECT_EQ(usage.total.interval_ticks, 100u);
  EXPECT_DOUBLE_EQ(usage.total.iowait_percent, 0.0);
  EXPECT_DOUBLE_EQ(usage.total.user_percent, 0.0);
  EXPECT_DOUBLE_EQ(usage.total.guest_percent, 10.0);
  EXPECT_DOUBLE_EQ(usage.total.idle_percent, 90.0);

  CpuUsage none = ComputeCpuUsage(before, before);
  EXPECT_EQ(none.total.interval_ticks, 0u);
  EXPECT_DOUBLE_EQ(none.total.busy_percent(), 0.0);
}

TEST(CpuStatTest, ClockTicksComeFromSysconf) {
  EXPECT_EQ(ClockTicksPerSecond(), ::sysconf(_SC_CLK_TCK));
}

}  // namespace
}  // namespace stallscope
