#include "app/run_files.h"

#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <optional>
#include <thread>

#include "analyze/run/job_analysis.h"
#include "core/atomic_file.h"
#include "core/threads.h"
#include "render/run_report.h"
#include "store/run_reader.h"

namespace stallscope {

namespace {

Result<RunAnalysis> ReadAndAnalyze(const std::string& path, bool node_of_job) {
  Result<Timeline> timeline = ReadRun(path);
  if (!timeline.ok()) return timeline.status();
  std::optional<std::string> baseline;
  if (Result<std::string> read = ReadBaseline(path); read.ok()) baseline = std::move(*read);
  return AnalyzeRun(path, std::move(*timeline), std::move(baseline), ReadStoredFindings(path),
                    node_of_job);
}

// Files read at once: each thread holds one file's reading; memory is the
// files' (held for the job anyway), not the threads'.
constexpr unsigned kMaxReaderThreads = 8;

}  // namespace

Result<RunAnalysis> AnalyzeRunFile(const std::string& path) { return ReadAndAnalyze(path, false); }

Result<RunAnalysis> AnalyzeRunFiles(const std::vector<std::string>& paths) {
  if (paths.size() == 1) return AnalyzeRunFile(paths.front());
  // A job's records are a few large vectors per file (steps, sync records,
  // samples), freed as the job's analysis merges and judges them. Each in a
  // mapping of its own, what is freed goes back to the system at once, and
  // the peak is what the job holds, not what freed holes in malloc's heaps
  // add to it; glibc's default threshold grows to 32 MiB after the first
  // large free, putting every node's vectors in those heaps. (Process-wide
  // and kept: what runs after, the report's rendering, allocates little.)
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  // Each node's file read and judged on its own, several at once; the first
  // file (in the order given) that cannot be read is the error.
  std::vector<std::optional<Result<RunAnalysis>>> read(paths.size());
  std::vector<char> trimmed(paths.size(), 0);
  std::vector<NodeRow> described(paths.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < paths.size(); i = next++) {
      Result<RunAnalysis> one = ReadAndAnalyze(paths[i], /*node_of_job=*/true);
      if (one.ok()) {
        described[i] = DescribeNode(*one);
        trimmed[i] = KeepWhatTheJobNeeds(*one);
      }
      read[i].emplace(std::move(one));
    }
  };
  RunOnThreads(
      std::clamp<size_t>(UsableCpus(), 1, std::min<size_t>(kMaxReaderThreads, paths.size())),
      [&](size_t) { work(); });
  std::vector<RunAnalysis> nodes;
  nodes.reserve(paths.size());
  for (std::optional<Result<RunAnalysis>>& one : read) {
    if (!one->ok()) return one->status();
    nodes.push_back(std::move(**one));
  }
  read.clear();
  // The job's timeline is its first node's: whole, read again if it was
  // trimmed (node 0's file not given, or older than the node table).
  if (const size_t first = FirstNodeOfJob(nodes); trimmed[first]) {
    Result<RunAnalysis> whole = ReadAndAnalyze(paths[first], /*node_of_job=*/true);
    if (!whole.ok()) return whole.status();
    nodes[first] = std::move(*whole);
  }
  // What the readers freed (each file's processes, GPU and port samples) sits
  // in their threads' malloc arenas, which the job's analysis on this thread
  // does not reuse: hand it back before the analysis grows.
  malloc_trim(0);
  return AnalyzeJob(std::move(nodes), std::move(described));
}

Status WriteRunHtml(const RunAnalysis& run, const std::string& html_path) {
  return WriteFileAtomically(html_path, RenderRunHtml(run));
}

}  // namespace stallscope
