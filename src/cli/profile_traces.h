// Profiler traces read for the command line: a list of trace files broken
// down on up to one thread per CPU (`stallscope trace`), and the traces
// `run --profile A:B` had the hook write beside the run file, judged into
// the findings `run` keeps in the run file (source "trace"), so that
// `report` shows them later with the hook's.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analyze/trace_breakdown.h"
#include "core/status.h"
#include "sample/finding.h"

namespace stallscope {

// Each file read and broken down; `rank`: only that rank's. Two files of one
// rank are an error naming both; the first file that cannot be read is the
// error. Sorted by rank.
Result<std::vector<TraceRankBreakdown>> BreakDownTraceFiles(const std::vector<std::string>& files,
                                                            const TraceOptions& options,
                                                            std::optional<int> rank);

// Where `run --profile` has the hook write its traces: RUN.db.traces/.
std::string ProfileTraceDir(const std::string& run_path);

// The findings and notes of the traces in `dir` (every step the hook
// recorded, A to B), or a note saying why there are none.
FindingsWithNotes JudgeProfileTraces(const std::string& dir, const TraceStepRange& range);

}  // namespace stallscope
