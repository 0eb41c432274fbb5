// `stallscope run [...] -- CMD ARGS...` and `stallscope watch --pid PID`:
// record a job's timeline into a run file, then print its findings.
// `stallscope report RUN.db`: the findings of a recorded run.
#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>

#include "analyze/nccl_log_host.h"
#include "analyze/nccl_log_rules.h"
#include "cli/commands.h"
#include "cli/profile_traces.h"
#include "cli/run_analysis.h"
#include "core/atomic_file.h"
#include "core/file.h"
#include "core/host_clock.h"
#include "core/json_text.h"
#include "core/text.h"
#include "dist/node_layout.h"
#include "net/route.h"
#include "probe/mounts.h"
#include "probe/nccl_log_files.h"
#include "probe/snapshot.h"
#include "probe/trace_file.h"
#include "record/hook_receiver.h"
#include "record/job.h"
#include "record/recorder.h"
#include "render/distributed.h"
#include "render/report.h"
#include "render/run_report.h"
#include "render/snapshot.h"
#include "store/run_reader.h"
#include "store/run_writer.h"

namespace stallscope {
namespace {

struct RecordFlags {
  double interval = 1.0;
  std::string out;
  bool force = false;
  bool json = false;
  std::string data;
  int pid = 0;
  int procs = 0;  // run --procs K: start K ranks; 0: the command as given
  // run --procs K across nodes (torchrun's flags); unset: from srun/mpirun, or one node.
  std::optional<int> nnodes;
  std::optional<int> node_rank;
  std::string master_addr;
  std::optional<int> master_port;
  std::vector<std::string> command;
  std::vector<std::string> nccl_logs;  // run --nccl-log FILE...
  bool trace_alloc = false;            // run --trace-alloc: STALLSCOPE_TRACE_ALLOC=on
  std::string profile;                 // run --profile A:B: torch.profiler over steps A..B
};

void AddRecordFlags(CLI::App& app, RecordFlags& flags) {
  app.add_option("--interval", flags.interval, "seconds between samples")->capture_default_str();
  app.add_option("--out", flags.out,
                 "the run file (SQLite; %h: short host name, %r: node rank); default "
                 "stallscope-run-HOST-YYYYMMDD-HHMMSS.db here");
  app.add_flag("--force", flags.force, "overwrite --out if it exists");
  app.add_option("--data", flags.data,
                 "the dataset's path: its disk is watched as the data disk (default: the disk "
                 "behind the files the loader workers read)");
  app.add_flag("--json", flags.json, "print the findings as stallscope.report/1 JSON on stdout");
}

// The run file's name: --out with %h and %r expanded, or
// stallscope-run-HOST-YYYYMMDD-HHMMSS.db (with -nodeR for a node of several).
Result<std::string> RunPath(const RecordFlags& flags, int node_rank, bool several_nodes) {
  if (!flags.out.empty()) return ExpandRunFileName(flags.out, ShortHostname(Root("/")), node_rank);
  time_t now = time(nullptr);
  struct tm tm;
  localtime_r(&now, &tm);
  char stamp[32];
  strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  std::string host = ShortHostname(Root("/"));
  return fmt::format("stallscope-run-{}{}-{}.db", host.empty() ? "host" : host,
                     several_nodes ? fmt::format("-node{}", node_rank) : "", stamp);
}

// The NCCL logs of a run (NCCL_DEBUG_FILE, --nccl-log) read once the job
// ended: the logs' network findings join the run's, and errors become notes
// (the job ran; its report must still come out).
std::vector<NcclLogFile> ReadRunNcclLogs(const RecordFlags& flags,
                                         const std::vector<DebugFileState>& before,
                                         std::vector<std::string>& notes) {
  std::vector<std::string> paths = flags.nccl_logs;
  if (const char* pattern = std::getenv("NCCL_DEBUG_FILE"); pattern && *pattern) {
    std::vector<std::string> found =
        DebugFilesWritten(before, ListNcclDebugFiles(pattern, ShortHostname(Root("/"))));
    if (found.empty()) {
      notes.push_back(fmt::format(
          "nccl: NCCL_DEBUG_FILE={} is set but the job wrote no such file on this host (is "
          "NCCL_DEBUG=INFO set?)",
          pattern));
    }
    for (std::string& p : found) {
      if (std::find(paths.begin(), paths.end(), p) == paths.end()) paths.push_back(std::move(p));
    }
  }
  std::vector<NcclLogFile> logs;
  for (const std::string& path : paths) {
    bool named =
        std::find(flags.nccl_logs.begin(), flags.nccl_logs.end(), path) != flags.nccl_logs.end();
    Result<NcclLogFile> log = ReadNcclLogFile(path, named ? "--nccl-log" : "NCCL_DEBUG_FILE");
    if (!log.ok()) {
      notes.push_back("nccl: " + log.status().message());
      std::fprintf(stderr, "stallscope run: %s\n", log.status().message().c_str());
      continue;
    }
    logs.push_back(std::move(*log));
  }
  return logs;
}

// Everything run and watch share once the job exists.
Result<RecordOutcome> Record(Job& job, const RecordFlags& flags, RunWriter& writer,
                             HookReceiver* hook, RunInfo info, RecordOptions options) {
  info.root_pid = job.pid();
  if (Status s = writer.WriteRunInfo(info); !s.ok()) return s;
  options.interval_seconds = flags.interval;
  options.forward_signals = job.is_child();
  return RecordJob(job, std::move(info), options, hook, writer, stderr);
}

// The node's place, for the run file: from the layout `run --procs` used.
NodeInfo NodeFromLayout(const NodeLayout& layout, int master_port) {
  NodeInfo node;
  node.node_rank = layout.node_rank;
  node.nnodes = layout.nnodes;
  node.procs_per_node = layout.procs;
  node.world_size = layout.world_size();
  node.master_addr = layout.master_addr;
  node.master_port = master_port;
  node.launcher_job = layout.launcher_job;
  node.source = layout.source;
  return node;
}

// run --procs K [--nnodes N --node-rank R --master-addr A --master-port P]:
// the layout, checked before anything starts (a master that does not
// resolve too). Without --procs the flags of several nodes are refused.
Result<std::optional<NodeLayout>> ResolveRunLayout(const RecordFlags& flags) {
  if (flags.procs == 0) {
    if (flags.nnodes || flags.node_rank || !flags.master_addr.empty() || flags.master_port) {
      return Status::InvalidArgument(
          "--nnodes, --node-rank, --master-addr and --master-port place the ranks --procs K "
          "starts; without --procs the command starts its ranks itself (torchrun, deepspeed)");
    }
    return std::optional<NodeLayout>();
  }
  NodeLayoutFlags wanted{flags.procs, flags.nnodes, flags.node_rank, flags.master_addr,
                         flags.master_port};
  Result<NodeLayout> layout = ResolveNodeLayout(wanted, ProcessEnvLookup());
  if (!layout.ok()) return layout.status();
  if (layout->nnodes > 1 || !flags.master_addr.empty()) {
    Result<net::PeerAddress> peer = net::ResolvePeer(layout->master_addr, 0);
    if (!peer.ok()) {
      return Status::InvalidArgument(
          fmt::format("--master-addr {}: does not resolve on this host ({})", layout->master_addr,
                      peer.status().message()));
    }
  }
  return std::optional<NodeLayout>(std::move(*layout));
}

// The run file, the baseline and the facts of the run, before the job starts
// so that an unwritable --out fails before anything runs.
Result<RunInfo> Prepare(const RecordFlags& flags, const std::string& path,
                        std::optional<RunWriter>& writer) {
  if (!(flags.interval >= 0.05 && flags.interval <= 3600)) {
    return Status::InvalidArgument(
        fmt::format("--interval {}: must be between 0.05 and 3600 seconds", flags.interval));
  }
  Result<RunWriter> created = RunWriter::Create(path, flags.force);
  if (!created.ok()) return created.status();
  writer.emplace(std::move(*created));
  RunInfo info;
  info.interval_seconds = flags.interval;
  if (!flags.data.empty()) {
    Result<PathDevice> device = DeviceForPath(Root("/"), flags.data);
    if (!device.ok()) return Status::InvalidArgument("--data " + device.status().message());
    info.data_device = device->disk;
  }
  Result<Snapshot> baseline = TakeSnapshot(Root("/"), SnapshotOptions{0.25});
  if (!baseline.ok()) return baseline.status();
  if (Status s = writer->WriteBaseline(JsonText(SnapshotToJson(*baseline), -1)); !s.ok()) return s;
  info.hostname = baseline->hostname;
  info.started_utc = baseline->time_utc;
  info.cpu_count = static_cast<int>(baseline->after.cpu.per_cpu.size());
  info.mem_total_bytes = baseline->after.memory.total_bytes;
  if (baseline->cgroup) info.cgroup_limit_bytes = baseline->cgroup->limit_bytes;
  info.start_monotonic_seconds = MonotonicSeconds();
  return info;
}

// RUN.db.traces/ for `run --profile`, emptied of an earlier run's rank
// traces (the run file itself is only overwritten with --force). A path
// there that is not a directory of its own (a file, a symlink) is an error:
// nothing outside the run's output is touched.
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
  Result<std::vector<std::string>> old = TraceFilesIn(dir);
  if (old.ok()) {
    for (const std::string& f : *old) {
      std::string_view name = std::string_view(f).substr(f.rfind('/') + 1);
      if (StartsWith(name, "rank") && EndsWith(name, ".json")) unlink(f.c_str());
    }
  }
  return Status::Ok();
}

std::string AbsolutePath(const std::string& path) {
  if (!path.empty() && path.front() == '/') return path;
  char cwd[4096];
  if (getcwd(cwd, sizeof cwd) == nullptr) return path;
  return std::string(cwd) + "/" + path;
}

int FailedToStart(const char* command, const Status& status) {
  return Fail(command, status, status.code() == Status::Code::kInvalidArgument);
}

}  // namespace

CommandRunner SetupRun(CLI::App& app) {
  auto flags = std::make_shared<RecordFlags>();
  AddRecordFlags(app, *flags);
  app.add_option("--procs", flags->procs,
                 "start CMD as K ranks (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, "
                 "MASTER_ADDR=127.0.0.1, MASTER_PORT set as torchrun sets them)")
      ->check(CLI::Range(1, 4096));
  app.add_option("--nnodes", flags->nnodes,
                 "with --procs: the job's node count (torchrun's --nnodes; default: srun's or "
                 "mpirun's, else 1)");
  app.add_option("--node-rank", flags->node_rank,
                 "with --procs: this node's place, 0 .. nnodes-1 (RANK = node rank x procs + "
                 "local rank)");
  app.add_option("--master-addr", flags->master_addr,
                 "with --procs: node rank 0's address, for MASTER_ADDR (default: the first host "
                 "of SLURM_JOB_NODELIST; 127.0.0.1 on one node)");
  app.add_option("--master-port", flags->master_port,
                 "with --procs: MASTER_PORT (default 29500 across nodes, a free port on one)");
  app.add_option("--nccl-log", flags->nccl_logs,
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
  app.add_option("command", flags->command, "the command to run, after --")->required();
  return [flags]() {
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
    std::vector<DebugFileState> nccl_files_before;
    if (const char* pattern = std::getenv("NCCL_DEBUG_FILE"); pattern && *pattern) {
      nccl_files_before = ListNcclDebugFiles(pattern, ShortHostname(Root("/")));
    }
    Result<std::optional<NodeLayout>> layout = ResolveRunLayout(*flags);
    if (!layout.ok()) return FailedToStart("run", layout.status());
    const bool several_nodes = *layout && (*layout)->nnodes > 1;
    Result<std::string> named = RunPath(*flags, *layout ? (*layout)->node_rank : 0, several_nodes);
    if (!named.ok()) return FailedToStart("run", named.status());
    const std::string path = *named;
    std::optional<RunWriter> writer;
    Result<RunInfo> info = Prepare(*flags, path, writer);
    if (!info.ok()) return FailedToStart("run", info.status());
    const double start_realtime =
        RealtimeSeconds() - (MonotonicSeconds() - info->start_monotonic_seconds);
    info->command = JoinCommand(flags->command);

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
    }
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
    RecordOptions options;
    if (*layout) {
      options.node = NodeFromLayout(**layout, job->master_port());
      if ((*layout)->nnodes > 1) {
        options.clock_port = job->master_port();
        if ((*layout)->node_rank == 0) {
          options.serve_clock = true;
        } else {
          options.clock_peer = (*layout)->master_addr;
        }
      }
    } else {
      options.node_from_ranks = true;
    }
    // Loopback carries none of the other nodes' traffic (MASTER_ADDR that
    // resolves to 127.0.1.1 on node 0 through /etc/hosts, as Debian writes
    // it): no interface, no rates, rather than a node that looks idle.
    options.interface_toward = [](const std::string& master) {
      std::string name = net::RouteTo(master, "MASTER_ADDR=" + master).interface;
      return name == "lo" ? std::string() : name;
    };
    options.node.start_realtime_seconds = start_realtime;
    Result<RecordOutcome> outcome = Record(*job, *flags, *writer, &*hook, *info, options);
    if (!outcome.ok()) {
      std::fprintf(stderr, "stallscope run: %s\n", outcome.status().message().c_str());
      return kExitCouldNotRun;
    }
    // The job's NCCL logs, judged once it ended and kept in the run file, so
    // `report RUN.db` prints the same findings later.
    std::vector<std::string> nccl_notes;
    std::vector<NcclLogFile> nccl_logs = ReadRunNcclLogs(*flags, nccl_files_before, nccl_notes);
    std::optional<HostRdmaPorts> host;
    if (!nccl_logs.empty()) host = ReadHostRdma(Root("/"), nccl_notes);
    StoredFindings from_logs = NcclLogConclusions(nccl_logs, host, std::move(nccl_notes));
    StoredFindings unsaved;
    if (profile) {
      // The traces the hook wrote, judged now and kept with the run.
      StoredFindings from_traces = JudgeProfileTraces(trace_dir, *profile);
      if (Status kept = writer->AppendFindings("trace", from_traces.findings, from_traces.notes);
          !kept.ok()) {
        std::fprintf(stderr, "stallscope run: %s (printed below, not kept in the run file)\n",
                     kept.message().c_str());
        unsaved.findings.insert(unsaved.findings.end(), from_traces.findings.begin(),
                                from_traces.findings.end());
        unsaved.notes.insert(unsaved.notes.end(), from_traces.notes.begin(),
                             from_traces.notes.end());
      }
    }
    if (Status kept = writer->AppendFindings("nccl-log", from_logs.findings, from_logs.notes);
        !kept.ok()) {
      std::fprintf(stderr, "stallscope run: %s (printed below, not kept in the run file)\n",
                   kept.message().c_str());
      unsaved = std::move(from_logs);
    }
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
  app.add_option("--pid", flags->pid, "the process tree to watch: this PID and its descendants")
      ->required();
  return [flags]() {
    Result<Job> job = Job::Attach(flags->pid);
    if (!job.ok()) return FailedToStart("watch", job.status());
    Result<std::string> named = RunPath(*flags, 0, false);
    if (!named.ok()) return FailedToStart("watch", named.status());
    const std::string path = *named;
    std::optional<RunWriter> writer;
    Result<RunInfo> info = Prepare(*flags, path, writer);
    if (!info.ok()) return FailedToStart("watch", info.status());
    info->command = fmt::format("watch pid {}", flags->pid);
    RecordOptions options;
    options.node.source = "watch";
    options.node.start_realtime_seconds =
        RealtimeSeconds() - (MonotonicSeconds() - info->start_monotonic_seconds);
    BlockRecordSignals();
    Result<RecordOutcome> outcome = Record(*job, *flags, *writer, nullptr, *info, options);
    if (!outcome.ok()) {
      std::fprintf(stderr, "stallscope watch: %s\n", outcome.status().message().c_str());
      return kExitCouldNotRun;
    }
    (void)writer->Close();
    return PrintRunReport("watch", path, flags->json, stdout);
  };
}

}  // namespace stallscope
