// The doctor's triage: Triage gathers the findings, the layers checked, the
// facts a layer rests on and notes; each Triage* step adds one source to it
// (the snapshot's memory and disks, the dataset census, the storage bench,
// NCCL logs, a recorded run, a saved baseline), and WhyNotChecked says why
// distributed and code went unjudged. DiagnoseHost (app/doctor_host.cc, with
// app/doctor_data.cc for --data) calls them memory first, then io, network,
// distributed and code, with the network and GPU rules it calls itself;
// MakeReport then orders the findings. Pure; thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analyze/host/baseline.h"
#include "analyze/host/storage_rules.h"
#include "analyze/run/analysis.h"
#include "core/status.h"
#include "sample/dataset.h"
#include "sample/finding.h"
#include "sample/io_bench.h"
#include "sample/nccl_log.h"
#include "sample/snapshot.h"

namespace stallscope {

// What doctor found, layer by layer, before it is ordered into a Report.
struct Triage {
  std::vector<Finding> findings;
  std::vector<Layer> checked;
  std::vector<std::pair<Layer, std::string>> why_not;
  std::vector<std::pair<Layer, std::string>> facts;
  std::vector<std::string> notes;
  std::optional<StorageSpeed> bench;
  std::optional<DatasetCensus> census;
  std::optional<RunAnalysis> run;
  std::vector<std::string> not_compared;

  // The findings, and the notes after those already here.
  void Add(FindingsWithNotes more) {
    for (Finding& f : more.findings) findings.push_back(std::move(f));
    for (std::string& n : more.notes) notes.push_back(std::move(n));
  }
};

// memory: MemAvailable against the limit, swap, pinned memory.
void TriageMemory(const Snapshot& snapshot, Triage& t);
// io: iostat -x of every physical disk over the snapshot's window.
void TriageHostDisks(const Snapshot& snapshot, Triage& t);
// io: the census of --data PATH, or a note saying why there is none.
void TriageCensus(const std::string& path, const Result<DatasetCensus>& census,
                  uint64_t memory_total_bytes, Triage& t);
// io: the storage bench beside the data (`bench_bytes`, `phase_seconds` a phase).
void TriageStorageBench(const IoBenchResult& result, uint64_t bench_bytes, double phase_seconds,
                        Triage& t);
// The same from the bench's speed, read mode and notes (what a child process
// that ran the bench on a remote mount sends back).
void TriageStorageSpeed(const StorageSpeed& speed, const std::string& read_mode,
                        const std::vector<std::string>& bench_notes, uint64_t bench_bytes,
                        double phase_seconds, Triage& t);
// network: the logs' network findings, judged against this host's Active
// RDMA ports (nullopt: unknown).
void TriageNcclLogs(const std::vector<NcclLogFile>& logs, const std::optional<HostRdmaPorts>& host,
                    Triage& t);
// A recorded run's findings (each with from_run), layers and notes. A
// finding from an NCCL log also passed with --nccl-log is there already.
void TriageRun(RunAnalysis run, Triage& t);
// The figures that fell below a saved baseline by more than `drift_share`.
void TriageBaseline(const HostBaseline& baseline, const HostBaseline& now, double drift_share,
                    Triage& t);
// Why the layers doctor cannot judge on a host alone were not checked.
std::vector<std::pair<Layer, std::string>> WhyNotChecked(const Triage& t);

}  // namespace stallscope
