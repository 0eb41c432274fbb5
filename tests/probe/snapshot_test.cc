// The snapshot on fixture hosts and on this machine, and the memory rules
// fed from it: the path `doctor` takes, minus the printing.
#include "probe/snapshot.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "analyze/host/memory_rules.h"
#include "core/file.h"
#include "finding_matchers.h"

namespace stallscope {
namespace {

const std::string kFixtures = STALLSCOPE_FIXTURES;
constexpr uint64_t kGiB = 1ull << 30;

Snapshot FixtureSnapshot(const std::string& host) {
  Result<Snapshot> s = TakeSnapshot(Root(kFixtures + "/" + host), SnapshotOptions{0.01});
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? *s : Snapshot{};
}

TEST(Snapshot, SwapHostShowsLowMemoryAndIdleSwap) {
  Snapshot s = FixtureSnapshot("swap_host");
  EXPECT_EQ(s.after.memory.total_bytes, 64 * kGiB);
  EXPECT_EQ(s.after.memory.swap_used_bytes(), 3 * kGiB);
  ASSERT_TRUE(s.after.pressure.has_value());

  MemoryObservation m = ObserveMemory(s);
  EXPECT_EQ(m.swap_in_pages, 0u);  // a fixture's counters do not move
  ASSERT_TRUE(m.memory_pressure_some_pct.has_value());
  EXPECT_DOUBLE_EQ(*m.memory_pressure_some_pct, 38.12);

  std::vector<Finding> findings = CheckMemory(m).findings;
  const Finding* low = Find(findings, "memory.available_low");
  ASSERT_NE(low, nullptr);
  EXPECT_EQ(low->severity, Severity::kWarning);  // 12%, no swap traffic
  ASSERT_TRUE(low->impact.has_value());
  EXPECT_DOUBLE_EQ(low->impact->wall_fraction, 0.3812);
  const Finding* swap = Find(findings, "memory.swap_active");
  ASSERT_NE(swap, nullptr);
  EXPECT_EQ(swap->severity, Severity::kInfo);
}

TEST(Snapshot, SwapTrafficBetweenTwoSamplesTurnsCritical) {
  Snapshot s = FixtureSnapshot("swap_host");
  // The same host a second later, having swapped 1000 pages out and 200 in.
  s.after = s.before;
  s.after.monotonic_seconds = s.before.monotonic_seconds + 2.0;
  s.after.vmstat.pswpout_pages += 1000;
  s.after.vmstat.pswpin_pages += 200;
  ComputeSnapshotRates(s);
  EXPECT_DOUBLE_EQ(s.interval_seconds, 2.0);
  EXPECT_DOUBLE_EQ(s.vm_rates.swap_out_bytes_per_s, 500.0 * s.page_size_bytes);

  std::vector<Finding> findings = CheckMemory(ObserveMemory(s)).findings;
  const Finding* swap = Find(findings, "memory.swap_active");
  ASSERT_NE(swap, nullptr);
  EXPECT_EQ(swap->severity, Severity::kCritical);  // 600 pages/s
  const Finding* low = Find(findings, "memory.available_low");
  ASSERT_NE(low, nullptr);
  EXPECT_EQ(low->severity, Severity::kCritical);  // low and swapping
}

TEST(Snapshot, ContainerLimitIsWhatTheJobCanUse) {
  Snapshot s = FixtureSnapshot("container_v2");
  EXPECT_TRUE(s.container.in_container);
  EXPECT_EQ(s.container.runtime, "docker");
  ASSERT_TRUE(s.cgroup.has_value());
  ASSERT_TRUE(s.cgroup->limit_bytes.has_value());
  EXPECT_EQ(*s.cgroup->limit_bytes, 4 * kGiB);

  std::vector<Finding> findings = CheckMemory(ObserveMemory(s)).findings;
  const Finding* low = Find(findings, "memory.available_low");
  ASSERT_NE(low, nullptr) << "host has 200 GiB free, the container's limit is nearly used";
  EXPECT_EQ(low->severity, Severity::kCritical);
  bool limited = false;
  for (const Evidence& e : low->evidence) {
    if (e.name == "cgroup_limited") limited = std::get<bool>(e.value);
  }
  EXPECT_TRUE(limited);
}

TEST(Snapshot, CapturedDebianHostIsHealthy) {
  Snapshot s = FixtureSnapshot("live_debian12");
  EXPECT_GT(s.after.memory.total_bytes, 0u);
  EXPECT_FALSE(s.interfaces.empty());
  EXPECT_FALSE(s.disk_rates.empty());
  EXPECT_TRUE(CheckMemory(ObserveMemory(s)).findings.empty());
}

TEST(Snapshot, MissingMeminfoIsAnErrorNamingTheFile) {
  Result<Snapshot> s = TakeSnapshot(Root(kFixtures + "/numa2_host"), SnapshotOptions{0.01});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("/proc/meminfo"), std::string::npos) << s.status().message();
}

TEST(Snapshot, OptionalProbesDegradeToNotes) {
  // swap_host has no /sys/class/net: the snapshot still stands, with a note.
  Snapshot s = FixtureSnapshot("swap_host");
  bool noted = std::any_of(s.notes.begin(), s.notes.end(), [](const std::string& n) {
    return n.find("network interfaces") != std::string::npos;
  });
  EXPECT_TRUE(noted);
}

TEST(Snapshot, BadIntervalIsRefused) {
  for (double interval : {0.0, -1.0, 1e9}) {
    Result<Snapshot> s = TakeSnapshot(Root("/"), SnapshotOptions{interval});
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.status().code(), Status::Code::kInvalidArgument);
    EXPECT_NE(s.status().message().find("--interval"), std::string::npos);
  }
}

TEST(Snapshot, LiveHostOverARealInterval) {
  Result<Snapshot> s = TakeSnapshot(Root("/"), SnapshotOptions{0.2});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_GE(s->interval_seconds, 0.2);
  EXPECT_LT(s->interval_seconds, 5.0);
  EXPECT_FALSE(s->hostname.empty());
  EXPECT_GT(s->processes.processes, 1);
  EXPECT_EQ(s->cpu_usage.per_cpu.size(), s->after.cpu.per_cpu.size());
  // Busy or idle, the shares of a CPU add up to 100%.
  const CpuPercent& c = s->cpu_usage.total;
  double sum = c.user_percent + c.nice_percent + c.system_percent + c.iowait_percent +
               c.irq_percent + c.softirq_percent + c.steal_percent + c.idle_percent;
  EXPECT_NEAR(sum, 100.0, 0.5);
}

}  // namespace
}  // namespace stallscope
