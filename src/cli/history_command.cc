// `stallscope history PATH... [--json] [--html F [--force]] [--metric M]
// [--since DATE] [--job N]`:
// finds the run files under PATH (files, folders searched recursively,
// globs), reads them in parallel keeping one summary each
// (analyze/run/history.h), groups them into runs and jobs, finds each job's
// change points, compares each change's two representative runs with
// `diff`'s analysis (analyze/run/diff.h, the two runs read again), and
// prints the text or the stallscope.history/1 JSON (render/run_history.h),
// and with --html writes the page of charts (render/run_history_html.h).
#include <glob.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "app/run_files.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "core/atomic_file.h"
#include "core/host_clock.h"
#include "core/json_text.h"
#include "core/text.h"
#include "core/threads.h"
#include "render/run_history.h"
#include "render/run_history_html.h"

namespace stallscope {
namespace {

namespace fs = std::filesystem;

// Every file PATH names: itself, the *.db files under a folder, a glob's
// matches. A path that names nothing is a note.
std::vector<std::string> FindRunFiles(const std::vector<std::string>& paths,
                                      std::vector<std::string>& notes) {
  std::vector<std::string> out;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<std::string> found;
      for (auto it = fs::recursive_directory_iterator(
               p, fs::directory_options::skip_permission_denied, ec);
           !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (it->is_regular_file(ec) && it->path().extension() == ".db") {
          found.push_back(it->path().string());
        }
      }
      if (found.empty()) notes.push_back(p + ": no run file (*.db) in this folder");
      std::sort(found.begin(), found.end());
      out.insert(out.end(), found.begin(), found.end());
    } else if (fs::exists(p, ec)) {
      out.push_back(p);
    } else {
      glob_t g{};
      if (glob(p.c_str(), 0, nullptr, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; ++i) out.push_back(g.gl_pathv[i]);
      } else {
        notes.push_back(p + ": no such file, folder or match");
      }
      globfree(&g);
    }
  }
  return out;
}

// Reads every file, one thread per CPU, keeping only its summary. A file
// that is not a run file is a note; one of a newer schema is the error.
Status Summarize(const std::vector<std::string>& files, std::vector<HistoryRun>& out,
                 std::vector<std::string>& notes) {
  std::vector<std::optional<HistoryRun>> runs(files.size());
  std::vector<std::string> errors(files.size());
  std::atomic<size_t> next{0};
  auto work = [&]() {
    for (size_t i; (i = next++) < files.size();) {
      Result<RunAnalysis> run = AnalyzeRunFile(files[i]);
      if (run.ok()) {
        runs[i] = SummarizeRunFile(*run);
      } else {
        errors[i] = std::string(run.status().message());
      }
    }
  };
  RunOnThreads(std::clamp<size_t>(UsableCpus(), 1, std::max<size_t>(1, files.size())),
               [&](size_t) { work(); });
  for (size_t i = 0; i < files.size(); ++i) {
    if (runs[i]) {
      out.push_back(std::move(*runs[i]));
    } else if (errors[i].find("newer stallscope") != std::string::npos) {
      return Status::InvalidArgument(errors[i]);
    } else {
      notes.push_back("skipped " + files[i] + ": " + errors[i]);
    }
  }
  return Status::Ok();
}

Result<std::vector<RunAnalysis>> ReadRun(const HistoryRun& run) {
  std::vector<RunAnalysis> out;
  for (const std::string& f : run.files) {
    Result<RunAnalysis> r = AnalyzeRunFile(f);
    if (!r.ok()) return r.status();
    out.push_back(std::move(*r));
  }
  return out;
}

// --job: a number of the list (1-based), else a job's name or script, or
// the script's file name.
Result<size_t> PickJob(const std::vector<HistoryJob>& jobs, const std::string& wanted) {
  if (std::optional<int64_t> n = ParseInt(wanted)) {
    if (*n < 1 || static_cast<size_t>(*n) > jobs.size()) {
      return Status::InvalidArgument("--job " + wanted + ": there are " +
                                     std::to_string(jobs.size()) + " jobs");
    }
    return static_cast<size_t>(*n - 1);
  }
  std::vector<std::string> names;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const std::string& name = jobs[i].identity.name;
    const size_t slash = name.rfind('/');
    if (name == wanted || (slash != std::string::npos && name.substr(slash + 1) == wanted)) {
      return i;
    }
    names.push_back(name);
  }
  return Status::InvalidArgument("--job " + wanted +
                                 ": no job of that name or script; the jobs: " + Join(names, ", "));
}

}  // namespace

CommandRunner SetupHistory(CLI::App& app) {
  struct Flags {
    std::vector<std::string> paths;
    bool json = false;
    std::string html;
    bool force = false;
    std::string metric = "step";
    std::string since;
    std::string job;
  };
  auto flags = std::make_shared<Flags>();
  app.add_option("paths", flags->paths,
                 "run files, folders of run files (searched recursively) or globs")
      ->required();
  app.add_flag("--json", flags->json, "machine output (schema stallscope.history/1)");
  app.add_option("--html", flags->html,
                 "also write a self-contained HTML page: each figure over the runs, the change "
                 "points marked");
  app.add_flag("--force", flags->force, "let --html overwrite an existing file");
  app.add_option("--metric", flags->metric,
                 "the series split into segments: step (median step time), data_wait, "
                 "steps_per_s");
  app.add_option("--since", flags->since,
                 "only runs started on or after DATE: an ISO 8601 date or time in UTC "
                 "(2026-03-04, 2026-03-04T09:12) or an age (30m, 12h, 7d, 2w)");
  app.add_option("--job", flags->job,
                 "report only job N of the list, or the job of that name or script (when PATH "
                 "holds several)");
  return [flags]() {
    std::optional<HistoryMetric> metric = HistoryMetricNamed(flags->metric);
    if (!metric) {
      return Fail("history",
                  "--metric takes step, data_wait or steps_per_s; got '" + flags->metric + "'",
                  kExitUsage);
    }
    std::optional<double> since;
    if (!flags->since.empty()) {
      Result<double> s = ParseSince(flags->since, static_cast<double>(std::time(nullptr)));
      if (!s.ok()) return Fail("history", s.status(), /*usage=*/true);
      since = *s;
    }
    if (!flags->html.empty()) {
      if (Status s = CheckOutputPath(flags->html, flags->force, "--html"); !s.ok()) {
        return Fail("history", s, /*usage=*/true);
      }
    }
    std::vector<std::string> notes;
    std::vector<std::string> files = FindRunFiles(flags->paths, notes);
    if (files.empty()) {
      std::string why = notes.empty() ? "no run file found" : notes.front();
      return Fail("history", "nothing to read: " + why, kExitUsage);
    }
    std::vector<HistoryRun> summaries;
    {
      ProgressLine progress("reading " + std::to_string(files.size()) + " run files...");
      if (Status s = Summarize(files, summaries, notes); !s.ok()) {
        return Fail("history", s, /*usage=*/false);
      }
    }
    if (summaries.empty()) {
      return Fail("history", "no run file could be read among " + std::to_string(files.size()),
                  kExitCouldNotRun);
    }
    if (since) {
      size_t read = summaries.size();
      std::erase_if(summaries, [&](const HistoryRun& r) { return r.start_s < *since; });
      if (summaries.empty()) {
        return Fail("history",
                    "--since " + flags->since + ": none of the " + std::to_string(read) +
                        " run files started on or after " + UtcTime(static_cast<time_t>(*since)),
                    kExitCouldNotRun);
      }
    }
    std::vector<HistoryJob> jobs = BuildHistory(std::move(summaries), *metric);
    if (!flags->job.empty()) {
      Result<size_t> picked = PickJob(jobs, flags->job);
      if (!picked.ok()) return Fail("history", picked.status(), kExitUsage);
      jobs = {std::move(jobs[*picked])};
    }
    {
      ProgressLine progress("comparing the runs on each side of each change...");
      for (HistoryJob& job : jobs) {
        for (size_t k = 0; k < job.changes.size(); ++k) {
          HistoryChange& c = job.changes[k];
          auto a = ReadRun(job.runs[c.before]);
          auto b = ReadRun(job.runs[c.after]);
          if (a.ok() && b.ok()) {
            c.diff = DiffRuns(*a, *b, std::nullopt, std::nullopt, InputNear(job, k, false),
                              InputNear(job, k, true));
          }
        }
      }
    }
    if (!flags->html.empty()) {
      if (Status s = WriteFileAtomically(flags->html, RenderHistoryHtml(jobs, *metric, notes));
          !s.ok()) {
        return Fail("history", s, /*usage=*/false);
      }
      std::fprintf(stderr, "stallscope history: wrote %s\n", flags->html.c_str());
    }
    if (flags->json) {
      std::fputs((JsonText(HistoryJson(jobs, *metric, notes)) + "\n").c_str(), stdout);
    } else {
      std::fputs(RenderHistoryText(jobs, *metric, notes).c_str(), stdout);
    }
    return kExitOk;
  };
}

}  // namespace stallscope
