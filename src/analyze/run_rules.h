// The rules over a recorded run: what `run`, `watch` and `report` conclude
// from a Timeline (the sampler's intervals plus the hook's steps, epochs and
// loader settings), and the per-epoch table `report` prints.
//
// Pure: data in, findings out. The memory rules that judge one moment reuse
// CheckMemory (memory_rules.h) on the run's worst interval; the rules that
// need a whole run (a leak's slope, a saturated disk, the data wait share of
// the steps) live here. Thresholds are named constants below; their
// reasoning is in analyze/catalog.cc. Thread-safe (no state).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "analyze/network_rules.h"
#include "core/status.h"
#include "sample/finding.h"
#include "sample/timeline.h"

namespace stallscope {

// memory.rss_growth: judged on the run after its first third (warm-up:
// loading the model, filling the page cache, workers starting).
inline constexpr double kLeakWarmupFraction = 1.0 / 3;
inline constexpr size_t kLeakMinSamples = 12;  // at least 4 a third
// Judged while the job trains: from the hook's first step to its last, when
// it reported steps. At exit a job frees what it held and its workers go, in
// one or two samples; a fast run has few samples a third, and two such
// samples at the end were enough to read a leak as a plateau. So, with or
// without steps, trailing samples below 90% of the median of the 5 before
// each are that teardown and are not judged.
inline constexpr double kLeakTeardownFraction = 0.9;
inline constexpr size_t kLeakTeardownWindow = 5;
// Steady: the last third still grows at least 0.7x as fast as the middle
// third. A leak keeps its pace (a linear leak gives 1.0, one that grows as
// sqrt(t) 0.77); a warm-up that settles exponentially passes 0.7 only when
// its time constant is about as long as the run.
inline constexpr double kLeakSteadyRatio = 0.7;
// Significant: growth over the judged part beyond 3 sigma of the noise, and
// either > 10% of the RSS it started from and > 64 MiB, or the memory left
// runs out within 24 h at this slope.
inline constexpr double kLeakNoiseSigmas = 3.0;
inline constexpr double kLeakMinGrowthFraction = 0.10;
inline constexpr uint64_t kLeakMinGrowthBytes = 64ull << 20;
inline constexpr double kLeakOomHorizonSeconds = 24 * 3600.0;
inline constexpr double kLeakCriticalOomSeconds = 3600.0;  // critical: OOM within the hour
// The hook's growth sites shown in memory.rss_growth's evidence.
inline constexpr size_t kLeakSitesShown = 3;
// A process is named as the grower only if it lived through half the judged part.
inline constexpr double kLeakProcessMinCoverage = 0.5;

// io.device_saturated: iostat -x figures of the data disk.
inline constexpr double kDiskSaturatedUtilPercent = 90.0;
inline constexpr double kDiskSaturatedAwaitMs = 20.0;
inline constexpr int kDiskSaturatedMinIntervals = 3;            // in a row: not a blip
inline constexpr double kDiskSaturatedCriticalFraction = 0.30;  // of the sampled intervals

// io.input_bound: sum(wait) / sum(step) of the hook's steps.
inline constexpr double kInputBoundWarningFraction = 0.10;
inline constexpr double kInputBoundCriticalFraction = 0.30;
inline constexpr int64_t kInputBoundMinSteps = 5;  // after each rank's first step

// io.loader_config.
inline constexpr double kShortEpochSeconds = 30.0;
inline constexpr double kWorkerRestartCostFraction = 0.05;  // of an epoch
inline constexpr int kMaxPrefetchBatches = 64;              // num_workers * prefetch_factor
inline constexpr int kTorchDefaultPrefetchFactor = 2;
inline constexpr int kSuggestedPrefetchFactor = 4;

// io.cpu_bound_loader.
inline constexpr double kLoaderCpuSaturatedFraction = 0.90;  // of the CPUs the ranks leave
inline constexpr double kHostCpuSaturatedPercent = 95.0;
inline constexpr double kCpuSaturatedRunFraction = 0.50;  // "most of the run"

// The data wait of the hook's steps. Each rank's first step is left out: its
// wait includes starting the loader workers, a one-off cost.
struct DataWait {
  int64_t steps = 0;  // counted, over all ranks
  int ranks = 0;
  double wait_seconds = 0;
  double step_seconds = 0;
  double fraction = 0;  // wait / step over all ranks
  // In synchronous data parallelism every rank waits for the slowest, so the
  // job loses the worst rank's share: that is what the rules judge.
  int worst_rank = 0;
  double worst_rank_fraction = 0;
};

// nullopt: fewer than kInputBoundMinSteps counted steps.
std::optional<DataWait> MeasureDataWait(const Timeline& timeline);

// One epoch as the hook marked it. Epoch n runs from its mark (the earliest
// over the ranks) to the next epoch's mark; the last one ends at its last
// step, so a final evaluation or checkpoint does not count as training.
struct EpochSummary {
  int epoch = 0;
  double start_s = 0;  // seconds since the run started
  double duration_s = 0;
  int64_t steps = 0;  // of the lowest rank with steps (ranks step in lockstep)
  double steps_per_s = 0;
  std::optional<double> data_wait_fraction;  // all ranks' steps in the epoch; nullopt: none
  uint64_t peak_tree_rss_bytes = 0;          // 0: no sample inside the epoch
};

// Empty when the hook reported no epochs.
std::vector<EpochSummary> SummarizeEpochs(const Timeline& timeline);

// memory.available_low, memory.swap_active (via CheckMemory), memory.rss_growth,
// memory.oom_killed.
std::vector<Finding> CheckRunMemory(const Timeline& timeline);
// What the hook's allocation tracing said it did (started, stopped, failed),
// one line per note: "allocation tracing, rank 0: tracing started: ...".
std::vector<std::string> AllocationTraceNotes(const Timeline& timeline);

// io.device_saturated, io.cpu_bound_loader, io.loader_config, io.input_bound,
// in that order: at equal severity the cause comes before the symptom, so the
// verdict (the first critical finding) names what to fix.
std::vector<Finding> CheckRunIo(const Timeline& timeline);

// network.port_errors over the run: each port's error counters from its
// first stored reading to its last (run_network_rules.cc).
std::vector<Finding> CheckRunNetwork(const Timeline& timeline);

// The network facts of the run's baseline snapshot (stallscope.snapshot/1
// JSON, as the run file keeps it) for CheckNetwork's host rules; missing or
// mistyped fields are unknown. ParseError when it is not a JSON object.
Result<NetworkObservation> NetworkFromBaseline(std::string_view snapshot_json);

// All of the above, the GPU rules (analyze/gpu_rules.h, run once) and the
// per-rank rules (analyze/rank_rules.h, CheckRanks); the notes: the GPU
// rules' ("gpu: ...") and the allocation trace's (AllocationTraceNotes).
// MakeReport orders the findings and picks the verdict.
FindingsWithNotes CheckRun(const Timeline& timeline);

}  // namespace stallscope
