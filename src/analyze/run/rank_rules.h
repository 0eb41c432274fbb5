// Per-rank analysis of a recorded data-parallel run: what each rank spent
// its steps on (compute, waiting in gradient synchronization, waiting for
// data, CPU), and the two rules over those figures, distributed.straggler
// and distributed.load_imbalance.
//
// In synchronous data parallelism every rank's step lasts as long as the
// slowest rank's, so step time alone cannot name the straggler. What differs
// is the wait in gradient synchronization, measured by the hook's
// stallscope.ddp(model) (each bucket's all-reduce from launch to completion):
// the rank the others wait for launches its all-reduces last and waits
// least; the others wait about its extra time. Pure: data in, findings out.
// Thresholds are named constants; their reasoning is in analyze/catalog.cc.
// Thread-safe (no state).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sample/finding.h"
#include "sample/timeline.h"

namespace stallscope {

// Each rank's first steps are left out: the first one starts the loader
// workers, and DDP rebuilds its gradient buckets after the first iteration.
inline constexpr int64_t kRankWarmupSteps = 2;
// distributed.straggler: the others wait for one rank by more than 15% of a
// step on average, and it is the rank waited for in at least 2 of 3 steps
// compared (sustained, not a hiccup). Critical at 30%.
inline constexpr double kStragglerStepFraction = 0.15;
inline constexpr double kStragglerCriticalFraction = 0.30;
inline constexpr double kStragglerSustainedShare = 2.0 / 3;
inline constexpr int64_t kRankMinSteps = 5;  // per rank, after the warm-up
// distributed.load_imbalance: the spread (max - min) of the ranks' mean
// compute time, or of their mean data wait, against the mean step; sustained
// as the straggler is (kStragglerSustainedShare of the compared steps).
inline constexpr double kComputeImbalanceFraction = 0.20;
// distributed.straggler's cause host_cpu: a straggler by compute whose
// process waited for a CPU (schedstat run delay) this share of the time,
// and this many points more than the other ranks' median.
inline constexpr double kHostCpuRunDelayPercent = 20;
inline constexpr double kHostCpuRunDelayMargin = 10;
inline constexpr double kDataWaitImbalanceFraction = 0.10;

// One rank over the run, means per counted step.
struct RankSummary {
  int rank = 0;
  std::string hostname;  // from the hook's hello; empty when unknown
  int64_t steps = 0;     // counted (after the warm-up)
  double step_s = 0;
  double data_wait_s = 0;
  // step - data wait - sync wait; without the DDP hook, step - data wait.
  double compute_s = 0;
  std::optional<double> sync_wait_s;  // with stallscope.ddp(model)
  std::optional<double> cpu_s;        // process CPU time per step, likewise
  // Its process's mean run delay (waiting for a CPU, % of the time) over
  // the run; absent where the sampler read none.
  std::optional<double> run_delay_pct;
};

// One counted step of one rank (the warm-up left out, as SummarizeRanks
// counts them), split the same way: data wait and sync wait clamped to the
// step, compute the rest.
struct StepParts {
  int rank = 0;
  int64_t step = 0;
  double t = 0;  // when it ended, seconds since the run started
  double step_s = 0;
  double data_wait_s = 0;
  std::optional<double> sync_wait_s;  // with stallscope.ddp(model)
  double compute_s = 0;               // step - data wait - sync wait
};
std::vector<StepParts> CountedStepParts(const Timeline& timeline);

// One job's step records, file by file: each part's steps and sync records
// (the parts are read in place, never copied), the ranks' hellos that name
// their hosts, and the host of a rank without one.
struct StepRecords {
  const std::vector<StepEvent>* steps = nullptr;
  const std::vector<StepSync>* syncs = nullptr;      // none when null
  const std::vector<BucketSync>* buckets = nullptr;  // none when null
  bool buckets_recorded = true;  // false: a file that predates the bucket records
  // The part's process samples and its own ranks' hellos (pid -> rank), for
  // each rank's run delay; none when null.
  const std::vector<ProcessPoint>* processes = nullptr;
  const std::vector<RankInfo>* part_ranks = nullptr;
};
struct JobSteps {
  std::vector<StepRecords> parts;
  const std::vector<RankInfo>* ranks = nullptr;
  std::string fallback_host;
};

// One row per rank that reported steps, by rank. `fallback_host` names the
// host of ranks whose hello carried none (the run's hostname).
std::vector<RankSummary> SummarizeRanks(const Timeline& timeline,
                                        const std::string& fallback_host = "");

// distributed.straggler and distributed.load_imbalance; nothing for a run
// with fewer than two ranks.
FindingsWithNotes CheckRanks(const Timeline& timeline);

// Both over the steps of several files at once (a job of several nodes):
// the rows as SummarizeRanks, the findings as CheckRanks, from one index
// of the counted steps (made once for both, not once for each). A rank's
// steps are taken in the order of the parts and of each part's records:
// in time order when each part is (AnalyzeJob sorts them so).
struct RankResults {
  std::vector<RankSummary> ranks;
  std::vector<Finding> findings;
};
RankResults JudgeRanks(const JobSteps& job);

}  // namespace stallscope
