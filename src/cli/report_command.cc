// `stallscope report RUN.db [RUN2.db ...] [--json] [--html F [--force]]`: the
// findings and per-epoch table of a recorded run file, as `run` printed
// them; several files (one per node) as one job.
// `stallscope report --slurm-job ID [--dir DIR]`: the files the Slurm
// prolog's recorders wrote for job ID (app/slurm_job.h), as one job, also
// written to report.txt and report.json beside them.
#include <pwd.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>

#include "app/run_files.h"
#include "app/slurm_job.h"
#include "cli/commands.h"
#include "cli/run_analysis.h"
#include "core/atomic_file.h"
#include "probe/slurm_job.h"

namespace stallscope {

namespace {

// The job's folder of run files, merged and written beside them.
template <typename Flags>
Result<RunAnalysis> SlurmJobReport(const Flags& flags) {
  if (Status valid = CheckSlurmJobId(flags.slurm_job); !valid.ok()) return valid;
  Result<SlurmSettings> settings = LoadSlurmSettings();
  if (!settings.ok()) return settings.status();
  std::string dir = flags.dir;
  if (dir.empty()) {
    char cwd[4096];
    if (getcwd(cwd, sizeof cwd) == nullptr) return Status::FromErrno("the current folder", errno);
    dir = cwd;
  }
  const struct passwd* me = getpwuid(getuid());
  Result<std::string> folder =
      ExpandSlurmFolder(settings->output, dir, flags.slurm_job, me ? me->pw_name : "");
  if (!folder.ok()) return folder.status();
  Result<RunAnalysis> run = WriteSlurmJobReport(*folder);
  if (run.ok())
    std::fprintf(stderr, "stallscope report: wrote %s/report.txt and report.json\n",
                 folder->c_str());
  return run;
}

}  // namespace

CommandRunner SetupReport(CLI::App& app) {
  struct Flags {
    std::vector<std::string> paths;
    bool json = false;
    std::string html;
    bool force = false;
    std::string slurm_job;
    std::string dir;
  };
  auto flags = std::make_shared<Flags>();
  app.add_option("run_files", flags->paths,
                 "a run file written by run or watch; several (one per node): one job");
  app.add_option("--slurm-job", flags->slurm_job,
                 "ID: the run files Slurm's prolog recorded for job ID (docs/slurm.md), as one "
                 "job; also writes report.txt and report.json beside them");
  app.add_option("--dir", flags->dir,
                 "with --slurm-job: the job's working folder (default: here), where the job's "
                 "folder of run files is (stallscope-ID unless /etc/stallscope/slurm.conf says)");
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
    if (flags->slurm_job.empty() == flags->paths.empty()) {
      return Fail("report", Status::InvalidArgument("give run files or --slurm-job ID, not both"),
                  /*usage=*/true);
    }
    // One analysis for the page and the text.
    Result<RunAnalysis> run =
        flags->slurm_job.empty() ? AnalyzeRunFiles(flags->paths) : SlurmJobReport(*flags);
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
