// A recorded run read back and judged, for `doctor --run RUN.db` and
// `report RUN.db --html F`: the timeline, the run rules' findings, the
// network host rules over the run's baseline snapshot, and the notes; and
// the HTML page of a run written safely. Wiring over store/, analyze/ and
// render/; touches only the files named. Thread-compatible.
#pragma once

#include <string>
#include <vector>

#include "analyze/finding.h"
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
};

// Errors name the file (missing, not SQLite, not a run file).
Result<RunAnalysis> AnalyzeRunFile(const std::string& path);

// Where an output file may be written: InvalidArgument "F exists; pass
// --force to overwrite it" when something is there and not `force`, or when
// F is a directory; NotFound when its directory does not exist.
Status CheckOutputPath(const std::string& path, bool force, std::string_view flag);

// `report RUN.db --html F`: the page of the run, written atomically.
Status WriteRunHtml(const RunAnalysis& run, const std::string& html_path);

}  // namespace stallscope
