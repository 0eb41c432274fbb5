// The rules over a recorded run: what `run`, `watch` and `report` conclude
// from a Timeline (the sampler's intervals plus the hook's steps, epochs and
// loader settings), and the per-epoch table `report` prints.
//
// Pure: data in, findings out. The rules of each layer have their own
// header (memory_rules.h, io_rules.h, network_rules.h, with
// their thresholds as named constants; the reasoning is in
// analyze/catalog.cc); this one holds what they share (the steps' data wait,
// the epochs) and CheckRun, which runs them all. Thread-safe (no state).
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "analyze/run/io_rules.h"
#include "analyze/run/memory_rules.h"
#include "analyze/run/network_rules.h"
#include "core/status.h"
#include "sample/finding.h"
#include "sample/timeline.h"

namespace stallscope {

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

// nullopt: fewer than kInputBoundMinSteps counted steps. With `after_t`,
// only the steps that ended after it (each rank's first of those left out):
// the waits after epoch 0, for io.cold_cache.
std::optional<DataWait> MeasureDataWait(const Timeline& timeline,
                                        double after_t = -std::numeric_limits<double>::infinity());

// Seconds sample i covers: since the previous sample, the first one since
// the start of the run; the run's interval where the times do not move.
double IntervalOf(const Timeline& timeline, size_t i);

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
  // From the boundary samples (analyze/run/epoch_figures.h), where the file has
  // them and they bound this epoch alone: what the job read from the data
  // disk in it, and its tree's CPU time.
  std::optional<double> read_bytes;
  std::optional<double> cpu_seconds;
};

// Empty when the hook reported no epochs.
std::vector<EpochSummary> SummarizeEpochs(const Timeline& timeline);

// All of the above, the GPU rules (analyze/host/gpu_rules.h, run once) and the
// per-rank rules (analyze/run/rank_rules.h, CheckRanks); the notes: the GPU
// rules' ("gpu: ...") and the allocation trace's (AllocationTraceNotes).
// MakeReport orders the findings and picks the verdict.
// `rank_rules` false: leave distributed.straggler and load_imbalance out
// (a node's file of a job: AnalyzeJob judges every node's ranks together).
FindingsWithNotes CheckRun(const Timeline& timeline, bool rank_rules = true);

}  // namespace stallscope
