// `stallscope ab [--steps N] [--loader-workers W] [--env K=V ...] -- CMD`:
// a degraded comparison (one layer changed, step rates compared, which beats
// guessing from a dashboard). Runs CMD twice for N steps (the hook ends the
// job after N steps: STALLSCOPE_MAX_STEPS), as is and with the change
// (STALLSCOPE_LOADER_WORKERS=W makes the hook rebuild the DataLoader with
// num_workers=W; --env sets variables), and prints both step rates and what
// the difference means (analyze/run/ab_rules.h). With --env NCCL_DEBUG=... the
// degraded run's output is captured to a file and read by the nccl-log
// analysis. Wires record/ (job, hook socket) to analyze/ and render/.
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <tuple>

#include "analyze/nccl_log/rules.h"
#include "analyze/report.h"
#include "analyze/run/ab_rules.h"
#include "cli/commands.h"
#include "core/file.h"
#include "core/host_clock.h"
#include "core/json_text.h"
#include "core/text.h"
#include "formats/nccl_log/nccl_log.h"
#include "record/hook_receiver.h"
#include "record/job.h"
#include "record/recorder.h"
#include "record/supervise.h"
#include "render/ab.h"
#include "render/report.h"

namespace stallscope {
namespace {

struct AbFlags {
  int64_t steps = 60;
  int loader_workers = -1;
  std::vector<std::string> env;
  double timeout = 600;
  bool json = false;
  std::vector<std::string> command;
};

struct AbRun {
  HookEvents events;
  double wall_seconds = 0;
  JobExit exit;
  bool timed_out = false;
};

// Starts the job with our stdout and stderr pointed at `capture` (when
// given) for the time of the fork, so the job writes there and we do not.
Result<Job> StartJob(const std::vector<std::string>& argv,
                     const std::vector<std::pair<std::string, std::string>>& env,
                     const std::string& capture, bool stdout_to_stderr) {
  if (capture.empty()) return Job::Start(argv, env, stdout_to_stderr);
  int fd = open(capture.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno(capture, errno);
  std::fflush(stdout);
  std::fflush(stderr);
  int saved_out = fcntl(1, F_DUPFD_CLOEXEC, 3);
  int saved_err = fcntl(2, F_DUPFD_CLOEXEC, 3);
  dup2(fd, 1);
  dup2(fd, 2);
  Result<Job> job = Job::Start(argv, env, false);
  dup2(saved_out, 1);
  dup2(saved_err, 2);
  close(saved_out);
  close(saved_err);
  close(fd);
  return job;
}

Result<AbRun> RunOnce(const AbFlags& flags, std::vector<std::pair<std::string, std::string>> env,
                      const std::string& capture, int signal_fd) {
  Result<HookReceiver> hook = HookReceiver::Create();
  if (!hook.ok()) return hook.status();
  std::vector<std::pair<std::string, std::string>> hook_env = HookEnvironment(hook->socket_path());
  hook_env.emplace_back("STALLSCOPE_MAX_STEPS", std::to_string(flags.steps));
  env.insert(env.begin(), hook_env.begin(), hook_env.end());
  double start = MonotonicSeconds();
  auto start_ns = static_cast<int64_t>(start * 1e9);
  Result<Job> job = StartJob(flags.command, env, capture, flags.json);
  if (!job.ok()) return job.status();
  AbRun run;
  SuperviseOptions options;
  options.signal_fd = signal_fd;
  options.start_ns = start_ns;
  options.deadline_ns = start_ns + static_cast<int64_t>(flags.timeout * 1e9);
  options.timeout_signal = SIGKILL;
  options.poll_ms = 50;
  SupervisedRun supervised = SuperviseJob(*job, *hook, options, run.events);
  run.exit = supervised.exit;
  run.timed_out = supervised.timed_out;
  run.wall_seconds = MonotonicSeconds() - start;
  return run;
}

int RunAb(const AbFlags& flags) {
  Result<AbPlan> plan = PlanAb(flags.steps, flags.loader_workers, flags.timeout, flags.env,
                               static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
  if (!plan.ok()) return Fail("ab", plan.status(), /*usage=*/true);
  const AbChange& change = plan->change;
  std::string capture;
  if (plan->nccl_debug) {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base && *base ? base : "/tmp") + "/stallscope-ab-XXXXXX";
    std::vector<char> dir(pattern.begin(), pattern.end());
    dir.push_back('\0');
    if (mkdtemp(dir.data()) == nullptr) return Fail("ab", pattern + ": " + std::strerror(errno), 1);
    capture = std::string(dir.data()) + "/degraded.log";
  }
  std::string command = JoinCommand(flags.command);
  const std::string& what = plan->what;
  BlockRecordSignals();
  Result<int> signal_fd = OpenRecordSignalFd();
  if (!signal_fd.ok()) return Fail("ab", signal_fd.status(), false);
  // Closed on every return; the job forwards what SuperviseJob reads from it
  // (as scale's does: signals from a terminal, kill and sigqueue alike).
  struct CloseFd {
    int fd;
    ~CloseFd() { close(fd); }
  } close_signal_fd{*signal_fd};
  std::fprintf(stderr, "stallscope ab: run A (as is), %lld steps: %s\n",
               static_cast<long long>(flags.steps), command.c_str());
  Result<AbRun> a = RunOnce(flags, {}, "", *signal_fd);
  if (!a.ok())
    return Fail("ab", a.status().message(), a.status().IsNotFound() ? 127 : kExitCouldNotRun);
  std::fprintf(stderr, "stallscope ab: run B (degraded: %s)%s\n", what.c_str(),
               capture.empty() ? "" : fmt::format(", output to {}", capture).c_str());
  Result<AbRun> b = RunOnce(flags, plan->degraded_env, capture, *signal_fd);
  if (!b.ok()) return Fail("ab", b.status().message(), kExitCouldNotRun);

  AbRunFigures fa =
      SummarizeAbRun(a->events.steps, a->events.loaders, a->wall_seconds, a->exit.ShellStatus());
  AbRunFigures fb =
      SummarizeAbRun(b->events.steps, b->events.loaders, b->wall_seconds, b->exit.ShellStatus());
  std::vector<std::string> notes;
  for (const auto& [name, run, fig] : {std::tuple{"A", &*a, &fa}, std::tuple{"B", &*b, &fb}}) {
    if (fig->steps == 0) {
      return Fail("ab",
                  fmt::format("run {} reported no steps through the hook (exit status {}): the "
                              "job must import stallscope and iterate stallscope.loader(loader)",
                              name, fig->exit_status),
                  kExitCouldNotRun);
    }
    if (run->timed_out)
      notes.push_back(fmt::format("run {} was killed after --timeout {} s", name, flags.timeout));
    if (fig->steps < flags.steps && !run->timed_out) {
      notes.push_back(
          fmt::format("run {} ended after {} of {} steps (exit status {}): its data "
                      "ran out or it failed",
                      name, fig->steps, flags.steps, fig->exit_status));
    }
  }
  if (change.loader_workers && fb.loader_workers != change.loader_workers) {
    notes.push_back(fmt::format(
        "the degraded run's loader reported num_workers={}, not {}: the hook could not rebuild it "
        "(not a torch DataLoader?)",
        fb.loader_workers ? std::to_string(*fb.loader_workers) : "unknown",
        *change.loader_workers));
  }
  FindingsWithNotes judged = CompareAbRuns(fa, fb, change, command);
  std::vector<Layer> checked = {change.loader_workers ? Layer::kIo : Layer::kCode};
  NcclLogSummary nccl;
  if (!capture.empty()) {
    checked.push_back(Layer::kNetwork);
    checked.push_back(Layer::kDistributed);  // the nccl-log rules judge both
    Result<std::string> text = ReadFile(capture, 256 << 20);
    if (!text.ok()) {
      notes.push_back("nccl log: " + text.status().message());
    } else {
      // The job's output went to the file: show it now, then read it.
      std::fwrite(text->data(), 1, text->size(), stderr);
      nccl = ParseNcclLog(*text);
      if (nccl.nccl_lines == 0) {
        notes.push_back("the degraded run printed no NCCL lines (" + capture +
                        "): the job did not initialise NCCL (a CPU or gloo job)");
      }
      // The log's findings; its notes are nccl-log's own (ab says what it ran).
      for (Finding& f : CheckNcclLog(nccl, std::nullopt, capture).findings) {
        judged.findings.push_back(std::move(f));
      }
    }
  }
  Report report = ReportOf(std::move(judged), checked, notes);
  ReportHeader header{"ab", HostName(), UtcNow(), fa.wall_seconds + fb.wall_seconds};
  if (flags.json) {
    nlohmann::ordered_json j = ReportToJson(header, report);
    j["ab"] = AbToJson(command, flags.steps, what, fa, fb, capture, nccl.nccl_lines);
    std::fputs((JsonText(j) + "\n").c_str(), stdout);
  } else {
    std::string out = "\n" + RenderAbTable(fa, fb, what) + "\n" + RenderReportText(header, report);
    if (!capture.empty()) out += fmt::format("degraded run's output: {}\n", capture);
    std::fputs(out.c_str(), stdout);
  }
  return kExitOk;
}

}  // namespace

CommandRunner SetupAb(CLI::App& app) {
  auto flags = std::make_shared<AbFlags>();
  app.add_option("--steps", flags->steps, "steps per run (the hook ends the job after them)")
      ->capture_default_str();
  app.add_option("--loader-workers", flags->loader_workers,
                 "degraded run: the hook rebuilds the DataLoader with num_workers=N");
  // One value per --env, so `--env A=1 -- CMD` never takes CMD as a value.
  app.add_option("--env", flags->env,
                 "degraded run: set NAME=VALUE (repeatable), e.g. NCCL_DEBUG=INFO")
      ->allow_extra_args(false)
      ->take_all();
  app.add_option("--timeout", flags->timeout, "seconds per run before the job is killed")
      ->capture_default_str();
  app.add_flag("--json", flags->json, "stallscope.report/1 JSON on stdout with an \"ab\" section");
  app.add_option("command", flags->command, "the command to run, after --")->required();
  return [flags]() { return RunAb(*flags); };
}

}  // namespace stallscope
