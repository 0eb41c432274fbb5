// `stallscope diff A.db B.db`: what changed between two recorded runs of a
// job (A, the good one; B, the one under suspicion) and how much of the
// change in step time each part explains. Pure: two sides of judged runs
// (analyze/run/analysis.h; several files per side for a job that spanned
// nodes, read as one job) in, the comparison out. Thread-safe.
//
// - The headline: the mean step time of each side over every rank's counted
//   steps (the warm-up left out, as the per-rank table counts them);
//   slowdown = B's / A's (above 1: B is slower), overall and per rank.
// - The step decomposed: data wait, sync wait (when every step of both
//   sides has it, with stallscope.ddp) and compute (the rest, the sync wait
//   taken out only then, so both sides' compute is the same quantity). Each
//   part's change in seconds a step and its share of the change in step time
//   (that change / the total change; negative for a part that moved against
//   the total).
// - Noise. The step time changed when its change is at least
//   kDiffMinChangeSeconds and kDiffMinStepFraction of A's step (two runs of
//   one job on a shared host differ by that much), and is more than
//   kDiffNoiseSigmas standard errors of the difference of the means; the
//   errors come from the per-step means over the ranks (ranks in lockstep
//   are not independent), in blocks of kDiffBlockSteps consecutive steps (a
//   loader's batches arriving in bursts do not inflate it). Only then are
//   shares given, and a part is a cause unless its change is under
//   kDiffMinChangeSeconds and under kDiffMinChangeFraction of its larger
//   value, or within the same spread.
// - What else changed, each with A's and B's value: the DataLoader's
//   settings, what the loader read, the data disk, the tree's CPU by role,
//   the host's CPU, memory (RSS peak and slope, swap), the NCCL/torch
//   environment and the host of the baseline snapshot, the command line,
//   the world size, the NIC toward the master (multi-node runs), and
//   findings present in one run and not the other. What the loader read is
//   known only where a sample caught one of its files open; a side that
//   caught none may be given another run's (InputElsewhere). Numbers
//   change when they moved by more than a stated margin each.
// - The step on the GPU, where both sides have profiler traces (`run
//   --profile`, RUN.db.traces/): HTA's temporal breakdown a step, mean over
//   the ranks: the kernels' compute, their communication and copies, and the
//   GPU's idle time in its active window. A second decomposition of the same
//   step, seen from the GPU: its shares are of the same change in step time
//   and are not added to the hook's.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analyze/run/analysis.h"
#include "analyze/run/inputs.h"
#include "analyze/trace/breakdown.h"
#include "analyze/trace/diff.h"

namespace stallscope {

inline constexpr double kDiffMinChangeSeconds = 0.002;
inline constexpr double kDiffMinChangeFraction = 0.10;
inline constexpr double kDiffNoiseSigmas = 3.0;
inline constexpr double kDiffMinStepFraction = 0.05;
inline constexpr size_t kDiffBlockSteps = 4;

// The words of two commands that differ, each with the flag before it when
// that flag is the same: {"--workers 2", "--workers 0"}; two empty strings
// when the commands are the same. A word only on one side: "" on the other.
std::pair<std::string, std::string> ArgvChange(const std::vector<std::string>& a,
                                               const std::vector<std::string>& b);

struct DiffSide {
  std::vector<std::string> files;
  std::vector<std::string> hosts;  // the runs' hostnames, then the ranks' hosts
  std::string command;
  std::vector<std::string> argv;      // the first run's, where its file has it
  std::string started;                // the first run's start, ISO 8601
  int world_size = 0;                 // ranks seen (hook hellos or ranks with steps); 0: none
  int64_t steps = 0;                  // counted steps, all ranks
  std::optional<double> step_s;       // mean; nullopt: no steps (the hook absent)
  std::optional<double> steps_per_s;  // the lowest rank's counted steps over their span
  std::optional<double> epoch_s;      // mean epoch length; nullopt: no epochs marked
  // The lowest rank's counted steps: (seconds since its first, seconds),
  // for the page's charts.
  std::vector<std::pair<double, double>> step_series, data_wait_series;
};

struct DiffRank {
  int rank = 0;
  double a_step_s = 0;
  double b_step_s = 0;
  double slowdown = 0;
};

// One part of the step: "data_wait", "sync_wait", "compute".
struct DiffComponent {
  std::string what;
  double a_s = 0;  // mean a step
  double b_s = 0;
  std::optional<double> share;  // of the change in step time; nullopt: none given
  bool cause = false;           // its change is beyond noise
  double change_s() const { return b_s - a_s; }
};

// Anything else that changed. `a`/`b`: a number, a string, a bool, or null
// (absent on that side).
struct DiffChange {
  std::string what;  // "loader.num_workers", "env.NCCL_P2P_DISABLE", ...
  nlohmann::ordered_json a;
  nlohmann::ordered_json b;
  std::string unit;             // "s/step", "bytes", "%", "ms", "KiB/s", "MiB/s", "" for none
  std::optional<double> share;  // the step components' share; nullopt for the others
};

// The GPU's side of one run's steps, from its profiler traces: a step's
// seconds, mean over the ranks with GPU rows.
struct DiffGpuSide {
  int ranks = 0;      // traces with GPU rows
  int64_t steps = 0;  // kept steps, over those ranks
  double compute_s = 0;
  double non_compute_s = 0;  // communication, memcpy and memset
  double idle_s = 0;
};

// nullopt: no trace with GPU rows and steps (a CPU-only trace, or none).
std::optional<DiffGpuSide> GpuSideOf(const std::vector<TraceRankBreakdown>& ranks);

struct RunDiff {
  DiffSide a, b;
  std::optional<double> slowdown;  // nullopt: a side without steps
  bool step_change_beyond_noise = false;
  bool same_command = false;
  bool same_hosts = false;
  bool same_world_size = false;
  std::vector<DiffRank> ranks;  // ranks with steps on both sides
  std::vector<DiffComponent> components;
  // "gpu.compute", "gpu.communication_and_copies", "gpu.idle": where both
  // sides have GPU traces; by share as `components`.
  std::vector<DiffComponent> gpu_components;
  std::optional<DiffGpuSide> gpu_a, gpu_b;
  // Where both sides were profiled: the trace diff of their traces (A the
  // control, B the test; analyze/trace/diff.h), its ops and kernels whose
  // count or time changed most, by the time they explain.
  std::vector<TraceOpDiff> gpu_top_ops;
  // The causes among the components first (by share, largest first), then
  // the other changes in a fixed order.
  std::vector<DiffChange> changes;
  std::vector<std::string> notes;  // what could not be compared, by file
  // Where each side's time went (every rank of its files, by rank): the
  // lowest rank's rows are compared.
  TimeBreakdown time_a, time_b;
};

// What a side's loader read, seen by another run of the same unchanged
// setting (history: a run of the representative's segment), for a side
// whose own samples caught no file open: small files are opened and closed
// between samples, so one run may miss what its neighbours caught.
struct InputElsewhere {
  LoaderInput input;
  std::string file;  // the run file that caught it
};

// `gpu_a`, `gpu_b`: each side's GPU figures (GpuSideOf), where it has them.
// `input_a`, `input_b`: used only where that side caught no input itself;
// the notes say which run it came from.
RunDiff DiffRuns(const std::vector<RunAnalysis>& a, const std::vector<RunAnalysis>& b,
                 const std::optional<DiffGpuSide>& gpu_a = std::nullopt,
                 const std::optional<DiffGpuSide>& gpu_b = std::nullopt,
                 const std::optional<InputElsewhere>& input_a = std::nullopt,
                 const std::optional<InputElsewhere>& input_b = std::nullopt);

}  // namespace stallscope
