// `stallscope ab`: a degraded-comparison experiment, judged. CMD ran
// twice for the same number of steps, as is (A) and with one thing changed
// (B: the DataLoader rebuilt with num_workers=N, or environment variables);
// the step rates of the two say which layer the change touched and whether
// that layer was the bottleneck ("much faster with the change means the
// layer it touched was the bottleneck").
//
// Pure: figures in, findings out; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "sample/finding.h"
#include "sample/timeline.h"

namespace stallscope {

// A relative change in steady steps/s below this is run-to-run noise: short
// CPU runs of the example job repeat within a few percent, and such an
// experiment looks for "much faster", not a few percent.
inline constexpr double kAbMeaningfulChange = 0.10;
// Steps left out at the start of each run (at least 1, else this share):
// worker start-up and the first batch are reported apart, as start-up.
inline constexpr double kAbWarmupShare = 0.10;

// What one run measured, from the hook's step records of its lowest rank.
struct AbRunFigures {
  int64_t steps = 0;                  // steps reported
  int64_t steady_steps = 0;           // after the warm-up
  double steady_steps_per_s = 0;      // steady_steps / their summed step time
  double data_wait_fraction = 0;      // over the steady steps
  double startup_seconds = 0;         // from the start of the process to the end of step 1
  double wall_seconds = 0;            // start to exit
  std::optional<int> loader_workers;  // as the hook reported the loader
  int exit_status = 0;
};

// Figures from one run's step records (times since the process started).
AbRunFigures SummarizeAbRun(const std::vector<StepEvent>& steps,
                            const std::vector<LoaderConfig>& loaders, double wall_seconds,
                            int exit_status);

struct AbChange {
  std::optional<int> loader_workers;                     // --loader-workers
  std::vector<std::pair<std::string, std::string>> env;  // --env K=V
  int cpu_count = 0;                                     // of this host
};

// The experiment asked for: --steps, --loader-workers (-1: unchanged),
// --timeout and --env NAME=VALUE, checked (InvalidArgument naming the flag:
// a count out of range, a malformed or STALLSCOPE_* variable, nothing to
// change). `degraded_env` is what run B gets; `nccl_debug`: --env set
// NCCL_DEBUG, so B's output is captured and read as an NCCL log.
struct AbPlan {
  AbChange change;
  std::vector<std::pair<std::string, std::string>> degraded_env;
  bool nccl_debug = false;
  std::string what;  // "num_workers=0 NCCL_P2P_DISABLE=1"
};
Result<AbPlan> PlanAb(int64_t steps, int loader_workers, double timeout_seconds,
                      const std::vector<std::string>& env, int cpu_count);

// The findings of the comparison: io.loader_overhead / io.loader_needed for a
// loader change, network.env_change / code.env_change for environment
// changes. Nothing when the rates differ by less than kAbMeaningfulChange.
FindingsWithNotes CompareAbRuns(const AbRunFigures& as_is, const AbRunFigures& degraded,
                                const AbChange& change, const std::string& command);

}  // namespace stallscope
