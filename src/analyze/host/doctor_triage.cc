#include "analyze/host/doctor_triage.h"

#include <fmt/format.h>

#include <algorithm>
#include <variant>

#include "analyze/host/dataset_rules.h"
#include "analyze/host/host_io_rules.h"
#include "analyze/host/memory_rules.h"
#include "analyze/nccl_log/host.h"
#include "core/units.h"

namespace stallscope {
namespace {

// The "nccl_log" evidence of a finding from an NCCL log; null for others.
const std::string* NcclLogOf(const Finding& f) {
  for (const Evidence& e : f.evidence) {
    if (e.name == "nccl_log") return std::get_if<std::string>(&e.value);
  }
  return nullptr;
}

}  // namespace

void TriageMemory(const Snapshot& snapshot, Triage& t) {
  MemoryObservation m = ObserveMemory(snapshot);
  t.checked.push_back(Layer::kMemory);
  t.facts.push_back({Layer::kMemory,
                     fmt::format("available {} of {}{}; swap used {} of {}",
                                 FormatBytes(m.cgroup_available_bytes.value_or(m.available_bytes)),
                                 FormatBytes(m.cgroup_limit_bytes.value_or(m.total_bytes)),
                                 m.cgroup_limit_bytes ? " (cgroup limit)" : "",
                                 FormatBytes(m.swap_used_bytes), FormatBytes(m.swap_total_bytes))});
  t.Add(CheckMemory(m));
}

void TriageHostDisks(const Snapshot& snapshot, Triage& t) {
  t.checked.push_back(Layer::kIo);
  for (const DiskRates& r : snapshot.disk_rates) {
    for (const BlockDevice& d : snapshot.block_devices) {
      if (d.name != r.name || d.is_partition || d.is_virtual) continue;
      t.facts.push_back(
          {Layer::kIo, fmt::format("disk {}: {:.0f}% util, {:.1f} ms await, {:.0f} "
                                   "r/s, {:.0f} w/s (iostat -x over {:.1f} s)",
                                   r.name, r.util_percent, r.await_ms, r.reads_per_second,
                                   r.writes_per_second, snapshot.interval_seconds)});
    }
  }
  t.Add(CheckHostDisks(snapshot.disk_rates, snapshot.block_devices, snapshot.interval_seconds));
}

void TriageCensus(const std::string& path, const Result<DatasetCensus>& census,
                  uint64_t memory_total_bytes, Triage& t) {
  if (!census.ok()) {
    t.notes.push_back("io: dataset census of " + path + ": " + census.status().message());
  } else {
    DatasetContext context;
    context.memory_total_bytes = memory_total_bytes;
    t.facts.push_back({Layer::kIo, fmt::format("dataset {}: {} files, {} on {}{}", path,
                                               census->files, FormatBytes(census->bytes),
                                               census->fs_type.empty() ? "?" : census->fs_type,
                                               census->remote ? " (remote)" : "")});
    for (const std::string& n : census->notes) t.notes.push_back("io: " + n);
    t.Add(CheckDataset(*census, context));
    t.census = *census;
  }
}

void TriageStorageBench(const IoBenchResult& result, uint64_t bench_bytes, double phase_seconds,
                        Triage& t) {
  TriageStorageSpeed(SpeedOf(result), result.read_mode, result.notes, bench_bytes, phase_seconds,
                     t);
}

void TriageStorageSpeed(const StorageSpeed& speed, const std::string& read_mode,
                        const std::vector<std::string>& bench_notes, uint64_t bench_bytes,
                        double phase_seconds, Triage& t) {
  t.facts.push_back(
      {Layer::kIo, fmt::format("bench {} ({}, {} MiB, {:.0f} s a phase): "
                               "sequential {}, random 4 KiB {:.0f} IOPS",
                               speed.path, read_mode, bench_bytes >> 20, phase_seconds,
                               FormatRate(speed.sequential_bytes_per_second), speed.random_iops)});
  for (const std::string& n : bench_notes) t.notes.push_back("io: bench: " + n);
  t.Add(CheckStorageSpeed(speed, StorageThresholds{}));
  t.bench = speed;
}

void TriageNcclLogs(const std::vector<NcclLogFile>& logs, const std::optional<HostRdmaPorts>& host,
                    Triage& t) {
  for (const NcclLogFile& log : logs) {
    t.facts.push_back({Layer::kNetwork, DescribeNcclLogFile(log)});
    t.Add(NcclHostNetworkFindings(log, host));
  }
}

void TriageRun(RunAnalysis run, Triage& t) {
  for (Finding& f : run.findings) {
    // The run kept what its NCCL logs showed; a log also passed with
    // --nccl-log was judged just now, and that finding is already here.
    if (const std::string* log = NcclLogOf(f);
        log != nullptr && std::any_of(t.findings.begin(), t.findings.end(), [&](const Finding& g) {
          const std::string* other = NcclLogOf(g);
          return g.id == f.id && other != nullptr && *other == *log;
        })) {
      continue;
    }
    f.evidence.push_back({"from_run", run.path});
    t.findings.push_back(std::move(f));
  }
  for (Layer l : run.checked) t.checked.push_back(l);
  for (const std::string& n : run.notes) t.notes.push_back("run " + run.path + ": " + n);
  t.run = std::move(run);
}

void TriageBaseline(const HostBaseline& baseline, const HostBaseline& now, double drift_share,
                    Triage& t) {
  t.Add(CompareBaseline(baseline, now, drift_share, &t.not_compared));
  if (!t.not_compared.empty()) {
    t.notes.push_back(fmt::format(
        "baseline: {} bench figure(s) not compared: the bench did not run (pass --data PATH "
        "without --quick)",
        t.not_compared.size()));
  }
}

std::vector<std::pair<Layer, std::string>> WhyNotChecked(const Triage& t) {
  std::vector<std::pair<Layer, std::string>> why;
  if (!t.run) {
    why.push_back({Layer::kDistributed,
                   "needs a recorded run (--run RUN.db) or `stallscope scale` / `stallscope "
                   "cluster` across ranks"});
    why.push_back({Layer::kCode,
                   "judged last, on a recorded run (--run RUN.db) whose GPU still waits with "
                   "no infrastructure cause"});
  } else {
    int ranks = 0;
    for (const StepEvent& s : t.run->timeline.steps) ranks = std::max(ranks, s.rank + 1);
    why.push_back(
        {Layer::kDistributed,
         fmt::format("the run has {} rank(s) with steps; no rule of this layer fired", ranks)});
    why.push_back({Layer::kCode, "no rule of this layer fired on the run"});
  }
  return why;
}

}  // namespace stallscope
