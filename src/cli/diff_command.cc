// `stallscope diff A.db B.db [--json] [--html F [--force]]` and `diff --a A1.db --a A2.db --b
// B1.db --b B2.db` (the run files of a job that spanned nodes, one side
// each): reads and judges each run file as `report` does, then compares
// the two sides (analyze/run/diff.h) and prints the text or the
// stallscope.diff/1 JSON (render/run_diff.h).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "app/profile_traces.h"
#include "app/run_files.h"
#include "app/trace_diff_files.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "core/atomic_file.h"
#include "core/json_text.h"
#include "render/run_diff.h"

namespace stallscope {
namespace {

// How many of the trace diff's ops the GPU part lists.
constexpr size_t kDiffTopOps = 8;

// Both sides profiled: the trace diff of their first run files' traces, its
// ops whose count or time changed most. One that cannot be read is a note.
void AddTraceDiff(const std::string& a, const std::string& b, RunDiff& diff) {
  Result<TraceDiff> ops = DiffTracePaths(ProfileTraceDir(a), ProfileTraceDir(b), std::nullopt, {});
  if (!ops.ok()) {
    diff.notes.push_back("trace diff: " + ops.status().message());
    return;
  }
  for (const TraceOpDiff& op : ops->ops) {
    if (diff.gpu_top_ops.size() == kDiffTopOps || (op.diff_count() == 0 && op.diff_us() == 0)) {
      break;
    }
    diff.gpu_top_ops.push_back(op);
  }
  for (const std::string& note : ops->notes) diff.notes.push_back("trace diff: " + note);
}

}  // namespace

CommandRunner SetupDiff(CLI::App& app) {
  struct Flags {
    std::vector<std::string> files;
    std::vector<std::string> a, b;
    bool json = false;
    std::string html;
    bool force = false;
  };
  auto flags = std::make_shared<Flags>();
  app.add_option("runs", flags->files, "A.db B.db: the good run, then the one to explain");
  app.add_option("--a", flags->a, "a run file of side A (repeat for each node's file)");
  app.add_option("--b", flags->b, "a run file of side B (repeat for each node's file)");
  app.add_flag("--json", flags->json, "machine output (schema stallscope.diff/1)");
  app.add_option("--html", flags->html,
                 "also write one self-contained HTML page: both runs' step time charted, the "
                 "parts of the step, what else changed");
  app.add_flag("--force", flags->force, "let --html overwrite an existing file");
  return [flags]() {
    std::vector<std::string> a = flags->a, b = flags->b;
    if (!flags->files.empty() && (!a.empty() || !b.empty())) {
      return Fail("diff", "give the two run files as A.db B.db, or every file with --a/--b",
                  kExitUsage);
    }
    if (!flags->files.empty()) {
      if (flags->files.size() != 2) {
        return Fail("diff",
                    "takes two run files, A.db (the good run) and B.db (the run to explain); "
                    "got " +
                        std::to_string(flags->files.size()),
                    kExitUsage);
      }
      a = {flags->files[0]};
      b = {flags->files[1]};
    }
    if (a.empty() || b.empty()) {
      return Fail("diff",
                  std::string("needs run files on both sides: --") + (a.empty() ? "a" : "b") +
                      " is missing",
                  kExitUsage);
    }
    if (!flags->html.empty()) {
      if (Status s = CheckOutputPath(flags->html, flags->force, "--html"); !s.ok()) {
        return Fail("diff", s, /*usage=*/true);
      }
    }
    auto read = [](const std::vector<std::string>& paths, std::vector<RunAnalysis>* out) {
      for (const std::string& path : paths) {
        Result<RunAnalysis> run = AnalyzeRunFile(path);
        if (!run.ok()) return run.status();
        out->push_back(std::move(*run));
      }
      return Status::Ok();
    };
    std::vector<RunAnalysis> side_a, side_b;
    if (Status s = read(a, &side_a); !s.ok()) return Fail("diff", s, /*usage=*/false);
    if (Status s = read(b, &side_b); !s.ok()) return Fail("diff", s, /*usage=*/false);
    // The GPU's time where the runs were profiled (run --profile).
    std::vector<std::string> trace_notes;
    std::optional<DiffGpuSide> gpu_a, gpu_b;
    {
      ProgressLine progress("reading the runs' profiler traces...");
      gpu_a = GpuSideOf(ReadRunTraces(a, trace_notes));
      gpu_b = GpuSideOf(ReadRunTraces(b, trace_notes));
    }
    RunDiff diff = DiffRuns(side_a, side_b, gpu_a, gpu_b);
    diff.notes.insert(diff.notes.end(), trace_notes.begin(), trace_notes.end());
    if (gpu_a && gpu_b) AddTraceDiff(a.front(), b.front(), diff);
    if (!flags->html.empty()) {
      if (Status s = WriteFileAtomically(flags->html, RenderDiffHtml(diff)); !s.ok()) {
        return Fail("diff", s, /*usage=*/false);
      }
      std::fprintf(stderr, "stallscope diff: wrote %s\n", flags->html.c_str());
    }
    if (flags->json) {
      std::fputs((JsonText(DiffJson(diff)) + "\n").c_str(), stdout);
    } else {
      std::fputs(RenderDiffText(diff).c_str(), stdout);
    }
    return kExitOk;
  };
}

}  // namespace stallscope
