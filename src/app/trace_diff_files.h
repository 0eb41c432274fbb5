// The two sides of `stallscope trace --diff CONTROL TEST` read from disk:
// each a trace file or a directory of per-rank traces, as `stallscope trace`
// takes them, every row kept (formats/trace/file.h's TraceRows::kEvery), one
// rank compared per side (analyze/trace/diff.h). Errors say which side and
// which file. Reads only the files named; each side's files are read one at
// a time, the two sides at once, so memory is two files' rows.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "analyze/trace/diff.h"
#include "core/status.h"

namespace stallscope {

// One side: `which` ("control", "test") prefixes every error. `rank`: that
// rank's file, else the lowest rank's (HTA's default). `parse_threads`: the
// threads a file's text is read by (formats/trace/file.h; 0: its default).
Result<TraceDiffSide> ReadTraceDiffSide(std::string_view which, const std::string& path,
                                        std::optional<int> rank, const TraceDiffOptions& options,
                                        size_t parse_threads = 0);

// Both sides, diffed. `threads`: at most this many at once (0: one a CPU),
// half for each side.
Result<TraceDiff> DiffTracePaths(const std::string& control, const std::string& test,
                                 std::optional<int> rank, const TraceDiffOptions& options,
                                 size_t threads = 0);

}  // namespace stallscope
