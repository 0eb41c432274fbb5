// A run's findings printed as `run`, `watch` and `report` print them: read
// and judged by app/run_files.h, rendered by render/run_report.h. Touches
// only the file named; thread-compatible.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "analyze/run/analysis.h"
#include "core/status.h"
#include "sample/nccl_log.h"
#include "store/run_reader.h"

namespace stallscope {

// The findings of a run as `run`, `watch` and `report` print them: the JSON
// on stdout, or the text on `text_out`; kExitOk.
int PrintRunReport(const char* command, const RunAnalysis& run, bool json, std::FILE* text_out,
                   const std::vector<NcclLogFile>& nccl_logs = {});
// The same from the run file; `unsaved`: findings the run file could not
// keep, printed all the same. kExitCouldNotRun (with the message) when the
// file cannot be read.
int PrintRunReport(const char* command, const std::string& path, bool json, std::FILE* text_out,
                   const std::vector<NcclLogFile>& nccl_logs = {}, StoredFindings unsaved = {});

}  // namespace stallscope
