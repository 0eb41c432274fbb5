// `stallscope run [...] -- CMD ARGS...` and `stallscope watch --pid PID`:
// record a job's timeline into a run file, then print its findings.
// `stallscope report RUN.db`: the findings of a recorded run.
#include <fmt/format.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "analyze/nccl_log/host.h"
#include "app/profile_traces.h"
#include "app/run_job.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "cli/run_analysis.h"
#include "core/host_clock.h"
#include "core/text.h"
#include "dist/launcher.h"
#include "formats/nccl_log/files.h"
#include "formats/trace/file.h"
#include "probe/slurm_job.h"
#include "record/hook_receiver.h"
#include "record/job.h"
#include "record/recorder.h"
#include "store/run_reader.h"
#include "store/run_writer.h"

namespace stallscope {
namespace {

struct RecordFlags {
  RunRequest request;
  bool json = false;
  int pid = 0;
  std::vector<std::string> command;
  bool trace_alloc = false;  // run --trace-alloc: STALLSCOPE_TRACE_ALLOC=on
  std::string profile;       // run --profile A:B: torch.profiler over steps A..B
};

void AddRecordFlags(CLI::App& app, RecordFlags& flags) {
  app.add_option("--interval", flags.request.interval_seconds, "seconds between samples")
      ->capture_default_str();
  app.add_option("--out", flags.request.out,
                 "the run file (SQLite; %h: short host name, %r: node rank); default "
                 "stallscope-run-HOST-YYYYMMDD-HHMMSS.db here");
  app.add_flag("--force", flags.request.force, "overwrite --out if it exists");
  app.add_option("--data", flags.request.data,
                 "the dataset's path: its disk is watched as the data disk (default: the disk "
                 "behind the files the loader workers read)");
  app.add_flag("--json", flags.json, "print the findings as stallscope.report/1 JSON on stdout");
}

// Everything run and watch share once the job exists.
Result<RecordOutcome> Record(Job& job, const RecordFlags& flags, RunWriter& writer,
                             HookReceiver* hook, RunInfo info, RecordOptions options) {
  info.root_pid = job.pid();
  // The job runs already: a file that cannot take this row (its file system
  // filled since it was made) fails the recorder's first write too, which
  // stops the recording and says so; the job goes on.
  (void)writer.WriteRunInfo(info);
  options.interval_seconds = flags.request.interval_seconds;
  options.forward_signals = job.is_child();
  return RecordJob(job, std::move(info), options, hook, writer, stderr);
}

std::string DebugFilePattern() {
  const char* pattern = std::getenv("NCCL_DEBUG_FILE");
  return pattern ? pattern : "";
}

int FailedToStart(const char* command, const Status& status) {
  return Fail(command, status, status.code() == Status::Code::kInvalidArgument);
}

}  // namespace

CommandRunner SetupRun(CLI::App& app) {
  auto flags = std::make_shared<RecordFlags>();
  AddRecordFlags(app, *flags);
  RunRequest& request = flags->request;
  app.add_option("--procs", request.procs,
                 "start CMD as K ranks (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, "
                 "MASTER_ADDR=127.0.0.1, MASTER_PORT set as torchrun sets them)")
      ->check(CLI::Range(1, 4096));
  app.add_option("--nnodes", request.nnodes,
                 "with --procs: the job's node count (torchrun's --nnodes; default: srun's or "
                 "mpirun's, else 1)");
  app.add_option("--node-rank", request.node_rank,
                 "with --procs: this node's place, 0 .. nnodes-1 (RANK = node rank x procs + "
                 "local rank)");
  app.add_option("--master-addr", request.master_addr,
                 "with --procs: node rank 0's address, for MASTER_ADDR (default: the first host "
                 "of SLURM_JOB_NODELIST; 127.0.0.1 on one node)");
  app.add_option("--master-port", request.master_port,
                 "with --procs: MASTER_PORT (default 29500 across nodes, a free port on one)");
  app.add_option("--nccl-log", request.nccl_logs,
                 "an NCCL_DEBUG=INFO log the job writes (repeatable), read when it ends; the "
                 "files of NCCL_DEBUG_FILE (%h, %p expanded) are read without it")
      ->allow_extra_args(false);  // one file a flag: the command's words stay the command's
  app.add_flag("--trace-alloc", flags->trace_alloc,
               "trace the job's allocations from its first steps (STALLSCOPE_TRACE_ALLOC=on); "
               "without it the hook traces by itself when its RSS keeps rising");
  app.add_option("--profile", flags->profile,
                 "A:B: torch.profiler over the job's steps A to B (inclusive, counted from 0 as "
                 "the hook counts them); one trace per rank in RUN.db.traces/, judged with the "
                 "run (stallscope trace reads them)");
  auto job_name = std::make_shared<std::string>();
  app.add_option("--job", *job_name,
                 "NAME: the job's name, for `history` (default: STALLSCOPE_JOB, SLURM_JOB_NAME "
                 "unless Slurm's default, else the script the job runs)");
  auto hang_after = std::make_shared<double>(-1);
  auto hang_action = std::make_shared<std::string>("report");
  app.add_option("--hang-after", *hang_after,
                 "S: when no rank finishes a step for S seconds, look where each rank is "
                 "(stacks, collective, /proc) and report a hang (default: the larger of 60 s and "
                 "20x the median step; 0: off)")
      ->check(CLI::Range(0.0, 1e7));
  app.add_option("--hang-action", *hang_action,
                 "report (default: say so and keep waiting) or kill (then end the job: up to "
                 "10 s for the Flight Recorder dumps asked for, SIGTERM, SIGKILL 10 s later)")
      ->check(CLI::IsMember({"report", "kill"}));
  app.add_option("command", flags->command, "the command to run, after --")->required();
  return [flags, hang_after, hang_action, job_name]() {
    std::optional<TraceStepRange> profile;
    if (!flags->profile.empty()) {
      Result<TraceStepRange> range = ParseTraceStepRange(flags->profile);
      if (!range.ok()) {
        return Fail("run",
                    Status::InvalidArgument(
                        "--profile " + flags->profile +
                        ": expected A:B, the first and last step (inclusive), e.g. 10:19"),
                    /*usage=*/true);
      }
      profile = *range;
    }
    // NCCL_DEBUG_FILE: the files already there, so that afterwards only
    // those the job wrote are read as its own.
    const Root root("/");
    const std::string debug_files = DebugFilePattern();
    std::vector<DebugFileState> nccl_files_before;
    if (!debug_files.empty()) {
      nccl_files_before = ListNcclDebugFiles(debug_files, ShortHostname(root));
    }
    Result<std::optional<NodeLayout>> layout = ResolveRunLayout(flags->request, ProcessEnvLookup());
    if (!layout.ok()) return FailedToStart("run", layout.status());
    const bool several_nodes = *layout && (*layout)->nnodes > 1;
    Result<std::string> named =
        RunFilePath(root, flags->request, *layout ? (*layout)->node_rank : 0, several_nodes);
    if (!named.ok()) return FailedToStart("run", named.status());
    const std::string path = *named;
    std::optional<RunWriter> writer;
    Result<RunInfo> info = PrepareRunFile(root, flags->request, path, writer);
    if (!info.ok()) return FailedToStart("run", info.status());
    const double start_realtime =
        RealtimeSeconds() - (MonotonicSeconds() - info->start_monotonic_seconds);
    info->command = JoinCommand(flags->command);
    FillJobIdentity(flags->command, *job_name, *info);

    Result<HookReceiver> hook = HookReceiver::Create();
    if (!hook.ok()) return FailedToStart("run", hook.status());
    BlockRecordSignals();
    std::vector<std::pair<std::string, std::string>> env = HookEnvironment(hook->socket_path());
    if (flags->trace_alloc) env.emplace_back("STALLSCOPE_TRACE_ALLOC", "on");
    const std::string trace_dir = ProfileTraceDir(path);
    if (profile) {
      if (Status made = MakeProfileDir(trace_dir); !made.ok()) {
        (void)writer->Close();
        unlink(path.c_str());
        return FailedToStart("run", made);
      }
      env.emplace_back("STALLSCOPE_PROFILE", flags->profile);
      env.emplace_back("STALLSCOPE_PROFILE_DIR", AbsolutePath(trace_dir));
    } else {
      // The run file is new: traces an earlier run of that name left are
      // not this run's (diff would read them as its GPU time).
      ClearProfileDir(trace_dir);
    }
    // Where the hook's faulthandler writes each rank's stacks at a hang.
    const std::string stacks_dir = path + ".stacks";
    HangOptions hang;
    if (*hang_after >= 0) hang.after_seconds = *hang_after;
    hang.kill = *hang_action == "kill";
    if (*hang_after != 0) {
      if (Status made = PrepareStacksDir(stacks_dir); made.ok()) {
        hang.stacks_dir = AbsolutePath(stacks_dir);
        hang.stack_signal = SIGRTMIN + kStackSignalOffset;
        env.emplace_back("STALLSCOPE_STACKS", hang.stacks_dir);
        env.emplace_back("STALLSCOPE_STACK_SIGNAL", std::to_string(hang.stack_signal));
        for (auto& v : FlightRecorderEnvironment(FlightRecorderPrefix(hang.stacks_dir))) {
          env.push_back(std::move(v));
        }
      } else {
        std::fprintf(stderr, "stallscope run: %s (a hang is found without the ranks' stacks)\n",
                     made.message().c_str());
      }
    }
    // The kernel's log before the job exists: an Xid it causes at once is its.
    KernelLogWatch kernel_log(root, info->start_monotonic_seconds);
    Result<Job> job = Status::Ok();
    if (*layout) {
      const NodeLayout& l = **layout;
      job = Job::StartRanks(
          flags->command, env,
          RankLayout{l.procs, l.nnodes, l.node_rank, l.master_addr, l.master_port}, flags->json);
    } else {
      job = Job::Start(flags->command, env, /*stdout_to_stderr=*/flags->json);
    }
    if (!job.ok()) {
      // Nothing ran: the run file would only mislead.
      (void)writer->Close();
      unlink(path.c_str());
      std::fprintf(stderr, "stallscope run: %s\n", job.status().message().c_str());
      return job.status().IsNotFound() ? 127 : 126;
    }
    RecordOptions options = RunRecordOptions(*layout, job->master_port());
    options.node.start_realtime_seconds = start_realtime;
    options.kernel_log = std::move(kernel_log);
    options.hang = hang;
    Result<RecordOutcome> outcome = Record(*job, *flags, *writer, &*hook, *info, options);
    if (!hang.stacks_dir.empty()) FinishStacksDir(stacks_dir);
    if (!outcome.ok()) {
      std::fprintf(stderr, "stallscope run: %s\n", outcome.status().message().c_str());
      return kExitCouldNotRun;
    }
    // The job's NCCL logs, judged once it ended and kept in the run file, so
    // `report RUN.db` prints the same findings later.
    std::vector<std::string> nccl_notes;
    std::vector<NcclLogFile> nccl_logs =
        ReadJobNcclLogs(root, flags->request, debug_files, nccl_files_before, nccl_notes, stderr);
    std::optional<HostRdmaPorts> host;
    if (!nccl_logs.empty()) host = ReadHostRdma(root, nccl_notes);
    std::optional<FindingsWithNotes> from_traces;
    if (profile) {
      // The traces the hook wrote, judged now and kept with the run.
      ProgressLine progress("reading the profiler traces...");
      from_traces = JudgeProfileTraces(trace_dir, *profile);
    }
    // PyTorch's Flight Recorder dumps (NCCL: at a watchdog timeout), where
    // the ranks wrote some.
    FindingsWithNotes from_dumps;
    if (!hang.stacks_dir.empty()) {
      from_dumps = JudgeFlightRecorderDumps(FlightRecorderPrefix(hang.stacks_dir));
    }
    StoredFindings unsaved = KeepRunConclusions(
        *writer, from_traces, NcclLogConclusions(nccl_logs, host, std::move(nccl_notes)),
        std::move(from_dumps), stderr);
    (void)writer->Checkpoint();  // space freed since a write failed: one file again
    if (Status closed = writer->Close(); !closed.ok()) {
      std::fprintf(stderr, "stallscope run: %s\n", closed.message().c_str());
    }
    PrintRunReport("run", path, flags->json, stderr, nccl_logs, std::move(unsaved));
    // What watching cost, in the job's currency: CPU taken from it.
    struct rusage self;
    getrusage(RUSAGE_SELF, &self);
    double cpu = self.ru_utime.tv_sec + self.ru_utime.tv_usec / 1e6 + self.ru_stime.tv_sec +
                 self.ru_stime.tv_usec / 1e6;
    double seconds = outcome->info.duration_seconds.value_or(0);
    std::fprintf(stderr, "stallscope itself used %.2f s of CPU in %.1f s (%.2f%% of one CPU)\n",
                 cpu, seconds, seconds > 0 ? 100 * cpu / seconds : 0.0);
    return outcome->exit.ShellStatus();
  };
}

CommandRunner SetupWatch(CLI::App& app) {
  auto flags = std::make_shared<RecordFlags>();
  AddRecordFlags(app, *flags);
  auto slurm_job = std::make_shared<std::string>();
  auto hook_dir = std::make_shared<std::string>();
  CLI::Option* pid = app.add_option("--pid", flags->pid,
                                    "the process tree to watch: this PID and its descendants");
  CLI::Option* slurm = app.add_option(
      "--slurm-job", *slurm_job,
      "ID: the processes of this Slurm job on this node (its cgroup, else SLURM_JOB_ID in their "
      "environment), until Ctrl-C or SIGTERM (the job's epilog: docs/slurm.md)");
  pid->excludes(slurm);
  app.add_option("--hook-dir", *hook_dir,
                 "DIR: receive the Python hook's records on DIR/hook.sock (made here; the job's "
                 "STALLSCOPE_SOCKET names it)");
  return [flags, slurm_job, hook_dir]() {
    if (flags->pid == 0 && slurm_job->empty()) {
      return Fail("watch", Status::InvalidArgument("give --pid PID or --slurm-job ID"),
                  /*usage=*/true);
    }
    if (!slurm_job->empty()) {
      if (Status valid = CheckSlurmJobId(*slurm_job); !valid.ok()) {
        return Fail("watch", Status::InvalidArgument("--slurm-job: " + valid.message()), true);
      }
    }
    Result<Job> job = slurm_job->empty() ? Job::Attach(flags->pid) : Result<Job>(Job::Follow());
    if (!job.ok()) return FailedToStart("watch", job.status());
    std::optional<HookReceiver> hook;
    if (!hook_dir->empty()) {
      if (mkdir(hook_dir->c_str(), 0700) != 0 && errno != EEXIST) {
        return FailedToStart("watch", Status::FromErrno("--hook-dir " + *hook_dir, errno));
      }
      Result<HookReceiver> made = HookReceiver::CreateIn(*hook_dir);
      if (!made.ok()) return FailedToStart("watch", made.status());
      hook = std::move(*made);
    }
    const Root root("/");
    Result<std::string> named = RunFilePath(root, flags->request, 0, false);
    if (!named.ok()) return FailedToStart("watch", named.status());
    const std::string path = *named;
    std::optional<RunWriter> writer;
    Result<RunInfo> info = PrepareRunFile(root, flags->request, path, writer);
    if (!info.ok()) return FailedToStart("watch", info.status());
    RecordOptions options;
    if (slurm_job->empty()) {
      info->command = fmt::format("watch pid {}", flags->pid);
      options.node.source = "watch";
    } else {
      info->command = "watch slurm job " + *slurm_job;
      FillSlurmJobIdentity(*slurm_job, *info, options.node);
      // The job's processes, never this recorder (it runs with the prolog's
      // environment, SLURM_JOB_ID included).
      options.adopt = [root, id = *slurm_job, self = getpid()](int32_t p) -> std::optional<bool> {
        if (p == self) return false;
        return ProcessInSlurmJob(root, p, id);
      };
      // Not dumpable: the job's code, of the same user, cannot ptrace this
      // process, which runs outside the job's limits (exec reset the flag).
      prctl(PR_SET_DUMPABLE, 0);
    }
    options.node.start_realtime_seconds =
        RealtimeSeconds() - (MonotonicSeconds() - info->start_monotonic_seconds);
    BlockRecordSignals();
    Result<RecordOutcome> outcome =
        Record(*job, *flags, *writer, hook ? &*hook : nullptr, *info, options);
    if (!outcome.ok()) {
      std::fprintf(stderr, "stallscope watch: %s\n", outcome.status().message().c_str());
      return kExitCouldNotRun;
    }
    // A Slurm job's name (for `history`): the prolog's environment lacks
    // SLURM_JOB_NAME; the task prolog left it in the hook's folder.
    if (!slurm_job->empty() && !hook_dir->empty()) {
      if (std::string name = SlurmJobNameIn(*hook_dir);
          !name.empty() && !IsSlurmDefaultJobName(name, {})) {
        outcome->info.job_name = name;
        outcome->info.job_name_from = "SLURM_JOB_NAME";
        (void)writer->WriteRunInfo(outcome->info);
      }
    }
    (void)writer->Checkpoint();
    if (Status closed = writer->Close(); !closed.ok()) {
      std::fprintf(stderr, "stallscope watch: %s\n", closed.message().c_str());
    }
    return PrintRunReport("watch", path, flags->json, stdout);
  };
}

}  // namespace stallscope
