#include "app/doctor_host.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>

#include "analyze/host/dataset_rules.h"
#include "analyze/host/gpu_health_rules.h"
#include "analyze/host/gpu_rules.h"
#include "analyze/host/network_rules.h"
#include "analyze/report.h"
#include "app/doctor_data.h"
#include "app/run_files.h"
#include "core/atomic_file.h"
#include "core/text.h"
#include "formats/nccl_log/files.h"
#include "net/host_observation.h"
#include "probe/gpu_probe.h"
#include "probe/remote_path.h"
#include "probe/snapshot.h"

namespace stallscope {

Result<DoctorInputs> CheckDoctorInputs(const Root& root, const DoctorRequest& r) {
  if (!(r.interval_seconds > 0 && r.interval_seconds <= 3600)) {
    return Status::InvalidArgument(fmt::format(
        "--interval {}: must be more than 0 and at most 3600 seconds", r.interval_seconds));
  }
  if (!(r.drift_percent > 0 && r.drift_percent < 100)) {
    return Status::InvalidArgument(
        fmt::format("--drift {}: must be a percentage between 0 and 100", r.drift_percent));
  }
  // On a remote mount the path is looked at later, in a child process.
  if (!r.data.empty() && !r.replay && !RemoteMountHolding(root, r.data) &&
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

namespace {

// The NICs the given NCCL logs say the job used ("NET/IB : Using
// [0]mlx5_0:1/IB", "NET/Socket : Using [0]eth0:10.0.0.1<0>"), by device
// name, for network.nic_far_from_gpu.
void AddNcclLogNics(const std::vector<NcclLogFile>& logs, NetworkObservation& o) {
  for (const NcclLogFile& log : logs) {
    for (const NcclProcess& p : log.summary.processes) {
      std::vector<NcclInterface> used = p.ib_devices.empty() ? p.net_socket : p.ib_devices;
      for (const NcclInterface& i : used) {
        std::string name = i.name.substr(0, i.name.find_first_of(":/"));
        if (std::find(o.nccl_log_nics.begin(), o.nccl_log_nics.end(), name) ==
            o.nccl_log_nics.end()) {
          o.nccl_log_nics.push_back(name);
          o.nccl_log_name = log.path;
        }
      }
    }
  }
}

// A capture holds what was read, not what must be measured on the node.
void NoteWhatACaptureCannotHold(const DoctorRequest& request, Triage& t) {
  constexpr std::string_view kNotIn = "not checked: not in the capture";
  if (!request.data.empty()) {
    t.notes.push_back(fmt::format("--data {} and its storage bench: {}", request.data, kNotIn));
  }
  for (const std::string& peer : request.peers) {
    t.notes.push_back(fmt::format("--peer {}: {}", peer, kNotIn));
  }
}

}  // namespace

Result<HostDiagnosis> DiagnoseHost(const Root& root, const DoctorRequest& request,
                                   DoctorInputs inputs, const Progress& progress) {
  const std::optional<SnapshotReplay>& replay = request.replay;
  const net::RdmaBaseline rdma_before =
      net::ReadRdmaBaseline(replay ? replay->first_sample_root : root);
  if (!replay) progress(fmt::format("sampling the host for {:.1f} s...", request.interval_seconds));
  SnapshotOptions options(request.interval_seconds);
  options.after_first_sample = request.after_first_sample;
  options.replay = replay;
  Result<Snapshot> snapshot = TakeSnapshot(root, options);
  progress("");
  if (!snapshot.ok()) return snapshot.status();
  HostDiagnosis d;
  d.snapshot = std::move(*snapshot);
  Triage& t = d.triage;
  t.notes = d.snapshot.notes;
  // Triage order: memory, io, network, then distributed and code.
  TriageMemory(d.snapshot, t);
  TriageHostDisks(d.snapshot, t);
  // GPUs' and NICs' PCIe links: io.pcie_degraded, network.link_degraded.
  t.Add(CheckPcieLinks(d.snapshot.pcie_links, d.snapshot.gpus));
  if (replay) {
    NoteWhatACaptureCannotHold(request, t);
  } else {
    TriageDataset(root, request, d.snapshot.after.memory.total_bytes, t, progress);
  }
  t.checked.push_back(Layer::kNetwork);
  const std::vector<std::string> peers = replay ? std::vector<std::string>() : request.peers;
  NetworkObservation network = net::ObserveHostNetwork(root, d.snapshot, peers, rdma_before);
  AddNcclLogNics(inputs.nccl_logs, network);
  t.Add(CheckNetwork(network));
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
