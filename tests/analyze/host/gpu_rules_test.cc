// The GPU rules on synthetic GPU states and run timelines: each fires on
// its threshold with its evidence, stays quiet below it, and says so when
// it cannot judge (no GPM).
#include "analyze/host/gpu_rules.h"

#include <gtest/gtest.h>

#include "analyze/catalog.h"
#include "finding_matchers.h"

namespace stallscope {
namespace {

GpuState Busy(double util, std::optional<double> sm_active) {
  GpuState g;
  g.index = 0;
  g.name = "NVIDIA H100 80GB HBM3";
  g.uuid = "GPU-1";
  g.memory_total_bytes = 80ull << 30;
  g.memory_used_bytes = 10ull << 30;
  g.utilization_gpu_percent = util;
  g.sm_clock_mhz = 1980;
  g.sm_clock_max_mhz = 1980;
  g.throttle_reasons = 0;
  if (sm_active) {
    GpmMetrics m;
    m.sm_active_percent = sm_active;
    m.sm_occupancy_percent = 12.0;
    g.gpm = m;
  } else {
    g.gpm_note = "GPM not supported on this GPU (Hopper or newer has it)";
  }
  return g;
}

std::vector<Finding> Check(const GpuState& g, std::vector<std::string>* notes = nullptr) {
  FindingsWithNotes judged = CheckGpus({JudgeMoment(g)}, {});
  if (notes) notes->insert(notes->end(), judged.notes.begin(), judged.notes.end());
  return judged.findings;
}

TEST(GpuRules, UtilMisleadingFiresWhenUtilizationHighAndSmActivityLow) {
  std::vector<Finding> f = Check(Busy(97, 31));
  const Finding* u = Find(f, "code.util_misleading");
  ASSERT_NE(u, nullptr);
  EXPECT_EQ(u->layer, Layer::kCode);
  EXPECT_EQ(u->severity, Severity::kWarning);
  EXPECT_DOUBLE_EQ(EvidenceDouble(*u, "utilization_gpu_percent"), 97);
  EXPECT_DOUBLE_EQ(EvidenceDouble(*u, "gpm_sm_active_percent"), 31);
  EXPECT_DOUBLE_EQ(EvidenceDouble(*u, "gpm_sm_occupancy_percent"), 12);
  ASSERT_TRUE(u->impact.has_value());
  EXPECT_NEAR(u->impact->wall_fraction, 1 - 31.0 / 97, 1e-9);
  EXPECT_NE(u->next.find("nsys"), std::string::npos);
  EXPECT_EQ(Find(Check(Busy(97, 20)), "code.util_misleading")->severity, Severity::kCritical);
}

TEST(GpuRules, UtilMisleadingQuietAtItsThresholds) {
  EXPECT_EQ(Find(Check(Busy(97, 50)), "code.util_misleading"), nullptr);  // SMs half busy
  EXPECT_EQ(Find(Check(Busy(79, 10)), "code.util_misleading"), nullptr);  // not "busy"
  EXPECT_NE(Find(Check(Busy(80, 49.9)), "code.util_misleading"), nullptr);
}

TEST(GpuRules, UtilMisleadingWithoutGpmSaysSoAndDoesNotFire) {
  std::vector<std::string> notes;
  std::vector<Finding> f = Check(Busy(95, std::nullopt), &notes);
  EXPECT_EQ(Find(f, "code.util_misleading"), nullptr);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("not judged"), std::string::npos);
  EXPECT_NE(notes[0].find("GPM not supported"), std::string::npos);
  // An idle GPU without GPM is no news: no note.
  notes.clear();
  (void)Check(Busy(5, std::nullopt), &notes);
  EXPECT_TRUE(notes.empty());
}

TEST(GpuRules, GpuNearFullNamesTheHolders) {
  GpuState g = Busy(50, 90);
  g.memory_used_bytes = static_cast<uint64_t>(0.96 * static_cast<double>(g.memory_total_bytes));
  g.processes = {{111, 10ull << 30}, {222, 60ull << 30}};
  std::vector<Finding> f = CheckGpus({JudgeMoment(g)}, {{222, "python3"}}).findings;
  const Finding* n = Find(f, "memory.gpu_near_full");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->layer, Layer::kMemory);
  EXPECT_EQ(n->severity, Severity::kWarning);
  EXPECT_NEAR(EvidenceDouble(*n, "memory_used_fraction"), 0.96, 1e-6);
  // The biggest holder first, by name.
  EXPECT_NE(n->summary.find("python3 (pid 222) 60.0 GiB"), std::string::npos) << n->summary;
  EXPECT_LT(n->summary.find("pid 222"), n->summary.find("pid 111"));
  g.memory_used_bytes = g.memory_total_bytes;
  EXPECT_EQ(Find(Check(g), "memory.gpu_near_full")->severity, Severity::kCritical);
  g.memory_used_bytes = static_cast<uint64_t>(0.94 * static_cast<double>(g.memory_total_bytes));
  EXPECT_EQ(Find(Check(g), "memory.gpu_near_full"), nullptr);
}

TEST(GpuRules, ThrottledByPowerCapWithClocks) {
  GpuState g = Busy(99, 90);
  g.throttle_reasons = 0x4;  // sw_power_cap
  g.sm_clock_mhz = 1600;
  g.power_w = 699;
  g.power_limit_w = 700;
  const std::vector<Finding> findings = Check(g);  // t points into it
  const Finding* t = Find(findings, "code.gpu_throttled");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->severity, Severity::kWarning);
  EXPECT_DOUBLE_EQ(EvidenceDouble(*t, "sm_clock_mhz"), 1600);
  EXPECT_DOUBLE_EQ(EvidenceDouble(*t, "sm_clock_max_mhz"), 1980);
  EXPECT_NE(t->summary.find("sw_power_cap"), std::string::npos);
  ASSERT_TRUE(t->impact.has_value());
  EXPECT_NEAR(t->impact->wall_fraction, 1 - 1600.0 / 1980, 1e-9);
  EXPECT_NE(t->next.find("nvidia-smi -q -d PERFORMANCE"), std::string::npos);
  // Hardware slowdown is critical whatever the clock.
  g.throttle_reasons = 0x8;
  EXPECT_EQ(Find(Check(g), "code.gpu_throttled")->severity, Severity::kCritical);
  // Idle (GpuIdle bit) or only an application clock setting: nothing.
  g.throttle_reasons = 0x1 | 0x4;
  EXPECT_EQ(Find(Check(g), "code.gpu_throttled"), nullptr);
  g.throttle_reasons = 0x2;
  EXPECT_EQ(Find(Check(g), "code.gpu_throttled"), nullptr);
}

Timeline RunWith(int samples, int throttled, double util, std::optional<double> sm) {
  Timeline t;
  for (int i = 0; i < samples; ++i) {
    GpuState g = Busy(util, sm);
    if (i < throttled) {
      g.throttle_reasons = 0x40;  // hw thermal
      g.sm_clock_mhz = 1200;
    }
    t.gpus.push_back({static_cast<double>(i), g});
  }
  return t;
}

TEST(GpuRules, RunThrottledOnlyWhenItIsTheCondition) {
  Timeline brief = RunWith(10, 1, 90, 80);  // 10%: a burst
  EXPECT_EQ(Find(CheckRunGpus(brief).findings, "code.gpu_throttled"), nullptr);
  Timeline sustained = RunWith(10, 3, 90, 80);
  const std::vector<Finding> findings = CheckRunGpus(sustained).findings;
  const Finding* t = Find(findings, "code.gpu_throttled");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->severity, Severity::kCritical);
  EXPECT_NEAR(EvidenceDouble(*t, "throttled_sample_fraction"), 0.3, 1e-9);
  EXPECT_DOUBLE_EQ(EvidenceDouble(*t, "sm_clock_mhz"), 1200);
}

TEST(GpuRules, RunUtilMisleadingOnTheMeans) {
  Timeline t = RunWith(6, 0, 96, 30);
  const std::vector<Finding> findings = CheckRunGpus(t).findings;
  const Finding* u = Find(findings, "code.util_misleading");
  ASSERT_NE(u, nullptr);
  EXPECT_DOUBLE_EQ(EvidenceDouble(*u, "gpm_sm_active_percent"), 30);
  std::vector<GpuJudged> judged = SummarizeRunGpus(t.gpus);
  ASSERT_EQ(judged.size(), 1u);
  EXPECT_EQ(judged[0].samples, 6);
  EXPECT_EQ(judged[0].gpm_samples, 6);
}

TEST(GpuRules, RunLostGpuIsANoteNamingIt) {
  Timeline t = RunWith(3, 0, 50, 50);
  GpuState lost = Busy(0, std::nullopt);
  lost.lost = true;
  lost.lost_reason = "nvmlDeviceGetMemoryInfo: NVML_ERROR_GPU_IS_LOST (GPU is lost)";
  t.gpus.push_back({3, lost});
  std::vector<std::string> notes = CheckRunGpus(t).notes;
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("GPU 0 (NVIDIA H100 80GB HBM3, GPU-1) was lost"), std::string::npos)
      << notes[0];
  EXPECT_NE(notes[0].find("NVML_ERROR_GPU_IS_LOST"), std::string::npos);
}

TEST(GpuRules, EveryIdIsInTheCatalog) {
  for (const char* id : {"code.util_misleading", "memory.gpu_near_full", "code.gpu_throttled"}) {
    const Rule* r = FindRule(id);
    ASSERT_NE(r, nullptr) << id;
    EXPECT_FALSE(r->threshold.empty());
    EXPECT_FALSE(r->reasoning.empty());
  }
  EXPECT_EQ(FindRule("code.gpu_throttled")->layer, Layer::kCode);
  EXPECT_EQ(FindRule("memory.gpu_near_full")->layer, Layer::kMemory);
}

}  // namespace
}  // namespace stallscope
