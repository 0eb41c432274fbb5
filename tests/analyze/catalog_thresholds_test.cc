// Ties the rule catalog's thresholds in words (analyze/catalog.cc) to the
// named constants the rules use: for every number a catalog text states that
// a constant holds, the text must contain that constant as the text writes it
// ("20%", "256 pages/s", "64 MiB", "24 h", "0.7x"). The expected texts are
// computed from the constants, so a constant that changes without its
// catalog entry fails here, naming the rule.
//
// The threshold field is searched; a number that only the checks or reasoning
// text states is searched there. Rules with no such number are listed at the
// end of the file.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "analyze/catalog.h"
#include "analyze/fleet/allreduce_rules.h"
#include "analyze/fleet/cluster_rules.h"
#include "analyze/host/baseline.h"
#include "analyze/host/dataset_rules.h"
#include "analyze/host/gpu_health_rules.h"
#include "analyze/host/gpu_rules.h"
#include "analyze/host/memory_rules.h"
#include "analyze/host/network_rules.h"
#include "analyze/host/storage_rules.h"
#include "analyze/run/ab_rules.h"
#include "analyze/run/loader_rules.h"
#include "analyze/run/node_rules.h"
#include "analyze/run/rank_rules.h"
#include "analyze/run/rules.h"
#include "analyze/run/scaling.h"
#include "analyze/trace/breakdown.h"
#include "analyze/trace/rules.h"
#include "bench/io_plan.h"
#include "data/census.h"

namespace stallscope {
namespace {

// --- Rendering a constant the way the catalog writes it. ---

// Shortest plain form: 256.0 -> "256", 0.7 -> "0.7", 5000 -> "5000".
std::string Number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", value);
  return buffer;
}

// A fraction as a percentage: 0.20 -> "20%", 0.001 -> "0.1%".
std::string Percent(double fraction) { return Number(fraction * 100) + "%"; }

// A percentage already in percent: 80.0 -> "80%".
std::string PercentOf(double percent) { return Number(percent) + "%"; }

// A ratio: 0.7 -> "0.7x", 1.5 -> "1.5x".
std::string Times(double ratio) { return Number(ratio) + "x"; }

// A count with thousands separators: 10000 -> "10,000".
std::string Grouped(uint64_t count) {
  std::string digits = std::to_string(count);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// Bytes in binary units: 64ull << 20 -> "64 MiB", 4096 -> "4 KiB".
std::string MiB(double bytes) { return Number(bytes / (1024.0 * 1024.0)) + " MiB"; }
std::string KiB(double bytes) { return Number(bytes / 1024.0) + " KiB"; }

// Bytes per second in decimal megabytes: 500e6 -> "500 MB/s".
std::string MBps(double bytes_per_second) { return Number(bytes_per_second / 1e6) + " MB/s"; }

// Durations: 24 * 3600.0 s -> "24 h", 20.0 ms -> "20 ms", 30.0 s -> "30 s".
std::string Hours(double seconds) { return Number(seconds / 3600) + " h"; }
std::string Seconds(double seconds) { return Number(seconds) + " s"; }
std::string Millis(double ms) { return Number(ms) + " ms"; }

// A share as "n of d" with the smallest denominator: 2.0 / 3 -> "2 of 3".
std::string OneOf(double share) {
  for (int d = 1; d <= 12; ++d) {
    const double n = std::round(share * d);
    if (std::fabs(n / d - share) < 1e-9) {
      return std::to_string(static_cast<int>(n)) + " of " + std::to_string(d);
    }
  }
  return "(no n of d for " + Number(share) + ")";
}

// A simple fraction in words: 0.5 -> "half", 1.0 / 3 -> "third".
std::string FractionWord(double fraction) {
  if (std::fabs(fraction - 0.5) < 1e-9) return "half";
  if (std::fabs(fraction - 1.0 / 3) < 1e-9) return "third";
  if (std::fabs(fraction - 0.25) < 1e-9) return "quarter";
  return "(no word for " + Number(fraction) + ")";
}

// {2, 4, 8} -> "2, 4, 8".
std::string Joined(std::span<const int> values) {
  std::string out;
  for (int v : values) {
    if (!out.empty()) out += ", ";
    out += std::to_string(v);
  }
  return out;
}

std::string Int(int64_t value) { return std::to_string(value); }

// --- The ties. ---

enum class Field { kThreshold, kChecks, kReasoning };

std::string_view FieldName(Field field) {
  switch (field) {
    case Field::kThreshold:
      return "threshold";
    case Field::kChecks:
      return "checks";
    case Field::kReasoning:
      return "reasoning";
  }
  return "?";
}

std::string_view FieldOf(const Rule& rule, Field field) {
  switch (field) {
    case Field::kThreshold:
      return rule.threshold;
    case Field::kChecks:
      return rule.checks;
    case Field::kReasoning:
      return rule.reasoning;
  }
  return {};
}

struct Tie {
  std::string_view id;
  std::string text;  // what the field must contain, computed from a constant
  Field field = Field::kThreshold;
};

std::vector<Tie> Ties() {
  const CensusOptions census_defaults;
  // memory.swap_active's "(1 MiB/s with 4 KiB pages)": the text's page size.
  constexpr double kTextPageBytes = 4096;
  return {
      // memory.available_low
      {"memory.available_low", "warning below " + Percent(kAvailableLowWarningFraction)},
      {"memory.available_low", "critical below " + Percent(kAvailableLowCriticalFraction)},
      {"memory.available_low",
       "or below " + Percent(kAvailableLowWarningFraction) + " while swap is active"},

      // memory.swap_active
      {"memory.swap_active", "warning at >= " + Number(kSwapWarningPagesPerSecond) + " page/s"},
      {"memory.swap_active", "critical at >= " + Number(kSwapCriticalPagesPerSecond) + " pages/s"},
      {"memory.swap_active", "(" + MiB(kSwapCriticalPagesPerSecond * kTextPageBytes) + "/s with " +
                                 KiB(kTextPageBytes) + " pages)"},

      // memory.pinned_excess
      {"memory.pinned_excess", "warning above " + Percent(kPinnedWarningFraction) + " of MemTotal"},
      {"memory.pinned_excess", "critical above " + Percent(kPinnedCriticalFraction)},

      // memory.rss_growth
      {"memory.rss_growth", "after the first " + FractionWord(kLeakWarmupFraction) + " of the",
       Field::kChecks},
      {"memory.rss_growth",
       "below " + Percent(kLeakTeardownFraction) + " of the median of the " +
           Int(static_cast<int64_t>(kLeakTeardownWindow)) + " before",
       Field::kChecks},
      {"memory.rss_growth", "at >= " + Times(kLeakSteadyRatio) + " the middle third's pace"},
      {"memory.rss_growth", "exceeds " + Number(kLeakNoiseSigmas) + " sigma of the noise"},
      {"memory.rss_growth", "exceeds " + Percent(kLeakMinGrowthFraction) + " of the RSS"},
      {"memory.rss_growth", "started from and " + MiB(static_cast<double>(kLeakMinGrowthBytes))},
      {"memory.rss_growth", "runs out within " + Hours(kLeakOomHorizonSeconds) + " at this slope"},
      {"memory.rss_growth", "runs out within " + Hours(kLeakCriticalOomSeconds) + ", else warning"},

      // io.device_saturated
      {"io.device_saturated", "%util >= " + Number(kDiskSaturatedUtilPercent)},
      {"io.device_saturated", "await >= " + Millis(kDiskSaturatedAwaitMs)},
      {"io.device_saturated",
       "critical when >= " + Percent(kDiskSaturatedCriticalFraction) + " of the intervals"},
      {"io.device_saturated", "(at least " + Int(kDiskSaturatedMinIntervals) + ")"},
      {"io.device_saturated", "warning when " + Int(kDiskSaturatedMinIntervals) + " in a row"},
      {"io.device_saturated",
       "do not wait for data (< " + Percent(kInputBoundWarningFraction) + " of step time)"},

      // io.cpu_bound_loader
      {"io.cpu_bound_loader", "use >= " + Percent(kLoaderCpuSaturatedFraction) +
                                  " of those CPUs in >= " + Percent(kCpuSaturatedRunFraction) +
                                  " of the intervals"},
      {"io.cpu_bound_loader", "is >= " + PercentOf(kHostCpuSaturatedPercent) +
                                  " busy in >= " + Percent(kCpuSaturatedRunFraction) + " of them"},
      {"io.cpu_bound_loader", "wait >= " + Percent(kInputBoundWarningFraction) + " for data"},
      {"io.cpu_bound_loader", "waiting for one >= " + PercentOf(kWorkerBusyPercent) +
                                  " of the time, >= " + PercentOf(kWorkerOwnCpuPercent) +
                                  " on it, while the data disk was < " +
                                  PercentOf(kDataDiskIdlePercent) + " busy"},
      {"io.cpu_bound_loader",
       "critical when the steps wait >= " + Percent(kInputBoundCriticalFraction) +
           " (io.input_bound's critical level)"},

      // io.loader_config
      {"io.loader_config",
       "num_workers_zero: critical when steps wait >= " + Percent(kInputBoundCriticalFraction)},
      {"io.loader_config", "epochs average < " + Seconds(kShortEpochSeconds)},
      {"io.loader_config",
       "restart wait is >= " + Percent(kWorkerRestartCostFraction) + " of an epoch"},
      {"io.loader_config", "num_workers x prefetch_factor > " + Int(kMaxPrefetchBatches)},
      {"io.loader_config", "prefetch_factor=" + Int(kSuggestedPrefetchFactor), Field::kReasoning},

      // io.input_bound
      {"io.input_bound", "warning at >= " + Percent(kInputBoundWarningFraction) + " of step time"},
      {"io.input_bound", "critical at >= " + Percent(kInputBoundCriticalFraction)},
      {"io.input_bound", "at least " + Int(kInputBoundMinSteps) + " steps"},
      {"io.input_bound", Percent(kCommRatioHigh) + " matches network.comm_ratio_high",
       Field::kReasoning},

      // io.small_files
      {"io.small_files", "files under " + MiB(static_cast<double>(kSmallFileBytes)),
       Field::kChecks},
      {"io.small_files", ">= " + Grouped(kSmallFilesMinCount) + " small files that are >= " +
                             Percent(kSmallFilesMinShare) + " of the files"},
      {"io.small_files", "critical at >= " + Grouped(kSmallFilesCriticalCount)},
      {"io.small_files",
       "floor of " + Number(kFloorRandomIops) + " IOPS, " + Grouped(kSmallFilesMinCount) +
           " files cost >= " +
           Seconds(static_cast<double>(kSmallFilesMinCount) / kFloorRandomIops) + " per epoch",
       Field::kReasoning},
      {"io.small_files",
       Grouped(kSmallFilesCriticalCount) +
           " cost >= " + Seconds(static_cast<double>(kSmallFilesCriticalCount) / kFloorRandomIops),
       Field::kReasoning},

      // io.remote_fs
      {"io.remote_fs",
       "sample of up to " + Int(static_cast<int64_t>(census_defaults.latency_sample_files)) +
           " files",
       Field::kChecks},
      {"io.remote_fs",
       "warning at >= " + Int(static_cast<int64_t>(kRemoteWarningFiles)) + " files"},

      // io.cold_cache
      {"io.cold_cache",
       "sample of " + Grouped(census_defaults.residency_sample_files) + " when there are more",
       Field::kChecks},
      {"io.cold_cache",
       "(" + MBps(kFloorSequentialBytesPerSecond) + " sequential plus one " +
           Number(kFloorRandomIops) + "-IOPS read per small file)",
       Field::kChecks},
      {"io.cold_cache", "< " + Percent(kColdResidentFraction) + " of the bytes are cached"},
      {"io.cold_cache", "takes >= " + Seconds(kColdMinSecondsAtFloor) + " at the floor"},
      {"io.cold_cache", "fits in " + FractionWord(kCacheFitsMemoryFraction) + " the RAM"},
      {"io.cold_cache", "epoch 0 took >= " + Times(kColdCacheSlowdown) + " the median later"},
      {"io.cold_cache", "and >= " + Seconds(kColdCacheMinSeconds) + " more, read >= " +
                            MiB(kColdCacheMinReadBytes) + " from the data disk"},
      {"io.cold_cache", "read < " + Percent(kColdCacheLaterReadShare) + " of its rate"},
      {"io.cold_cache", "after epoch 0 wait < " + Percent(kInputBoundWarningFraction)},

      // io.cpu_contention
      {"io.cpu_contention", "take >= " + Percent(kCpuContentionShare) + " of the CPUs in >= " +
                                Percent(kCpuContentionRunFraction) + " of the intervals"},
      {"io.cpu_contention",
       "critical when the steps wait >= " + Percent(kInputBoundCriticalFraction) +
           " for data, warning at >= " + Percent(kInputBoundWarningFraction)},

      // io.storage_slow
      {"io.storage_slow", "sequential " + MiB(kSequentialBlockBytes) + " reads", Field::kChecks},
      {"io.storage_slow",
       Int(kDefaultJobs) + " jobs at queue depth " + Int(kDefaultIodepth) + " by default",
       Field::kChecks},
      {"io.storage_slow",
       "sequential reads are below " + MBps(kStorageSlowSequentialBytesPerSecond)},
      {"io.storage_slow", "random " + KiB(kRandomBlockBytes) + " reads below " +
                              Number(kStorageSlowRandomIops) + " IOPS"},

      // network.wrong_interface
      {"network.wrong_interface", "in " + std::string(kDockerBridgeRange) + " and the job spans"},

      // network.container_bridge
      {"network.container_bridge", "Docker's bridge range " + std::string(kDockerBridgeRange),
       Field::kChecks},

      // network.port_errors
      {"network.port_errors",
       "warning at >= " + Int(static_cast<int64_t>(kPortErrorsWarningCount)) + " error"},
      {"network.port_errors", ">= " + Int(static_cast<int64_t>(kPortDropsMinCount)) +
                                  " drops that are >= " + Percent(kPortDropsWarningFraction) +
                                  " of the packets"},
      {"network.port_errors", "errors >= " + Percent(kPortErrorsCriticalFraction)},
      {"network.port_errors",
       "drops >= " + Percent(kPortDropsCriticalFraction) + " of the packets"},

      // network.node_receive_slow
      {"network.node_receive_slow", "under " + Percent(kNodeReceiveShare) + " of the others'"},
      {"network.node_receive_slow", "at least " + MBps(kNodeReceiveFloorBytesPerSecond)},
      {"network.node_receive_slow", "at least " + Int(kNodeReceiveMinSamples) + " samples"},

      // distributed.straggler
      {"distributed.straggler", "first " + Int(kRankWarmupSteps) + " steps left out",
       Field::kChecks},
      {"distributed.straggler", "by more than " + Percent(kStragglerStepFraction) + " of the step"},
      {"distributed.straggler", "at least " + OneOf(kStragglerSustainedShare) +
                                    " compared steps (>= " + Int(kRankMinSteps) + ")"},
      {"distributed.straggler",
       "more than " + Percent(kStragglerStepFraction) + " of a step on average"},
      {"distributed.straggler", "critical at " + Percent(kStragglerCriticalFraction)},

      // distributed.load_imbalance
      {"distributed.load_imbalance",
       "compute spread exceeds " + Percent(kComputeImbalanceFraction) + " of a step"},
      {"distributed.load_imbalance",
       "data-wait spread exceeds " + Percent(kDataWaitImbalanceFraction)},
      {"distributed.load_imbalance", "at least " + OneOf(kStragglerSustainedShare) +
                                         " steps every rank reported (>= " + Int(kRankMinSteps) +
                                         ")"},
      {"distributed.load_imbalance",
       Percent(kInputBoundWarningFraction) + " matches io.input_bound's warning level",
       Field::kReasoning},

      // distributed.scaling_poor
      {"distributed.scaling_poor", "largest size is under " + Number(kScalingPoorEfficiency) +
                                       ", critical under " + Number(kScalingCriticalEfficiency)},
      {"distributed.scaling_poor", "doubling from " + Int(kDoublingFromProcs) +
                                       " or more ranks gains under " + Times(kDoublingMinGain)},

      // network.comm_ratio_high
      {"network.comm_ratio_high", "k = " + Joined(kAccumulationSteps), Field::kChecks},
      {"network.comm_ratio_high", "warning over " + Percent(kCommRatioHigh) + ", critical over " +
                                      Percent(kCommRatioCritical)},

      // memory.baseline_drift, io.baseline_drift, network.baseline_drift
      {"memory.baseline_drift", "--drift (default " + Percent(kDriftDefaultShare) + ")"},
      {"memory.baseline_drift", "critical at " + Percent(kDriftCriticalShare) + " or more below"},
      {"io.baseline_drift", "--drift (default " + Percent(kDriftDefaultShare) + ")"},
      {"io.baseline_drift", "critical at " + Percent(kDriftCriticalShare) + " or more below"},
      {"network.baseline_drift", "--drift (default " + Percent(kDriftDefaultShare) + ")"},
      {"network.baseline_drift", "critical at " + Percent(kDriftCriticalShare) + " or more below"},

      // io.loader_overhead, io.loader_needed, network.env_change, code.env_change
      {"io.loader_overhead", "first " + Percent(kAbWarmupShare) + " of steps left out",
       Field::kChecks},
      {"io.loader_overhead", ">= " + Percent(kAbMeaningfulChange) + " faster"},
      {"io.loader_needed", ">= " + Percent(kAbMeaningfulChange) + " slower"},
      {"network.env_change", ">= " + Percent(kAbMeaningfulChange) + " faster"},
      {"network.env_change", ">= " + Percent(kAbMeaningfulChange) + " slower"},
      {"code.env_change", ">= " + Percent(kAbMeaningfulChange) + " faster"},
      {"code.env_change", ">= " + Percent(kAbMeaningfulChange) + " slower"},

      // code.util_misleading
      {"code.util_misleading", "utilization.gpu >= " + PercentOf(kUtilMisleadingUtilPercent) +
                                   " while SM activity < " +
                                   PercentOf(kUtilMisleadingSmActivePercent)},
      {"code.util_misleading",
       "critical below " + PercentOf(kUtilMisleadingCriticalSmActivePercent)},

      // code.launch_bound (analyze/trace/rules.h)
      {"code.launch_bound",
       "at least " + Percent(kLaunchBoundShortShare) + " of the kernels run under " +
           Number(kShortKernelUs) + " us, the GPU is busy under " +
           PercentOf(kUtilMisleadingSmActivePercent) + " of its active window, and " +
           PercentOf(kUtilMisleadingUtilPercent) + " or more",
       Field::kChecks},
      {"code.launch_bound", "(at least " + Number(kLaunchBoundMinKernels) + " kernels)",
       Field::kChecks},

      {"code.launch_bound", "critical under " + PercentOf(kUtilMisleadingCriticalSmActivePercent)},

      // code.gpu_idle, code.sync_in_step, memory.pageable_h2d (analyze/trace/rules.h)
      {"code.gpu_idle", "warning at >= " + PercentOf(kGpuIdleWarningPercent) + " idle"},
      {"code.gpu_idle", "critical at >= " + PercentOf(kGpuIdleCriticalPercent)},
      {"code.gpu_idle", "gaps over " + Millis(kLongIdleGapUs / 1000) + " counted", Field::kChecks},
      {"code.sync_in_step", "in at least " + Percent(kSyncStepsShare) + " of the steps"},
      {"code.sync_in_step", "warning at >= " + Percent(kSyncWarningFraction)},
      {"code.sync_in_step", "critical at >= " + Percent(kSyncCriticalFraction)},
      {"memory.pageable_h2d", "warning at >= " + Percent(kPageableWarningFraction)},
      {"memory.pageable_h2d", "critical at >= " + Percent(kPageableCriticalFraction)},
      {"code.cpu_bound_step", "warning at >= " + PercentOf(kCpuBoundPathWarningPercent)},
      {"code.cpu_bound_step", "critical at >= " + PercentOf(kCpuBoundPathCriticalPercent)},

      // memory.gpu_near_full
      {"memory.gpu_near_full", "warning at >= " + Percent(kGpuNearFullWarningFraction) + " used"},
      {"memory.gpu_near_full", "critical at >= " + Percent(kGpuNearFullCriticalFraction)},

      // code.gpu_throttled
      {"code.gpu_throttled", ">= " + Percent(kThrottledRunFraction) + " of the busy samples"},
      {"code.gpu_throttled", "SM clock < " + Percent(kThrottledCriticalClockFraction) + " of max"},

      // io.pcie_degraded, network.link_degraded (analyze/host/gpu_health_rules.h)
      {"io.pcie_degraded", "utilization.gpu >= " + PercentOf(kPcieBusyUtilPercent)},
      {"io.pcie_degraded", "<= " + Percent(kPcieDegradedCriticalShare) + " of the possible"},
      {"network.link_degraded", "<= " + Percent(kPcieDegradedCriticalShare) + " of the possible"},

      // network.allreduce_slow
      {"network.allreduce_slow", "at >= " + MiB(static_cast<double>(kAllreduceJudgeMinBytes))},
      {"network.allreduce_slow",
       "warning below " + Percent(kAllreduceSlowWarningFraction) + " of the line rate"},
      {"network.allreduce_slow", "critical below " + Percent(kAllreduceSlowCriticalFraction)},

      // distributed.clock_offset
      {"distributed.clock_offset", "exceeds " + Millis(kClockOffsetWarningMs)},
      {"distributed.clock_offset", "critical above " + Seconds(kClockOffsetCriticalMs / 1000)},
  };
}

// Whether `field` states `tie` as a whole figure: an occurrence whose
// number is not the end of a longer one ("20%" is not in "120%", "0.5 s" not
// in "10.5 s", "3 of" not in "13 of") and, when the tie ends in a digit, not
// the start of one ("(at least 3" is not in "(at least 30").
bool States(std::string_view field, std::string_view tie) {
  auto number_char = [](char c) { return (c >= '0' && c <= '9') || c == '.' || c == ','; };
  for (size_t at = field.find(tie); at != std::string_view::npos; at = field.find(tie, at + 1)) {
    const bool starts_number = !tie.empty() && number_char(tie.front());
    const bool ends_number = !tie.empty() && number_char(tie.back());
    if (starts_number && at > 0 && number_char(field[at - 1])) continue;
    const size_t end = at + tie.size();
    if (ends_number && end < field.size() && field[end] >= '0' && field[end] <= '9') continue;
    return true;
  }
  return false;
}

TEST(CatalogThresholds, AFigureIsStatedWholeNotAsAPartOfAnother) {
  EXPECT_TRUE(States("warning below 20% of", "20%"));
  EXPECT_FALSE(States("warning below 120% of", "20%"));
  EXPECT_FALSE(States("after 10.5 s", "0.5 s"));
  EXPECT_TRUE(States("after 0.5 s", "0.5 s"));
  EXPECT_FALSE(States("(at least 30)", "(at least 3"));
  EXPECT_TRUE(States("(at least 3)", "(at least 3"));
  EXPECT_TRUE(States("120% or 20%", "20%"));  // the second occurrence is whole
}

TEST(CatalogThresholds, TextsStateTheConstants) {
  for (const Tie& tie : Ties()) {
    const Rule* rule = FindRule(tie.id);
    if (rule == nullptr) {
      ADD_FAILURE() << "no rule " << tie.id << " in the catalog";
      continue;
    }
    const std::string_view text = FieldOf(*rule, tie.field);
    EXPECT_TRUE(States(text, tie.text))
        << tie.id << ": its " << FieldName(tie.field) << " should contain \"" << tie.text
        << "\" (from the rule's constant), but reads:\n  " << text;
  }
}

TEST(CatalogThresholds, IdsAreUniqueAndEveryRuleHasAThreshold) {
  std::set<std::string_view> seen;
  for (const Rule& rule : RuleCatalog()) {
    EXPECT_TRUE(seen.insert(rule.id).second) << "duplicate catalog id " << rule.id;
    EXPECT_FALSE(rule.threshold.empty()) << rule.id << " has no threshold";
    EXPECT_EQ(FindRule(rule.id), &rule) << rule.id;
  }
  EXPECT_FALSE(seen.empty());
}

}  // namespace
}  // namespace stallscope

// Catalog rules without a tie, and why:
//   memory.oom_killed: "critical whenever it happened"; no number.
//   memory.gpu_ecc, memory.gpu_remap: ">= 1 error", "pending" / "failed"; no constant.
//   code.gpu_persistence_off: "info when it is off"; no number.
//   code.gpu_xid: the Xid numbers are NVIDIA's (sample/kernel_events.h), not thresholds.
//   network.rdma_unused: "critical from 8 hosts" is kRdmaRequiredNodes, local to
//     analyze/nccl_log/rules.cc (an unnamed namespace), not in a header; the rest
//     (NCCL_IB_DISABLE "anything but 0") is a value of the variable, not a threshold.
//   network.mtu_mismatch: "differ" / "below the local MTU" compare measured MTUs;
//     the checks' "+ 28 bytes of IPv4/UDP headers" is a literal in the code
//     (analyze/host/network_rules.cc, net/client.cc), not a named constant.
//   network.connect_failed: "critical whenever one is logged"; no number.
//   distributed.nccl_version_mismatch: "two or more versions"; no constant.
//   distributed.init_incomplete: states which ranks completed; no number ("2.18"
//     in the checks is NCCL's version that added Init START, not a threshold).
//   distributed.allreduce_wrong: "critical at one wrong element"; any wrong
//     element counts, no constant.
//   distributed.heterogeneous_gpus: "two or more models"; no constant.
// Partly untied: io.loader_needed's "(>= 10%: still input-bound)" is a literal
// 0.10 in analyze/run/ab_rules.cc, not a named constant (its ">= 10% slower" is tied).
