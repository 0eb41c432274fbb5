#include "app/profile_traces.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <thread>

#include "analyze/trace/rules.h"
#include "core/text.h"
#include "formats/trace/file.h"

namespace stallscope {
namespace {

// rank*.json in `dir`: what the hook writes there, and only that.
void RemoveRankTraces(const std::string& dir) {
  Result<std::vector<std::string>> old = TraceFilesIn(dir);
  if (!old.ok()) return;
  for (const std::string& f : *old) {
    std::string_view name = std::string_view(f).substr(f.rfind('/') + 1);
    if (StartsWith(name, "rank") && EndsWith(name, ".json")) unlink(f.c_str());
  }
}

}  // namespace

Result<std::vector<TraceRankBreakdown>> BreakDownTraceFiles(const std::vector<std::string>& files,
                                                            const TraceOptions& options,
                                                            std::optional<int> rank,
                                                            size_t threads) {
  std::vector<std::optional<Result<TraceRankBreakdown>>> results(files.size());
  const size_t cpus = TraceThreads(threads);
  TraceOptions each = options;
  // Each file's threads: the CPUs the files leave, a part of its text each
  // (at most kMaxTraceParseThreads), then its critical path beside the
  // other analyses where that leaves two or more.
  TraceReading how;
  how.parse_threads = ParseThreadsEach(cpus, files.size());
  each.critical_path_beside = *how.parse_threads >= 2;
  {
    std::atomic<size_t> next{0};
    auto work = [&] {
      for (size_t i = next++; i < files.size(); i = next++) {
        Result<TraceFile> trace = ReadTraceFile(files[i], how);
        if (!trace.ok()) {
          results[i] = Result<TraceRankBreakdown>(trace.status());
          continue;
        }
        if (rank && trace->rank.value_or(0) != *rank) continue;
        results[i] = BreakDownTrace(*trace, each);
      }
    };
    std::vector<std::thread> pool;
    for (size_t t = 1; t < std::min(files.size(), cpus); ++t) pool.emplace_back(work);
    work();
    for (std::thread& t : pool) t.join();
  }
  std::vector<TraceRankBreakdown> ranks;
  for (std::optional<Result<TraceRankBreakdown>>& r : results) {
    if (!r) continue;
    if (!r->ok()) return r->status();
    ranks.push_back(std::move(**r));
  }
  if (ranks.empty()) {
    return Status::NotFound("no trace of rank " + std::to_string(rank.value_or(0)) +
                            " among the files given");
  }
  std::sort(ranks.begin(), ranks.end(),
            [](const TraceRankBreakdown& a, const TraceRankBreakdown& b) {
              return a.rank != b.rank ? a.rank < b.rank : a.path < b.path;
            });
  for (size_t i = 1; i < ranks.size(); ++i) {
    if (ranks[i].rank == ranks[i - 1].rank) {
      return Status::InvalidArgument("two traces of rank " + std::to_string(ranks[i].rank) + ": " +
                                     ranks[i - 1].path + " and " + ranks[i].path +
                                     " (one file per rank; pass --rank or one job's directory)");
    }
  }
  return ranks;
}

std::string ProfileTraceDir(const std::string& run_path) { return run_path + ".traces"; }

FindingsWithNotes JudgeProfileTraces(const std::string& dir, const TraceStepRange& range) {
  FindingsWithNotes out;
  std::string asked = std::to_string(range.first) + ":" + std::to_string(range.last);
  Result<std::vector<std::string>> files = TraceFilesIn(dir);
  if (!files.ok()) {
    out.notes.push_back("--profile " + asked + ": no profiler trace in " + dir +
                        " (the job timed fewer steps through stallscope.loader, or "
                        "torch.profiler could not start)");
    return out;
  }
  TraceOptions options;
  options.include_last_step = true;  // the hook closed the window after step B
  Result<std::vector<TraceRankBreakdown>> ranks = BreakDownTraceFiles(*files, options, {});
  if (!ranks.ok()) {
    out.notes.push_back("--profile " + asked + ": " + ranks.status().message());
    return out;
  }
  CollectiveSplit split = SplitCollectives(*ranks, {});
  out = CheckTraces(*ranks, &split);
  for (const TraceRankBreakdown& r : *ranks) {
    out.notes.insert(out.notes.end(), r.notes.begin(), r.notes.end());
  }
  out.notes.push_back("--profile " + asked + ": " + std::to_string(ranks->size()) +
                      " rank trace(s) in " + dir + " (stallscope trace " + dir +
                      " for the breakdowns)");
  return out;
}

std::vector<TraceRankBreakdown> ReadRunTraces(const std::vector<std::string>& run_paths,
                                              std::vector<std::string>& notes) {
  std::vector<TraceRankBreakdown> out;
  TraceOptions options;
  options.include_last_step = true;  // the hook closed the window after step B
  for (const std::string& run : run_paths) {
    const std::string dir = ProfileTraceDir(run);
    struct stat st {};
    if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    Result<std::vector<std::string>> files = TraceFilesIn(dir);
    if (!files.ok()) continue;  // an empty directory: the window never opened
    for (const std::string& file : *files) {
      Result<std::vector<TraceRankBreakdown>> ranks = BreakDownTraceFiles({file}, options, {});
      if (!ranks.ok()) {
        notes.push_back("traces of " + run + ": " + ranks.status().message());
        continue;
      }
      for (TraceRankBreakdown& r : *ranks) out.push_back(std::move(r));
    }
  }
  return out;
}

Status MakeProfileDir(const std::string& dir) {
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return Status::FromErrno("cannot make " + dir, errno);
  }
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0) return Status::FromErrno("cannot read " + dir, errno);
  if (!S_ISDIR(st.st_mode)) {
    return Status::InvalidArgument(dir +
                                   " exists and is not a directory: --profile writes the "
                                   "traces there; move it or choose another --out");
  }
  RemoveRankTraces(dir);
  return Status::Ok();
}

void ClearProfileDir(const std::string& dir) {
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return;
  RemoveRankTraces(dir);
  rmdir(dir.c_str());  // only when empty: anything else in it stays
}

std::string AbsolutePath(const std::string& path) {
  if (!path.empty() && path.front() == '/') return path;
  char cwd[4096];
  if (getcwd(cwd, sizeof cwd) == nullptr) return path;
  return std::string(cwd) + "/" + path;
}

}  // namespace stallscope
