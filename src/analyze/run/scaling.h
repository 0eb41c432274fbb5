// The arithmetic of `stallscope scale`: from the throughput and step time
// measured at each world size to speedup, scaling efficiency, the
// communication ratio estimate, an Amdahl fit of the serial fraction and
// what gradient accumulation would give; and the two rules over them,
// distributed.scaling_poor and network.comm_ratio_high.
//
// The usual scaling test: run 1, 2, 4, 8 ranks for a fixed number of steps,
// record throughput, compute the efficiency; a step at N ranks that takes
// longer than at 1 rank spends the difference mostly in communication, so
// (t_N - t_1) / t_N estimates the communication ratio. Gradient accumulation
// over k micro-batches syncs once per k, giving comm / (k * compute + comm).
// Pure; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sample/finding.h"
#include "sample/timeline.h"

namespace stallscope {

// distributed.scaling_poor: efficiency at the largest size under 0.7 (4 GPUs
// giving 3.2x, 0.8, is good), critical under 0.5; or a doubling from N >= 4
// ranks that gains under 1.5x (8 against 4: check comm and IO, not more GPUs).
inline constexpr double kScalingPoorEfficiency = 0.7;
inline constexpr double kScalingCriticalEfficiency = 0.5;
inline constexpr double kDoublingMinGain = 1.5;
inline constexpr int kDoublingFromProcs = 4;
// network.comm_ratio_high: over 30% of a step in gradient sync, the network
// is the bottleneck; critical over 50% (more time syncing than computing).
inline constexpr double kCommRatioHigh = 0.30;
inline constexpr double kCommRatioCritical = 0.50;
inline constexpr int kAccumulationSteps[] = {2, 4, 8};

// What one world size measured.
struct ScalePoint {
  int procs = 0;
  int ranks_reported = 0;
  int64_t steps = 0;             // counted steps over all ranks
  double samples_per_s = 0;      // the whole job; steps/s x batch per rank
  double step_s = 0;             // mean step time over the ranks
  std::optional<double> sync_s;  // measured sync wait per step (stallscope.ddp)
};

struct ScaleRow {
  ScalePoint point;
  double speedup = 1;     // throughput over the smallest size's
  double efficiency = 1;  // speedup / (procs / smallest procs)
  double comm_ratio = 0;  // (t_N - t_base) / t_N, 0 when the step got no longer
};

struct Accumulation {
  int k = 1;
  double comm_ratio = 0;  // comm / (k * compute + comm)
  double efficiency = 1;  // k * compute / (k * compute + comm)
};

struct ScaleAnalysis {
  std::vector<ScaleRow> rows;  // by procs
  int base_procs = 1;          // the smallest size: speedup 1 by definition
  // Amdahl: speedup(n) = 1 / (s + (1 - s) / n), n = procs / base_procs;
  // s by least squares of 1/speedup - 1/n = s (1 - 1/n) over the sizes;
  // nullopt with one size only. Clamped to [0, 1].
  std::optional<double> serial_fraction;
  std::vector<Accumulation> accumulation;  // at the largest size
};

// Each rank's first steps are left out (workers starting, DDP's first
// iteration); a size needs at least 2 counted steps on a rank to measure it.
inline constexpr int64_t kScaleWarmupSteps = 3;

// One size's figures from the hook's step records and loader settings: per
// rank, steps/s over its counted steps (from the first counted step's end to
// the last's) times its batch size (1 when the hook saw no batch size: then
// "samples" are steps), summed over the ranks; the mean step time and sync
// wait over the ranks.
ScalePoint MeasureScalePoint(int procs, const std::vector<StepEvent>& steps,
                             const std::vector<StepSync>& syncs,
                             const std::vector<LoaderConfig>& loaders);

// Rows with a non-positive throughput or step time are kept out of the fit.
ScaleAnalysis AnalyzeScaling(std::vector<ScalePoint> points);

// The least-squares Amdahl serial fraction of (n, speedup) pairs, n >= 1.
std::optional<double> FitAmdahl(const std::vector<std::pair<double, double>>& n_speedup);

// distributed.scaling_poor and network.comm_ratio_high. `command` goes into
// the next checks (e.g. "stallscope run --procs 8 -- CMD").
FindingsWithNotes CheckScaling(const ScaleAnalysis& analysis, const std::string& command);

}  // namespace stallscope
