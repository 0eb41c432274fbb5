// `stallscope trace PATH... [--json] [--rank N] [--step-range A:B]
// [--include-last-step] [--straggler-candidates N]` (and `trace --diff
// CONTROL TEST`, cli/trace_diff_command.h): reads PyTorch profiler traces (a file, or a
// directory of per-rank files as HTA reads one), gives HTA's breakdowns per
// rank and the findings they show. Files are read on up to one thread per
// CPU (--threads), a large one's text in parts by the CPUs the files leave
// (formats/trace/file.h). Two files of one rank are an error naming both;
// different world sizes are a note.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <set>

#include "analyze/report.h"
#include "analyze/trace/breakdown.h"
#include "analyze/trace/collectives.h"
#include "analyze/trace/rules.h"
#include "app/profile_traces.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "cli/trace_diff_command.h"
#include "core/host_clock.h"
#include "core/json_text.h"
#include "formats/nccl_log/files.h"
#include "formats/trace/file.h"
#include "render/trace.h"

namespace stallscope {

CommandRunner SetupTrace(CLI::App& app) {
  struct Flags {
    std::vector<std::string> paths;
    bool json = false;
    std::optional<int> rank;
    std::string step_range;
    bool include_last_step = false;
    std::string cp_annotation;
    std::string cp_instance;
    int straggler_candidates = kStragglerCandidates;
    bool diff = false;
    bool same_clock = false;
    int threads = 0;
  };
  auto flags = std::make_shared<Flags>();
  app.add_option("PATH", flags->paths,
                 "a trace (.json, .json.gz) or a directory of per-rank traces (not recursive)")
      ->required();
  app.add_flag("--json", flags->json,
               "machine output (schema stallscope.trace/1; with --diff stallscope.trace_diff/1)");
  app.add_flag("--diff", flags->diff,
               "PATH is CONTROL TEST: the ops and kernels added, removed or changed between "
               "them, as HTA's trace diff (one rank each, the first step by default)");
  app.add_option("--rank", flags->rank, "only this rank's trace");
  app.add_option("--step-range", flags->step_range,
                 "ProfilerStep#A to #B, inclusive (A:B); default: all but the last step, as HTA");
  app.add_flag("--include-last-step", flags->include_last_step,
               "keep the last ProfilerStep (HTA drops it: it is often cut short)");
  app.add_option("--critical-path-annotation", flags->cp_annotation,
                 "the critical path over this annotation's instance (default: ProfilerStep)");
  app.add_option("--critical-path-instance", flags->cp_instance,
                 "which instance, from 0 (N or A:B); default: the second ProfilerStep, else the "
                 "first");
  app.add_option("--straggler-candidates", flags->straggler_candidates,
                 "how many ranks HTA's straggler analysis names (its num_candidates)")
      ->check(CLI::Range(1, 1 << 20));
  app.add_flag("--same-clock", flags->same_clock,
               "the traces share one clock (one host): take their times as written instead of "
               "aligning each rank's clock on the collectives' ends");
  app.add_option("--threads", flags->threads,
                 "at most N threads: a file each, a large file's text in parts (default: one a "
                 "CPU this process may run on)")
      ->check(CLI::Range(1, 1024));
  return [flags]() {
    if (flags->diff) {
      if (flags->include_last_step) {
        return Fail("trace", "--include-last-step does not go with --diff", kExitUsage);
      }
      return RunTraceDiff({flags->paths, flags->json, flags->rank, flags->step_range,
                           static_cast<size_t>(flags->threads)});
    }
    TraceOptions options;
    options.critical_path.annotation = flags->cp_annotation;
    if (!flags->cp_instance.empty()) {
      const std::string& text = flags->cp_instance;
      Result<TraceStepRange> range =
          ParseTraceStepRange(text.find(':') == std::string::npos ? text + ":" + text : text);
      if (!range.ok()) {
        return Fail("trace", "--critical-path-instance " + text + ": want N or A:B", kExitUsage);
      }
      options.critical_path.first_instance = range->first;
      options.critical_path.last_instance = range->last;
    }
    options.include_last_step = flags->include_last_step;
    if (!flags->step_range.empty()) {
      Result<TraceStepRange> range = ParseTraceStepRange(flags->step_range);
      if (!range.ok()) return Fail("trace", range.status(), /*usage=*/true);
      if (flags->include_last_step) {
        return Fail("trace", "--step-range and --include-last-step: give one of them", kExitUsage);
      }
      options.steps = *range;
    }
    std::vector<std::string> files;
    for (const std::string& path : flags->paths) {
      Result<std::vector<std::string>> in = TraceFilesIn(path);
      if (!in.ok()) return Fail("trace", in.status(), /*usage=*/false);
      files.insert(files.end(), in->begin(), in->end());
    }
    std::set<std::string> unique(files.begin(), files.end());
    if (unique.size() != files.size()) return Fail("trace", "a file is named twice", kExitUsage);

    Result<std::vector<TraceRankBreakdown>> read = Status::Ok();
    {
      ProgressLine progress("reading " + std::to_string(files.size()) + " trace file" +
                            (files.size() == 1 ? "" : "s") + "...");
      read = BreakDownTraceFiles(files, options, flags->rank, static_cast<size_t>(flags->threads));
    }
    if (!read.ok()) return Fail("trace", read.status(), /*usage=*/false);
    std::vector<TraceRankBreakdown>& ranks = *read;
    std::vector<std::string> notes;
    std::set<int> worlds;
    for (const TraceRankBreakdown& r : ranks) {
      if (r.world_size) worlds.insert(*r.world_size);
      notes.insert(notes.end(), r.notes.begin(), r.notes.end());
    }
    if (worlds.size() > 1) {
      std::string sizes;
      for (int w : worlds) sizes += (sizes.empty() ? "" : ", ") + std::to_string(w);
      notes.push_back("the traces give different world sizes (" + sizes +
                      "): not one job's ranks?");
    }
    std::vector<StragglerFigures> figures;
    for (const TraceRankBreakdown& r : ranks) figures.push_back(r.straggler);
    PotentialStragglers stragglers = FindPotentialStragglers(figures, flags->straggler_candidates);
    CollectiveSplit split = SplitCollectives(ranks, {flags->same_clock});
    FindingsWithNotes checked = CheckTraces(ranks, &split, &stragglers);
    notes.insert(notes.end(), checked.notes.begin(), checked.notes.end());
    Report report = MakeReport(
        std::move(checked.findings),
        {Layer::kMemory, Layer::kIo, Layer::kNetwork, Layer::kDistributed, Layer::kCode}, notes);
    ReportHeader header{"trace", ShortHostname(Root("/")), UtcNow(), 0};
    std::string out = flags->json
                          ? JsonText(TraceToJson(ranks, header, report, stragglers, split)) + "\n"
                          : RenderTraceText(ranks, header, report, stragglers, split);
    std::fputs(out.c_str(), stdout);
    return kExitOk;
  };
}

}  // namespace stallscope
