#include "app/doctor_host.h"

#include <dirent.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "analyze/dataset_rules.h"
#include "analyze/gpu_health_rules.h"
#include "analyze/gpu_rules.h"
#include "analyze/network_rules.h"
#include "analyze/report.h"
#include "app/run_files.h"
#include "bench/io_bench.h"
#include "core/atomic_file.h"
#include "core/child_call.h"
#include "core/text.h"
#include "data/census.h"
#include "net/host_observation.h"
#include "probe/gpu_probe.h"
#include "probe/nccl_log_files.h"
#include "probe/remote_path.h"
#include "probe/snapshot.h"

namespace stallscope {
namespace {

// The storage bench of --data: long enough to get past the first requests,
// short enough for the whole doctor to stay under 30 s.
constexpr uint64_t kDoctorBenchBytes = 256ull << 20;
constexpr double kDoctorBenchSeconds = 2.0;
constexpr uint64_t kDoctorBenchMetadataFiles = 256;

// The calls the census starts with (stat, statfs, open and readdir of the
// data path), in a child process: the exit code is 0 when they answer
// (whatever they answer), and the child allocates nothing (doctor's sampler
// may have threads).
ChildAnswer TouchDataPath(const char* path, const ChildStep& step) {
  struct stat st {};
  step("stat");
  ::stat(path, &st);
  struct statfs fs {};
  step("statfs");
  ::statfs(path, &fs);
  step("open/readdir");
  if (DIR* dir = ::opendir(path)) {
    ::readdir(dir);
    ::closedir(dir);
  }
  return {};
}

// On a remote mount: the note to give when the data path does not answer
// within the deadline, else nullopt (a local path is never touched here).
std::optional<std::string> DeadMountNote(const std::string& path) {
  std::optional<MountEntry> remote = RemoteMountHolding(Root("/"), path);
  if (!remote) return std::nullopt;
  Result<ChildAnswer> answer =
      CallInChild([&](const ChildStep& step) { return TouchDataPath(path.c_str(), step); },
                  kRemoteCallDeadlineSeconds);
  if (answer.ok()) return std::nullopt;
  return fmt::format(
      "io: no answer from the {} within {:.0f} s to the {} of {}: the dataset's census and the "
      "storage bench are missing; the file server or the link to it may be down",
      DescribeMount(*remote), kRemoteCallDeadlineSeconds, answer.status().message(), path);
}

// --data: the census and, without --quick, the storage bench beside the data.
void TriageDataset(const DoctorRequest& r, const Snapshot& snapshot, Triage& t,
                   const Progress& progress) {
  if (r.data.empty()) {
    t.notes.push_back("io: the dataset and its storage were not checked; pass --data PATH");
    return;
  }
  if (std::optional<std::string> dead = DeadMountNote(r.data)) {
    t.notes.push_back(*dead);
    return;
  }
  CensusOptions options;
  options.residency_sample_files = r.quick ? 1000 : 10000;
  options.latency_sample_files = r.quick ? 100 : 1000;
  options.latency_budget_seconds = r.quick ? 0.3 : 1.5;
  progress(fmt::format("walking {}...", r.data));
  Result<DatasetCensus> census = TakeCensus(r.data, options);
  progress("");
  TriageCensus(r.data, census, snapshot.after.memory.total_bytes, t);
  if (r.quick) {
    t.notes.push_back("io: --quick: no storage bench; run without it or `stallscope bench io " +
                      ShellQuote(r.data) + "`");
    return;
  }
  // The bench writes its test file beside the data: in PATH, or in the
  // directory of a file PATH.
  std::string dir = r.data;
  if (Status s = CheckIoBenchPath(dir); !s.ok()) {
    dir = r.data.find('/') == std::string::npos ? "." : r.data.substr(0, r.data.rfind('/'));
    if (dir.empty()) dir = "/";
  }
  if (Status s = CheckIoBenchPath(dir); !s.ok()) {
    t.notes.push_back("io: storage bench skipped: " + s.message());
    return;
  }
  IoBenchOptions bench;
  bench.path = dir;
  bench.size_bytes = kDoctorBenchBytes;
  bench.runtime_seconds = kDoctorBenchSeconds;
  bench.metadata_files = kDoctorBenchMetadataFiles;
  bench.progress = progress;
  Result<IoBenchResult> result = RunIoBench(bench);
  progress("");
  if (!result.ok()) {
    t.notes.push_back("io: storage bench of " + dir + ": " + result.status().message());
    return;
  }
  TriageStorageBench(*result, kDoctorBenchBytes, kDoctorBenchSeconds, t);
}

}  // namespace

Result<DoctorInputs> CheckDoctorInputs(const DoctorRequest& r) {
  if (!(r.interval_seconds > 0 && r.interval_seconds <= 3600)) {
    return Status::InvalidArgument(fmt::format(
        "--interval {}: must be more than 0 and at most 3600 seconds", r.interval_seconds));
  }
  if (!(r.drift_percent > 0 && r.drift_percent < 100)) {
    return Status::InvalidArgument(
        fmt::format("--drift {}: must be a percentage between 0 and 100", r.drift_percent));
  }
  // On a remote mount the path is looked at later, in a child process.
  if (!r.data.empty() && !RemoteMountHolding(Root("/"), r.data) &&
      ::access(r.data.c_str(), F_OK) != 0) {
    return Status::InvalidArgument(fmt::format("--data {}: no such file or directory", r.data));
  }
  if (!r.html.empty()) {
    if (Status s = CheckOutputPath(r.html, r.force, "--html"); !s.ok()) return s;
  }
  if (!r.save_baseline.empty()) {
    // Overwrite a baseline, never anything else (a typo must not eat a file).
    if (PathExists(r.save_baseline)) {
      Result<std::string> text = ReadFile(r.save_baseline);
      if (!text.ok() || !ParseBaseline(*text, r.save_baseline).ok()) {
        return Status::InvalidArgument(fmt::format(
            "--save-baseline {}: the file exists and is not a stallscope baseline; refusing to "
            "overwrite it",
            r.save_baseline));
      }
    }
    if (Status s = CheckOutputPath(r.save_baseline, true, "--save-baseline"); !s.ok()) return s;
  }
  DoctorInputs in;
  if (!r.baseline.empty()) {
    Result<std::string> text = ReadFile(r.baseline);
    if (!text.ok()) {
      return Status::InvalidArgument("--baseline " + text.status().message());
    }
    Result<HostBaseline> parsed = ParseBaseline(*text, r.baseline);
    if (!parsed.ok()) return Status::InvalidArgument("--baseline " + parsed.status().message());
    in.baseline = std::move(*parsed);
  }
  if (!r.runs.empty()) {
    Result<RunAnalysis> run = AnalyzeRunFiles(r.runs);
    if (!run.ok()) return Status::InvalidArgument("--run " + run.status().message());
    in.run = std::move(*run);
  }
  for (const std::string& path : r.nccl_logs) {
    Result<NcclLogFile> log = ReadNcclLogFile(path, "--nccl-log");
    if (!log.ok()) return Status::InvalidArgument(log.status().message());
    in.nccl_logs.push_back(std::move(*log));
  }
  return in;
}

Result<HostDiagnosis> DiagnoseHost(const Root& root, const DoctorRequest& request,
                                   DoctorInputs inputs, const Progress& progress) {
  const net::RdmaBaseline rdma_before = net::ReadRdmaBaseline(root);
  progress(fmt::format("sampling the host for {:.1f} s...", request.interval_seconds));
  Result<Snapshot> snapshot = TakeSnapshot(root, SnapshotOptions{request.interval_seconds});
  progress("");
  if (!snapshot.ok()) return snapshot.status();
  HostDiagnosis d;
  d.snapshot = std::move(*snapshot);
  Triage& t = d.triage;
  t.notes = d.snapshot.notes;
  // The guide's order: memory, io, network, then distributed and code.
  TriageMemory(d.snapshot, t);
  TriageHostDisks(d.snapshot, t);
  // GPUs' and NICs' PCIe links: io.pcie_degraded, network.link_degraded.
  t.Add(CheckPcieLinks(d.snapshot.pcie_links, d.snapshot.gpus));
  TriageDataset(request, d.snapshot, t, progress);
  t.checked.push_back(Layer::kNetwork);
  t.Add(CheckNetwork(net::ObserveHostNetwork(root, d.snapshot, request.peers, rdma_before)));
  if (std::optional<Finding> ports = PortLogFinding(d.snapshot.port_events, "since boot")) {
    MergeFinding(t.findings, std::move(*ports), "kernel_log", "counters");
  }
  if (!inputs.nccl_logs.empty()) {
    TriageNcclLogs(inputs.nccl_logs, ReadHostRdma(root, t.notes), t);
  }
  // GPUs through NVML: memory.gpu_near_full and the code.* findings.
  if (d.snapshot.gpus.available) {
    t.Add(CheckGpuObservation(d.snapshot.gpus, GpuProcessNames(root, d.snapshot.gpus)));
    t.Add(CheckGpuHealth(d.snapshot.gpus, d.snapshot.gpu_ecc_corrected_growth));
  } else {
    t.notes.push_back("gpu: " + d.snapshot.gpus.absent_reason);
  }
  // Xids count with or without NVML: a GPU that fell off the bus may be gone from it.
  t.Add(CheckGpuXids(d.snapshot.xids, d.snapshot.gpus, "since boot"));
  if (inputs.run) TriageRun(std::move(*inputs.run), t);
  d.now = BaselineFromSnapshot(d.snapshot, t.bench ? &*t.bench : nullptr);
  if (inputs.baseline) TriageBaseline(*inputs.baseline, d.now, request.drift_percent / 100, t);
  d.why_not_checked = WhyNotChecked(t);
  d.report = MakeReport(std::move(t.findings), t.checked, t.notes);
  t.findings.clear();  // the report's now, in triage order
  return d;
}

}  // namespace stallscope
