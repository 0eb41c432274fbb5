#include "analyze/host/memory_rules.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "finding_matchers.h"

namespace stallscope {
namespace {

constexpr uint64_t kGiB = 1ull << 30;

MemoryObservation Healthy() {
  MemoryObservation m;
  m.total_bytes = 64 * kGiB;
  m.available_bytes = 40 * kGiB;
  m.window_seconds = 1.0;
  return m;
}

TEST(MemoryRules, HealthyHostHasNoFindings) {
  EXPECT_TRUE(CheckMemory(Healthy()).findings.empty());
}

TEST(MemoryRules, AvailableJustAboveTwentyPercentIsQuiet) {
  MemoryObservation m = Healthy();
  m.available_bytes = m.total_bytes / 5 + 1;
  EXPECT_EQ(Find(CheckMemory(m).findings, "memory.available_low"), nullptr);
}

TEST(MemoryRules, AvailableBelowTwentyPercentWarns) {
  MemoryObservation m = Healthy();
  m.available_bytes = 10 * kGiB;  // 15.6%
  auto findings = CheckMemory(m).findings;
  const Finding* f = Find(findings, "memory.available_low");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kWarning);
  EXPECT_NEAR(EvidenceOf<double>(*f, "available_fraction"), 10.0 / 64, 1e-9);
  EXPECT_EQ(EvidenceOf<int64_t>(*f, "available_bytes"), int64_t(10 * kGiB));
  EXPECT_FALSE(f->next.empty());
}

TEST(MemoryRules, AvailableBelowTenPercentIsCritical) {
  MemoryObservation m = Healthy();
  m.available_bytes = 5 * kGiB;
  auto findings = CheckMemory(m).findings;
  const Finding* f = Find(findings, "memory.available_low");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kCritical);
}

TEST(MemoryRules, LowAvailableWhileSwappingIsCritical) {
  MemoryObservation m = Healthy();
  m.available_bytes = 10 * kGiB;
  m.swap_in_pages = 50;
  m.swap_total_bytes = 8 * kGiB;
  m.swap_used_bytes = 2 * kGiB;
  auto findings = CheckMemory(m).findings;
  const Finding* f = Find(findings, "memory.available_low");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kCritical);
  EXPECT_NE(f->summary.find("swapping"), std::string::npos);
}

TEST(MemoryRules, CgroupLimitDecidesInsideAContainer) {
  // The host has plenty, the container's 4 GiB limit is nearly used.
  MemoryObservation m = Healthy();
  m.cgroup_limit_bytes = 4 * kGiB;
  m.cgroup_available_bytes = kGiB / 4;
  auto findings = CheckMemory(m).findings;
  const Finding* f = Find(findings, "memory.available_low");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kCritical);
  EXPECT_EQ(EvidenceOf<int64_t>(*f, "total_bytes"), int64_t(4 * kGiB));
  EXPECT_TRUE(EvidenceOf<bool>(*f, "cgroup_limited"));
}

TEST(MemoryRules, SwapTrafficWarnsThenTurnsCritical) {
  MemoryObservation m = Healthy();
  m.window_seconds = 2.0;
  m.swap_out_pages = 10;  // 5 pages/s
  auto findings = CheckMemory(m).findings;
  const Finding* f = Find(findings, "memory.swap_active");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kWarning);
  EXPECT_DOUBLE_EQ(EvidenceOf<double>(*f, "swap_out_pages_per_s"), 5.0);

  m.swap_out_pages = 600;  // 300 pages/s
  findings = CheckMemory(m).findings;
  f = Find(findings, "memory.swap_active");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kCritical);
}

TEST(MemoryRules, SwapHeldButIdleIsOnlyInfo) {
  MemoryObservation m = Healthy();
  m.swap_total_bytes = 8 * kGiB;
  m.swap_used_bytes = 3 * kGiB;
  auto findings = CheckMemory(m).findings;
  const Finding* f = Find(findings, "memory.swap_active");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kInfo);
  EXPECT_FALSE(f->impact.has_value());
}

TEST(MemoryRules, PressureBecomesTheImpact) {
  MemoryObservation m = Healthy();
  m.swap_in_pages = 1000;
  m.memory_pressure_some_pct = 12.5;
  auto findings = CheckMemory(m).findings;
  const Finding* f = Find(findings, "memory.swap_active");
  ASSERT_NE(f, nullptr);
  ASSERT_TRUE(f->impact.has_value());
  EXPECT_DOUBLE_EQ(f->impact->wall_fraction, 0.125);
}

TEST(MemoryRules, PinnedUsesTheLargerOfMlockedAndProcessSums) {
  MemoryObservation m = Healthy();
  m.mlocked_bytes = 1 * kGiB;
  m.process_pinned_bytes = 20 * kGiB;  // 31%
  m.top_pinned_process = "python3 (pid 42)";
  m.top_pinned_bytes = 18 * kGiB;
  auto findings = CheckMemory(m).findings;
  const Finding* f = Find(findings, "memory.pinned_excess");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kWarning);
  EXPECT_EQ(EvidenceOf<int64_t>(*f, "pinned_bytes"), int64_t(20 * kGiB));
  EXPECT_NE(f->summary.find("python3 (pid 42)"), std::string::npos);

  m.mlocked_bytes = 40 * kGiB;
  findings = CheckMemory(m).findings;
  f = Find(findings, "memory.pinned_excess");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kCritical);
}

TEST(MemoryRules, ZeroTotalNeverDividesByZero) {
  MemoryObservation m;
  EXPECT_TRUE(CheckMemory(m).findings.empty());
}

}  // namespace
}  // namespace stallscope
