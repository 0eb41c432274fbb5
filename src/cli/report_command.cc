// `stallscope report RUN.db [RUN2.db ...] [--json] [--html F [--force]]`: the
// findings and per-epoch table of a recorded run file, as `run` printed
// them; several files (one per node) as one job.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>

#include "app/run_files.h"
#include "cli/commands.h"
#include "cli/run_analysis.h"
#include "core/atomic_file.h"

namespace stallscope {

CommandRunner SetupReport(CLI::App& app) {
  struct Flags {
    std::vector<std::string> paths;
    bool json = false;
    std::string html;
    bool force = false;
  };
  auto flags = std::make_shared<Flags>();
  app.add_option("run_files", flags->paths,
                 "a run file written by run or watch; several (one per node): one job")
      ->required();
  app.add_flag("--json", flags->json, "machine output (schema stallscope.report/1)");
  app.add_option("--html", flags->html,
                 "also write one self-contained HTML page: charts of the timeline, findings");
  app.add_flag("--force", flags->force, "let --html overwrite an existing file");
  return [flags]() {
    if (Status s = flags->html.empty() ? Status::Ok()
                                       : CheckOutputPath(flags->html, flags->force, "--html");
        !s.ok()) {
      std::fprintf(stderr, "stallscope report: %s\n", s.message().c_str());
      return kExitUsage;
    }
    // One analysis for the page and the text.
    Result<RunAnalysis> run = AnalyzeRunFiles(flags->paths);
    if (!run.ok()) {
      std::fprintf(stderr, "stallscope report: %s\n", run.status().message().c_str());
      return kExitCouldNotRun;
    }
    if (!flags->html.empty()) {
      if (Status written = WriteRunHtml(*run, flags->html); !written.ok()) {
        std::fprintf(stderr, "stallscope report: %s\n", written.message().c_str());
        return kExitCouldNotRun;
      }
      std::fprintf(stderr, "stallscope report: wrote %s\n", flags->html.c_str());
    }
    return PrintRunReport("report", *run, flags->json, stdout);
  };
}

}  // namespace stallscope
