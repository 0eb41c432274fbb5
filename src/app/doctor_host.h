// The steps of `stallscope doctor` as functions of their inputs and a probe
// root: every input the user named checked before anything is sampled (so
// bad usage costs nothing and leaves no file behind), then the host sampled
// and triaged layer by layer (memory, io with the dataset's census and
// a short storage bench, network, the NCCL logs, GPUs, a recorded run, the
// baseline), into the report and what the page and the JSON show. The
// command (cli/doctor_command.cc) parses flags, calls these, writes the
// files asked for and prints. Reads under the root; the storage bench
// writes only its test file beside the data; thread-compatible.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analyze/host/baseline.h"
#include "analyze/host/doctor_triage.h"
#include "core/file.h"
#include "core/status.h"
#include "probe/snapshot.h"
#include "sample/finding.h"
#include "sample/nccl_log.h"
#include "sample/snapshot.h"

namespace stallscope {

// What doctor was asked to check (its flags, less the output's).
struct DoctorRequest {
  double interval_seconds = 1.0;  // the sampling window
  bool quick = false;             // no active benchmark
  std::string data;               // --data: the dataset, its census and a storage bench
  std::vector<std::string> runs;  // --run: run files of one job
  std::string html;               // --html F, checked before sampling
  bool force = false;             // --force: --html may overwrite
  std::string baseline;           // --baseline F
  std::string save_baseline;      // --save-baseline F
  double drift_percent = kDriftDefaultShare * 100;
  std::vector<std::string> peers;      // --peer HOST...
  std::vector<std::string> nccl_logs;  // --nccl-log FILE...
  // --from: a capture read back (app/node_capture.h): no wait, no live
  // measurement (the storage bench, routes), each said "not in the capture".
  std::optional<SnapshotReplay> replay;
  // A capture being taken starts its second tree here (SnapshotOptions).
  std::function<void()> after_first_sample;
};

// The inputs the user named, read and checked.
struct DoctorInputs {
  std::optional<HostBaseline> baseline;
  std::optional<RunAnalysis> run;
  std::vector<NcclLogFile> nccl_logs;
};

// InvalidArgument naming the flag for a window or drift out of range, a
// --data that does not exist, an --html or --save-baseline that may not be
// written (a file that is not a baseline is never overwritten), a baseline,
// run file or NCCL log that cannot be read. A --data on a remote mount of
// the root's mount table is not looked at here (app/doctor_data.h).
Result<DoctorInputs> CheckDoctorInputs(const Root& root, const DoctorRequest& request);

// What the library is doing, for a progress line: each text replaces the
// last; "" erases it.
using Progress = std::function<void(std::string_view text)>;

// The host judged: the snapshot it was judged from, the triage, why each
// layer not checked was not, the report, and the host's figures as a
// baseline (what --save-baseline writes).
struct HostDiagnosis {
  Snapshot snapshot;
  Triage triage;
  std::vector<std::pair<Layer, std::string>> why_not_checked;
  Report report;
  HostBaseline now;
};

// Samples the root for `request.interval_seconds` and triages it with the
// inputs. The snapshot's error when the host cannot be read.
Result<HostDiagnosis> DiagnoseHost(const Root& root, const DoctorRequest& request,
                                   DoctorInputs inputs, const Progress& progress);

}  // namespace stallscope
