#include "app/run_job.h"

#include <dirent.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <ctime>
#include <string_view>

#include "analyze/flight_recorder/finding.h"
#include "analyze/flight_recorder/rules.h"
#include "analyze/nccl_log/host.h"
#include "core/host_clock.h"
#include "core/json_text.h"
#include "formats/flight_recorder/flight_recorder.h"
#include "net/route.h"
#include "probe/mounts.h"
#include "probe/remote_path.h"
#include "probe/snapshot.h"
#include "render/snapshot.h"

namespace stallscope {

Result<std::string> RunFilePath(const Root& root, const RunRequest& request, int node_rank,
                                bool several_nodes) {
  const std::string host = ShortHostname(root);
  if (!request.out.empty()) return ExpandRunFileName(request.out, host, node_rank);
  time_t now = time(nullptr);
  struct tm tm;
  localtime_r(&now, &tm);
  char stamp[32];
  strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  return fmt::format("stallscope-run-{}{}-{}.db", host.empty() ? "host" : host,
                     several_nodes ? fmt::format("-node{}", node_rank) : "", stamp);
}

Result<std::optional<NodeLayout>> ResolveRunLayout(const RunRequest& request,
                                                   const EnvLookup& env) {
  if (request.procs == 0) {
    if (request.nnodes || request.node_rank || !request.master_addr.empty() ||
        request.master_port) {
      return Status::InvalidArgument(
          "--nnodes, --node-rank, --master-addr and --master-port place the ranks --procs K "
          "starts; without --procs the command starts its ranks itself (torchrun, deepspeed)");
    }
    return std::optional<NodeLayout>();
  }
  NodeLayoutFlags wanted{request.procs, request.nnodes, request.node_rank, request.master_addr,
                         request.master_port};
  Result<NodeLayout> layout = ResolveNodeLayout(wanted, env);
  if (!layout.ok()) return layout.status();
  if (layout->nnodes > 1 || !request.master_addr.empty()) {
    Result<net::PeerAddress> peer = net::ResolvePeer(layout->master_addr, 0);
    if (!peer.ok()) {
      return Status::InvalidArgument(
          fmt::format("--master-addr {}: does not resolve on this host ({})", layout->master_addr,
                      peer.status().message()));
    }
  }
  return std::optional<NodeLayout>(std::move(*layout));
}

Result<RunInfo> PrepareRunFile(const Root& root, const RunRequest& request, const std::string& path,
                               std::optional<RunWriter>& writer) {
  if (!(request.interval_seconds >= 0.05 && request.interval_seconds <= 3600)) {
    return Status::InvalidArgument(fmt::format(
        "--interval {}: must be between 0.05 and 3600 seconds", request.interval_seconds));
  }
  Result<RunWriter> created = RunWriter::Create(path, request.force);
  if (!created.ok()) return created.status();
  writer.emplace(std::move(*created));
  RunInfo info;
  info.interval_seconds = request.interval_seconds;
  // A remote mount's data is not touched here (a dead server would hang the
  // run before it starts); it has no block device to name anyway.
  if (!request.data.empty() && !RemoteMountHolding(root, request.data)) {
    Result<PathDevice> device = DeviceForPath(root, request.data);
    if (!device.ok()) return Status::InvalidArgument("--data " + device.status().message());
    info.data_device = device->disk;
  }
  Result<Snapshot> baseline = TakeSnapshot(root, SnapshotOptions{0.25});
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

RecordOptions RunRecordOptions(const std::optional<NodeLayout>& layout, int master_port) {
  RecordOptions options;
  if (layout) {
    options.node.node_rank = layout->node_rank;
    options.node.nnodes = layout->nnodes;
    options.node.procs_per_node = layout->procs;
    options.node.world_size = layout->world_size();
    options.node.master_addr = layout->master_addr;
    options.node.master_port = master_port;
    options.node.launcher_job = layout->launcher_job;
    options.node.source = layout->source;
    if (layout->nnodes > 1) {
      options.clock_port = master_port;
      if (layout->node_rank == 0) {
        options.serve_clock = true;
      } else {
        options.clock_peer = layout->master_addr;
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
  return options;
}

std::vector<NcclLogFile> ReadJobNcclLogs(const Root& root, const RunRequest& request,
                                         const std::string& debug_file_pattern,
                                         const std::vector<DebugFileState>& before,
                                         std::vector<std::string>& notes, std::FILE* err) {
  std::vector<std::string> paths = request.nccl_logs;
  if (!debug_file_pattern.empty()) {
    std::vector<std::string> found =
        DebugFilesWritten(before, ListNcclDebugFiles(debug_file_pattern, ShortHostname(root)));
    if (found.empty()) {
      notes.push_back(fmt::format(
          "nccl: NCCL_DEBUG_FILE={} is set but the job wrote no such file on this host (is "
          "NCCL_DEBUG=INFO set?)",
          debug_file_pattern));
    }
    for (std::string& p : found) {
      if (std::find(paths.begin(), paths.end(), p) == paths.end()) paths.push_back(std::move(p));
    }
  }
  std::vector<NcclLogFile> logs;
  for (const std::string& path : paths) {
    bool named = std::find(request.nccl_logs.begin(), request.nccl_logs.end(), path) !=
                 request.nccl_logs.end();
    Result<NcclLogFile> log = ReadNcclLogFile(path, named ? "--nccl-log" : "NCCL_DEBUG_FILE");
    if (!log.ok()) {
      notes.push_back("nccl: " + log.status().message());
      std::fprintf(err, "stallscope run: %s\n", log.status().message().c_str());
      continue;
    }
    logs.push_back(std::move(*log));
  }
  return logs;
}

namespace {

std::string BaseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool EndsWith(const std::string& s, std::string_view tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

bool IsSlurmDefaultJobName(const std::string& name, const std::vector<std::string>& argv) {
  if (name.empty() || name == "wrap" || name == "interactive" || name == "bash" || name == "sh") {
    return true;
  }
  for (std::string_view tail : {".sh", ".sbatch", ".slurm", ".py", ".bash"}) {
    if (EndsWith(name, tail)) return true;
  }
  return std::any_of(argv.begin(), argv.end(),
                     [&](const std::string& word) { return BaseName(word) == name; });
}

void FillJobIdentity(const std::vector<std::string>& argv, const std::string& job_flag,
                     RunInfo& info) {
  info.identity_recorded = true;
  info.argv = argv;
  info.uid = static_cast<int64_t>(getuid());
  if (char cwd[4096]; getcwd(cwd, sizeof cwd) != nullptr) info.cwd = cwd;
  const char* env_name = std::getenv("STALLSCOPE_JOB");
  const char* slurm_name = std::getenv("SLURM_JOB_NAME");
  if (!job_flag.empty()) {
    info.job_name = job_flag;
    info.job_name_from = "--job";
  } else if (env_name && *env_name) {
    info.job_name = env_name;
    info.job_name_from = "STALLSCOPE_JOB";
  } else if (slurm_name && !IsSlurmDefaultJobName(slurm_name, argv)) {
    info.job_name = slurm_name;
    info.job_name_from = "SLURM_JOB_NAME";
  }
  if (argv.empty()) return;
  for (size_t i = 1; i < argv.size(); ++i) {
    struct stat st {};
    if (!argv[i].empty() && argv[i][0] != '-' && stat(argv[i].c_str(), &st) == 0 &&
        S_ISREG(st.st_mode)) {
      char resolved[PATH_MAX];
      info.program = BaseName(argv[0]) + " " +
                     (realpath(argv[i].c_str(), resolved) ? std::string(resolved) : argv[i]);
      break;
    }
  }
}

void FillSlurmJobIdentity(const std::string& job_id, RunInfo& info, NodeInfo& node) {
  info.identity_recorded = true;
  info.uid = static_cast<int64_t>(getuid());
  if (const char* dir = std::getenv("SLURM_JOB_WORK_DIR"); dir && *dir) {
    info.cwd = dir;
  } else if (char cwd[4096]; getcwd(cwd, sizeof cwd) != nullptr) {
    info.cwd = cwd;
  }
  node.launcher_job = job_id;
  const char* node_name = std::getenv("SLURMD_NODENAME");
  node.source =
      "slurm job " + job_id + (node_name && *node_name ? std::string(" on ") + node_name : "");
}

std::string FlightRecorderPrefix(const std::string& stacks_dir) {
  return stacks_dir + "/flight_recorder_rank_";
}

std::vector<std::pair<std::string, std::string>> FlightRecorderEnvironment(
    const std::string& prefix) {
  std::vector<std::pair<std::string, std::string>> env;
  auto unless_set = [&](const char* name, const std::string& value) {
    if (std::getenv(name) == nullptr) env.emplace_back(name, value);
  };
  // One size for both names, whichever the user set.
  const char* size = std::getenv("TORCH_FR_BUFFER_SIZE");
  if (!size) size = std::getenv("TORCH_NCCL_TRACE_BUFFER_SIZE");
  unless_set("TORCH_FR_BUFFER_SIZE", size ? size : "2000");
  unless_set("TORCH_NCCL_TRACE_BUFFER_SIZE", size ? size : "2000");
  unless_set("TORCH_NCCL_DUMP_ON_TIMEOUT", "1");
  const char* file = std::getenv("TORCH_FR_DUMP_TEMP_FILE");
  if (!file) file = std::getenv("TORCH_NCCL_DEBUG_INFO_TEMP_FILE");
  unless_set("TORCH_FR_DUMP_TEMP_FILE", file ? file : prefix);
  unless_set("TORCH_NCCL_DEBUG_INFO_TEMP_FILE", file ? file : prefix);
  // A named pipe a rank (its prefix + rank + ".pipe"): `run` writes to it at
  // a hang for a dump while the rank's main thread is stuck; only where the
  // dumps land beside it (the user's own prefix: theirs to ask).
  if (!file) unless_set("TORCH_NCCL_DEBUG_INFO_PIPE_FILE", prefix);
  return env;
}

FindingsWithNotes JudgeFlightRecorderDumps(const std::string& prefix) {
  FindingsWithNotes out;
  const size_t slash = prefix.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : prefix.substr(0, slash);
  const std::string stem = prefix.substr(slash == std::string::npos ? 0 : slash + 1);
  std::vector<std::string> paths;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      // Regular files only: the dump pipes beside them would block a read.
      const std::string path = dir + "/" + e->d_name;
      struct stat st {};
      if (std::string_view(e->d_name).starts_with(stem) && lstat(path.c_str(), &st) == 0 &&
          S_ISREG(st.st_mode)) {
        paths.push_back(path);
      }
    }
    closedir(d);
  }
  if (paths.empty()) return out;
  std::sort(paths.begin(), paths.end());
  Result<FlightRecorderDumps> dumps = ReadFlightRecorderDumps(paths);
  if (!dumps.ok()) {
    out.notes.push_back("flight-recorder: " + dumps.status().message());
    return out;
  }
  out = FlightRecorderFindings(AnalyzeFlightRecorder(dumps->dumps));
  for (Finding& f : out.findings) {
    f.evidence.insert(f.evidence.begin(), {"source", std::string("flight-recorder")});
  }
  for (std::string& n : dumps->notes) out.notes.push_back("flight-recorder: " + n);
  return out;
}

FindingsWithNotes KeepRunConclusions(RunWriter& writer,
                                     const std::optional<FindingsWithNotes>& from_traces,
                                     FindingsWithNotes from_logs, FindingsWithNotes from_dumps,
                                     std::FILE* err) {
  FindingsWithNotes unsaved;
  if (from_traces) {
    if (Status kept = writer.AppendFindings("trace", from_traces->findings, from_traces->notes);
        !kept.ok()) {
      std::fprintf(err, "stallscope run: %s (printed below, not kept in the run file)\n",
                   kept.message().c_str());
      Append(unsaved, *from_traces);
    }
  }
  if (Status kept = writer.AppendFindings("nccl-log", from_logs.findings, from_logs.notes);
      !kept.ok()) {
    std::fprintf(err, "stallscope run: %s (printed below, not kept in the run file)\n",
                 kept.message().c_str());
    Append(unsaved, std::move(from_logs));
  }
  if (!from_dumps.findings.empty() || !from_dumps.notes.empty()) {
    if (Status kept =
            writer.AppendFindings("flight-recorder", from_dumps.findings, from_dumps.notes);
        !kept.ok()) {
      std::fprintf(err, "stallscope run: %s (printed below, not kept in the run file)\n",
                   kept.message().c_str());
      Append(unsaved, std::move(from_dumps));
    }
  }
  return unsaved;
}

}  // namespace stallscope
