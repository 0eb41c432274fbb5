// A recorded run judged: the one analysis behind `run`, `watch`, `report
// RUN.db` (text, --json, --html) and `doctor --run RUN.db`. From what the
// run file holds (its timeline, its baseline snapshot, the findings `run`
// stored beside them; app/run_files.h reads them), the run rules'
// findings, the network host rules over the baseline, the notes, and the
// per-epoch and per-rank tables. Pure; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analyze/run/rank_rules.h"
#include "analyze/run/rules.h"
#include "analyze/run/time_breakdown.h"
#include "core/status.h"
#include "sample/finding.h"
#include "sample/timeline.h"

namespace stallscope {

// One node of a job read from several run files (analyze/run/job_analysis.h):
// its figures over the run, for the per-node table and JSON `nodes`.
struct NodeRow {
  std::string path;
  std::string host;
  std::optional<int> node_rank;
  std::vector<int> ranks;                    // the global ranks whose steps the file holds
  std::optional<double> steps_per_s;         // its lowest rank's, over the counted steps
  std::optional<double> data_wait_fraction;  // its ranks' data wait / step time
  std::optional<double> sync_wait_fraction;  // likewise, with stallscope.ddp(model)
  uint64_t peak_tree_rss_bytes = 0;
  double swap_pages_per_s = 0;  // in + out, mean over the samples
  std::string data_device;
  double disk_util_pct = 0;  // the data disk's means over the samples
  double disk_await_ms = 0;
  double cpu_pct = 0;              // the host's busy CPU, mean
  double clock_shift_seconds = 0;  // added to the file's times to put them on the first file's
  std::optional<double> clock_offset_seconds;  // its host minus node 0's, as measured
  bool truncated = false;                      // its recording stopped well before the others'
  // Its job interface (NodeInfo::net_interface) and what that received
  // while its ranks synced (analyze/run/node_rules.h ReceiveWhileSyncing).
  std::string net_interface;
  std::optional<double> receive_bytes_per_s;
  bool receive_during_sync = false;
};

struct RunAnalysis {
  std::string path;  // several files: joined with ", "
  Timeline timeline;
  std::vector<Finding> findings;
  std::vector<std::string> notes;
  std::string baseline_json;  // "" when the run has none
  // The layers the run's data let the rules judge: memory, io, network, and
  // distributed when two or more ranks reported steps.
  std::vector<Layer> checked;
  std::vector<EpochSummary> epochs;  // empty when the hook marked none
  std::vector<RankSummary> ranks;    // one row per rank with steps
  std::vector<NodeRow> nodes;        // several files read as one job; empty for one
  TimeBreakdown time;                // where the wall time went, per rank
};

// `baseline_json`: nullopt when the run has none; `stored`: the stored
// findings, or why they could not be read (a note, not an error: the
// timeline is still worth its report). `node_of_job`: the file is one node's
// of several read as one job: the rank rules are left to AnalyzeJob, which
// judges every node's ranks together (analyze/run/job_analysis.h).
RunAnalysis AnalyzeRun(std::string path, Timeline timeline,
                       std::optional<std::string> baseline_json,
                       const Result<FindingsWithNotes>& stored, bool node_of_job = false);

// The run's findings ordered into the report every output prints.
Report MakeRunReport(const RunAnalysis& run);

}  // namespace stallscope
