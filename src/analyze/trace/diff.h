// The trace diff: which ops and kernels two profiler traces (a control and a
// test) run, and how their counts and total durations changed, as Holistic
// Trace Analysis' `TraceDiff.compare_traces` and `ops_diff` define them.
//
// HTA's rows, on one rank of each side (the first, or the one asked for):
// every event with a dur and a cat (the reader's TraceRows::kEvery). Each
// row belongs to a ProfilerStep: a CPU row (no stream, or stream 0 and a
// cpu_op) to the step whose [ts, ts + dur) holds its start, a GPU row
// (stream > 0) to its launch's step through the correlation id. With two or
// more steps, the last one is dropped first, as HTA loads a trace (the CPU
// rows from its start on, and the GPU rows whose launch went with them).
// The ops compared are the rows of the chosen steps (the first step, by
// default), grouped by name: count and summed duration. A trace with no
// ProfilerStep is compared whole (HTA refuses it), with a note. Pure;
// thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analyze/trace/breakdown.h"
#include "core/status.h"
#include "sample/trace.h"

namespace stallscope {

// One name's rows on one side.
struct TraceOpTotal {
  std::string name;
  bool gpu = false;  // a GPU row (a stream) carried the name: a kernel, copy or sync
  uint64_t count = 0;
  double total_us = 0;
};

// One side of the diff: the rank and steps it compares, their ops by name,
// and its temporal breakdown (as `stallscope trace` gives it).
struct TraceDiffSide {
  std::string path;
  int rank = 0;
  std::vector<int64_t> steps;     // empty: no ProfilerStep, the whole trace
  std::vector<TraceOpTotal> ops;  // by name
  std::optional<TemporalBreakdown> temporal;
};

// HTA's counts_change_categories, and the ops_diff list a name falls in.
enum class TraceOpChange : uint8_t { kAdded, kRemoved, kIncreased, kDecreased, kUnchanged };
std::string_view TraceOpChangeName(TraceOpChange change);  // "added", "removed", ...

struct TraceOpDiff {
  std::string name;
  bool gpu = false;
  TraceOpChange change = TraceOpChange::kUnchanged;  // by count
  uint64_t control_count = 0, test_count = 0;
  double control_us = 0, test_us = 0;
  int64_t diff_count() const {
    return static_cast<int64_t>(test_count) - static_cast<int64_t>(control_count);
  }
  double diff_us() const { return test_us - control_us; }
};

struct TraceDiff {
  TraceDiffSide control, test;
  // Every name of either side, ranked by the time it explains (|diff_us|,
  // largest first; then by name).
  std::vector<TraceOpDiff> ops;
  std::vector<std::string> notes;
};

// Which steps a side compares: a range of ProfilerStep numbers, or none for
// the first step (HTA's default).
struct TraceDiffOptions {
  std::optional<TraceStepRange> steps;
};

// One side's ops. `trace` must hold every row (TraceRows::kEvery). An error
// names the file: a step range with no step of the trace in it.
Result<TraceDiffSide> SummarizeTraceOps(const TraceFile& trace, const TraceDiffOptions& options);

// The diff of two sides; notes say what a side lacked.
TraceDiff DiffTraceOps(TraceDiffSide control, TraceDiffSide test);

}  // namespace stallscope
