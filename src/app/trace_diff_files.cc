// Reading a side of the trace diff: the files of PATH, each read whole with
// every row, the one of the rank wanted kept (the lowest rank without
// --rank; a file without a rank is rank 0, as HTA takes it). The two sides
// are read on two threads, where two or more are allowed.
#include "app/trace_diff_files.h"

#include <algorithm>
#include <future>

#include "formats/trace/file.h"

namespace stallscope {
namespace {

Status Named(std::string_view which, const Status& s) {
  return Status::InvalidArgument(std::string(which) + " side: " + s.message());
}

}  // namespace

Result<TraceDiffSide> ReadTraceDiffSide(std::string_view which, const std::string& path,
                                        std::optional<int> rank, const TraceDiffOptions& options,
                                        size_t parse_threads) {
  TraceReading how;
  how.rows = TraceRows::kEvery;
  if (parse_threads > 0) how.parse_threads = parse_threads;
  Result<std::vector<std::string>> files = TraceFilesIn(path);
  if (!files.ok()) return Named(which, files.status());
  std::optional<TraceFile> chosen;
  for (const std::string& file : *files) {
    Result<TraceFile> trace = ReadTraceFile(file, how);
    if (!trace.ok()) return Named(which, trace.status());
    const int r = trace->rank.value_or(0);
    if (chosen && r == chosen->rank.value_or(0)) {
      return Named(which, Status::InvalidArgument(chosen->path + " and " + file +
                                                  " are both rank " + std::to_string(r)));
    }
    const bool better = rank ? r == *rank : (!chosen || r < chosen->rank.value_or(0));
    if (better) chosen = std::move(*trace);
  }
  if (!chosen) {
    return Named(which,
                 Status::NotFound(path + ": no trace of rank " + std::to_string(rank.value_or(0))));
  }
  Result<TraceDiffSide> side = SummarizeTraceOps(*chosen, options);
  if (!side.ok()) return Named(which, side.status());
  return side;
}

Result<TraceDiff> DiffTracePaths(const std::string& control, const std::string& test,
                                 std::optional<int> rank, const TraceDiffOptions& options,
                                 size_t threads) {
  const size_t cpus = TraceThreads(threads);
  const size_t each = ParseThreadsEach(cpus, 2);
  auto read_test = [&] { return ReadTraceDiffSide("test", test, rank, options, each); };
  std::future<Result<TraceDiffSide>> test_side =
      std::async(cpus >= 2 ? std::launch::async : std::launch::deferred, read_test);
  Result<TraceDiffSide> a = ReadTraceDiffSide("control", control, rank, options, each);
  Result<TraceDiffSide> b = test_side.get();
  if (!a.ok()) return a.status();
  if (!b.ok()) return b.status();
  return DiffTraceOps(std::move(*a), std::move(*b));
}

}  // namespace stallscope
