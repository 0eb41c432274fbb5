// A recorded run judged: the one analysis behind `run`, `watch`, `report
// RUN.db` (text, --json, --html) and `doctor --run RUN.db`. From what the
// run file holds (its timeline, its baseline snapshot, the findings `run`
// stored beside them; cli/run_analysis.h reads them), the run rules'
// findings, the network host rules over the baseline, the notes, and the
// per-epoch and per-rank tables. Pure; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analyze/rank_rules.h"
#include "analyze/run_rules.h"
#include "core/status.h"
#include "sample/finding.h"
#include "sample/timeline.h"

namespace stallscope {

struct RunAnalysis {
  std::string path;
  Timeline timeline;
  std::vector<Finding> findings;
  std::vector<std::string> notes;
  std::string baseline_json;  // "" when the run has none
  // The layers the run's data let the rules judge: memory, io, network, and
  // distributed when two or more ranks reported steps.
  std::vector<Layer> checked;
  std::vector<EpochSummary> epochs;  // empty when the hook marked none
  std::vector<RankSummary> ranks;    // one row per rank with steps
};

// `baseline_json`: nullopt when the run has none; `stored`: the stored
// findings, or why they could not be read (a note, not an error: the
// timeline is still worth its report).
RunAnalysis AnalyzeRun(std::string path, Timeline timeline,
                       std::optional<std::string> baseline_json,
                       const Result<FindingsWithNotes>& stored);

// The run's findings ordered into the report every output prints.
Report MakeRunReport(const RunAnalysis& run);

}  // namespace stallscope
