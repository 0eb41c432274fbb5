// Reading a side of the trace diff: the files of PATH, each read whole with
// every row, the one of the rank wanted kept (the lowest rank without
// --rank; a file without a rank is rank 0, as HTA takes it). The two sides
// are read on two threads.
#include "app/trace_diff_files.h"

#include <future>

#include "probe/trace_file.h"

namespace stallscope {
namespace {

Status Named(std::string_view which, const Status& s) {
  return Status::InvalidArgument(std::string(which) + " side: " + s.message());
}

}  // namespace

Result<TraceDiffSide> ReadTraceDiffSide(std::string_view which, const std::string& path,
                                        std::optional<int> rank, const TraceDiffOptions& options) {
  Result<std::vector<std::string>> files = TraceFilesIn(path);
  if (!files.ok()) return Named(which, files.status());
  std::optional<TraceFile> chosen;
  for (const std::string& file : *files) {
    Result<TraceFile> trace = ReadTraceFile(file, TraceRows::kEvery);
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
                                 std::optional<int> rank, const TraceDiffOptions& options) {
  std::future<Result<TraceDiffSide>> test_side = std::async(
      std::launch::async, [&] { return ReadTraceDiffSide("test", test, rank, options); });
  Result<TraceDiffSide> a = ReadTraceDiffSide("control", control, rank, options);
  Result<TraceDiffSide> b = test_side.get();
  if (!a.ok()) return a.status();
  if (!b.ok()) return b.status();
  return DiffTraceOps(std::move(*a), std::move(*b));
}

}  // namespace stallscope
