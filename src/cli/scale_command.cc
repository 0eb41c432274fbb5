// `stallscope scale --procs 1,2,4,8 [--steps N] [--launcher self|torchrun]
// -- CMD ARGS...`: runs CMD at each world size for a bounded number of steps
// (the hook ends each rank after --steps steps: STALLSCOPE_MAX_STEPS), reads
// the steps every rank reports through the hook, and prints throughput,
// speedup, scaling efficiency, the communication ratio estimate, the Amdahl
// fit and what gradient accumulation would give (analyze/run/scaling.h), with
// distributed.scaling_poor and network.comm_ratio_high.
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "analyze/report.h"
#include "analyze/run/scaling.h"
#include "cli/commands.h"
#include "core/host_clock.h"
#include "core/json_text.h"
#include "core/text.h"
#include "record/hook_receiver.h"
#include "record/job.h"
#include "record/recorder.h"
#include "record/supervise.h"
#include "render/distributed.h"
#include "render/report.h"

namespace stallscope {
namespace {

struct ScaleFlags {
  std::string procs = "1,2,4,8";
  int64_t steps = 30;
  std::string launcher = "self";
  double timeout = 600;
  bool json = false;
  std::vector<std::string> command;
};

Result<std::vector<int>> ParseProcs(const std::string& text) {
  std::vector<int> out;
  std::vector<std::string_view> parts;
  for (size_t at = 0;;) {
    size_t comma = text.find(',', at);
    parts.push_back(std::string_view(text).substr(at, comma - at));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  for (std::string_view part : parts) {
    std::optional<uint64_t> v = ParseUint(Trim(part));
    if (!v || *v < 1 || *v > 4096) {
      return Status::InvalidArgument(fmt::format(
          "--procs {}: '{}' is not a world size (a list of counts 1..4096, e.g. 1,2,4,8)", text,
          part));
    }
    if (std::find(out.begin(), out.end(), static_cast<int>(*v)) == out.end()) {
      out.push_back(static_cast<int>(*v));
    }
  }
  if (out.empty()) return Status::InvalidArgument("--procs: give at least one size");
  std::sort(out.begin(), out.end());
  return out;
}

struct SizeRun {
  HookEvents events;
  JobExit exit;
  bool timed_out = false;
  bool interrupted = false;
};

// Runs CMD with `procs` ranks until it ends, collecting the hook's events.
Result<SizeRun> RunSize(const ScaleFlags& flags, int procs, int signal_fd) {
  Result<HookReceiver> hook = HookReceiver::Create();
  if (!hook.ok()) return hook.status();
  std::vector<std::pair<std::string, std::string>> env = HookEnvironment(hook->socket_path());
  env.emplace_back("STALLSCOPE_MAX_STEPS", std::to_string(flags.steps));
  Result<Job> job = Status::Ok();
  if (flags.launcher == "torchrun") {
    std::vector<std::string> argv = {"torchrun", "--standalone",
                                     fmt::format("--nproc_per_node={}", procs), "--no_python"};
    argv.insert(argv.end(), flags.command.begin(), flags.command.end());
    job = Job::Start(argv, env, /*stdout_to_stderr=*/true);
  } else {
    job = Job::StartRanks(flags.command, env, RankLayout{.procs = procs},
                          /*stdout_to_stderr=*/true);
  }
  if (!job.ok()) return job.status();
  SuperviseOptions options;
  options.signal_fd = signal_fd;
  options.start_ns = MonotonicNs();
  options.deadline_ns = options.start_ns + static_cast<int64_t>(flags.timeout * 1e9);
  options.timeout_signal = SIGTERM;
  SizeRun run;
  SupervisedRun supervised = SuperviseJob(*job, *hook, options, run.events);
  run.exit = supervised.exit;
  run.timed_out = supervised.timed_out;
  run.interrupted = supervised.interrupted;
  return run;
}

}  // namespace

CommandRunner SetupScale(CLI::App& app) {
  auto flags = std::make_shared<ScaleFlags>();
  app.add_option("--procs", flags->procs, "world sizes to run, comma separated")
      ->capture_default_str();
  app.add_option("--steps", flags->steps,
                 "steps per rank at each size (the hook ends the job after them)")
      ->capture_default_str();
  app.add_option("--launcher", flags->launcher,
                 "self: start the ranks with torchrun's variables; torchrun: torchrun "
                 "--standalone --nproc_per_node=K --no_python CMD")
      ->check(CLI::IsMember({"self", "torchrun"}))
      ->capture_default_str();
  app.add_option("--timeout", flags->timeout, "seconds allowed per size before the job is ended")
      ->capture_default_str();
  app.add_flag("--json", flags->json, "machine output (schema stallscope.report/1)");
  app.add_option("command", flags->command, "the training command, after --")->required();
  return [flags]() {
    Result<std::vector<int>> sizes = ParseProcs(flags->procs);
    if (!sizes.ok()) {
      std::fprintf(stderr, "stallscope scale: %s\n", sizes.status().message().c_str());
      return kExitUsage;
    }
    if (flags->steps < kScaleWarmupSteps + 2 || flags->steps > 1000000) {
      std::fprintf(stderr,
                   "stallscope scale: --steps %lld: must be at least %lld (the first %lld are "
                   "warm-up)\n",
                   static_cast<long long>(flags->steps),
                   static_cast<long long>(kScaleWarmupSteps + 2),
                   static_cast<long long>(kScaleWarmupSteps));
      return kExitUsage;
    }
    if (!(flags->timeout > 0)) {
      std::fprintf(stderr, "stallscope scale: --timeout %g: must be positive\n", flags->timeout);
      return kExitUsage;
    }
    BlockRecordSignals();
    Result<int> opened = OpenRecordSignalFd();
    if (!opened.ok()) {
      std::fprintf(stderr, "stallscope scale: %s\n", opened.status().message().c_str());
      return kExitCouldNotRun;
    }
    const int signal_fd = *opened;
    const std::string command = JoinCommand(flags->command);
    const int64_t began_ns = MonotonicNs();
    const std::string began_utc = UtcNow();
    std::vector<ScalePoint> points;
    std::vector<std::string> notes;
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    for (int procs : *sizes) {
      std::fprintf(stderr, "stallscope scale: %d proc%s, %lld steps: %s\n", procs,
                   procs == 1 ? "" : "s", static_cast<long long>(flags->steps), command.c_str());
      Result<SizeRun> run = RunSize(*flags, procs, signal_fd);
      if (!run.ok()) {
        std::fprintf(stderr, "stallscope scale: %s\n", run.status().message().c_str());
        close(signal_fd);
        return run.status().IsNotFound() ? 127 : kExitCouldNotRun;
      }
      if (run->interrupted) {
        std::fprintf(stderr, "stallscope scale: interrupted at %d procs; nothing reported\n",
                     procs);
        close(signal_fd);
        return kExitCouldNotRun;
      }
      ScalePoint point =
          MeasureScalePoint(procs, run->events.steps, run->events.syncs, run->events.loaders);
      std::string why;
      if (run->timed_out) {
        why = fmt::format("it ran past --timeout {} s and was ended", flags->timeout);
      } else if (run->exit.ShellStatus() != 0) {
        why = fmt::format("it exited with status {}", run->exit.ShellStatus());
      } else if (point.ranks_reported == 0) {
        why = run->events.steps.empty()
                  ? "it reported no steps through the hook (wrap its loader: `for batch in "
                    "stallscope.loader(loader)`)"
                  : fmt::format("it reported fewer than {} steps per rank (raise --steps)",
                                kScaleWarmupSteps + 2);
      }
      if (!why.empty()) {
        std::fprintf(stderr, "stallscope scale: at %d procs %s: %s\n", procs, command.c_str(),
                     why.c_str());
        close(signal_fd);
        return kExitCouldNotRun;
      }
      if (point.ranks_reported < procs) {
        notes.push_back(
            fmt::format("at {} procs only {} ranks reported steps", procs, point.ranks_reported));
      }
      bool batch_known = false;
      for (const LoaderConfig& l : run->events.loaders) batch_known |= l.batch_size > 0;
      if (!batch_known) {
        notes.push_back(
            fmt::format("at {} procs the hook saw no batch size: samples/s counts steps", procs));
      }
      points.push_back(point);
    }
    close(signal_fd);
    if (cpus > 0 && sizes->back() > cpus) {
      notes.push_back(fmt::format(
          "{} ranks ran on {} CPUs: CPU-bound ranks share cores, so the scaling measured here "
          "includes that contention, not only communication",
          sizes->back(), cpus));
    }
    ScaleAnalysis analysis = AnalyzeScaling(points);
    Report report =
        ReportOf(CheckScaling(analysis, command), {Layer::kNetwork, Layer::kDistributed}, notes);
    ReportHeader header{"scale", HostName(), began_utc,
                        static_cast<double>(MonotonicNs() - began_ns) / 1e9};
    if (flags->json) {
      nlohmann::ordered_json j = ReportToJson(header, report);
      j["scale"] = ScaleToJson(analysis, command, flags->steps, flags->launcher);
      std::fputs((JsonText(j) + "\n").c_str(), stdout);
    } else {
      std::fputs(
          ("\n" + RenderScaleTable(analysis) + "\n" + RenderReportText(header, report)).c_str(),
          stdout);
    }
    return kExitOk;
  };
}

}  // namespace stallscope
