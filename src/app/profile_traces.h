// Profiler traces read for `stallscope trace` and `run --profile`: a list of
// trace files broken down on up to one thread per CPU, and the traces
// `run --profile A:B` had the hook write beside the run file (RUN.db.traces/,
// made and emptied of an earlier run's rank traces here), judged into the
// findings `run` keeps in the run file (source "trace"), so that `report`
// shows them later with the hook's. Reads only the files and the directory
// named; writes only in RUN.db.traces/.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analyze/trace/breakdown.h"
#include "core/status.h"
#include "sample/finding.h"

namespace stallscope {

// Each file read and broken down; `rank`: only that rank's. Two files of one
// rank are an error naming both; the first file that cannot be read is the
// error. Sorted by rank. `threads`: at most this many at once (0: one a CPU),
// a file each, and a file's text in parts (formats/trace/file.h) by the
// threads the files leave.
Result<std::vector<TraceRankBreakdown>> BreakDownTraceFiles(const std::vector<std::string>& files,
                                                            const TraceOptions& options,
                                                            std::optional<int> rank,
                                                            size_t threads = 0);

// Where `run --profile` has the hook write its traces: RUN.db.traces/.
std::string ProfileTraceDir(const std::string& run_path);

// The traces beside each run file (RUN.db.traces/, every step the hook
// recorded), for `diff`: none where a run has no such directory; each file
// read on its own, one that cannot be read a note naming it, the others
// still read.
std::vector<TraceRankBreakdown> ReadRunTraces(const std::vector<std::string>& run_paths,
                                              std::vector<std::string>& notes);

// RUN.db.traces/ made, or emptied of an earlier run's rank*.json (the run
// file itself is only overwritten with --force). A path there that is not a
// directory of its own (a file, a symlink) is an error: nothing outside the
// run's output is touched.
Status MakeProfileDir(const std::string& dir);

// The rank traces an earlier `run --profile` left in RUN.db.traces/
// (rank*.json), removed, and the directory too when nothing else is in it;
// nothing when it is not a directory of its own. For a run file made anew
// without --profile.
void ClearProfileDir(const std::string& dir);

// `path` made absolute against the working directory (for the hook, which
// may change it); unchanged when that cannot be read.
std::string AbsolutePath(const std::string& path);

// The findings and notes of the traces in `dir` (every step the hook
// recorded, A to B), or a note saying why there are none.
FindingsWithNotes JudgeProfileTraces(const std::string& dir, const TraceStepRange& range);

}  // namespace stallscope
