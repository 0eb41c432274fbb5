// A recorded run read back and judged, the one analysis behind `run`,
// `watch`, `report RUN.db` (text, --json, --html) and `doctor --run RUN.db`:
// the timeline, the run rules' findings, the network host rules over the
// run's baseline snapshot, the notes, and the per-epoch and per-rank tables
// the text prints; and the HTML page of a run written safely. Wiring over
// store/, analyze/ and render/; touches only the files named.
// Thread-compatible.
#pragma once

#include <string>
#include <vector>

#include "sample/finding.h"
#include "analyze/rank_rules.h"
#include "analyze/run_rules.h"
#include "core/status.h"
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

// Errors name the file (missing, not SQLite, not a run file).
Result<RunAnalysis> AnalyzeRunFile(const std::string& path);

// The run's findings ordered into the report every output prints.
Report MakeRunReport(const RunAnalysis& run);

// Where an output file may be written: InvalidArgument "F exists; pass
// --force to overwrite it" when something is there and not `force`, or when
// F is a directory; NotFound when its directory does not exist.
Status CheckOutputPath(const std::string& path, bool force, std::string_view flag);

// `report RUN.db --html F`: the page of the run, written atomically.
Status WriteRunHtml(const RunAnalysis& run, const std::string& html_path);

}  // namespace stallscope
