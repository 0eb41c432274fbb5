// A run file read, judged and printed: store/ reads the timeline, the
// baseline and the stored findings, analyze/run_analysis.h judges them,
// render/run_report.h renders them. Touches only the
// file named; thread-compatible.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "analyze/run_analysis.h"
#include "core/status.h"
#include "sample/nccl_log.h"
#include "store/run_reader.h"

namespace stallscope {

// Errors name the file (missing, not SQLite, not a run file).
Result<RunAnalysis> AnalyzeRunFile(const std::string& path);
// One file as AnalyzeRunFile; several as one job (analyze/job_analysis.h):
// the error names the file that cannot be read, or the files of different
// jobs.
Result<RunAnalysis> AnalyzeRunFiles(const std::vector<std::string>& paths);

// The findings of a run as `run`, `watch` and `report` print them: the JSON
// on stdout, or the text on `text_out`; kExitOk.
int PrintRunReport(const char* command, const RunAnalysis& run, bool json, std::FILE* text_out,
                   const std::vector<NcclLogFile>& nccl_logs = {});
// The same from the run file; `unsaved`: findings the run file could not
// keep, printed all the same. kExitCouldNotRun (with the message) when the
// file cannot be read.
int PrintRunReport(const char* command, const std::string& path, bool json, std::FILE* text_out,
                   const std::vector<NcclLogFile>& nccl_logs = {}, StoredFindings unsaved = {});

// `report RUN.db --html F`: the page of the run, written atomically.
Status WriteRunHtml(const RunAnalysis& run, const std::string& html_path);

}  // namespace stallscope
