// A run file read and judged: store/ reads the timeline, the baseline and
// the stored findings, analyze/run/analysis.h judges them; several files
// are read at once, one thread each, and judged as one job
// (analyze/run/job_analysis.h). Touches only the files named; thread-compatible.
#pragma once

#include <string>
#include <vector>

#include "analyze/run/analysis.h"
#include "core/status.h"

namespace stallscope {

// Errors name the file (missing, not SQLite, not a run file).
Result<RunAnalysis> AnalyzeRunFile(const std::string& path);
// One file as AnalyzeRunFile; several as one job (analyze/run/job_analysis.h):
// the error names the file that cannot be read, or the files of different
// jobs.
Result<RunAnalysis> AnalyzeRunFiles(const std::vector<std::string>& paths);

// `report RUN.db --html F`: the page of the run, written atomically.
Status WriteRunHtml(const RunAnalysis& run, const std::string& html_path);

}  // namespace stallscope
