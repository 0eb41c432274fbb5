// A run file read and judged: store/ reads the timeline, the baseline and
// the stored findings, analyze/run_analysis.h judges them. Touches only the
// file named; thread-compatible.
#pragma once

#include <string>

#include "analyze/run_analysis.h"
#include "core/status.h"

namespace stallscope {

// Errors name the file (missing, not SQLite, not a run file).
Result<RunAnalysis> AnalyzeRunFile(const std::string& path);

// `report RUN.db --html F`: the page of the run, written atomically.
Status WriteRunHtml(const RunAnalysis& run, const std::string& html_path);

}  // namespace stallscope
