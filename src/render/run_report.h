// Rendering what `run`, `watch` and `report` say about a recorded run: the
// per-epoch table, the run's header line and its HTML page, next to the
// Report rendering of render/report.h. Pure; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "analyze/run/analysis.h"
#include "analyze/run/rules.h"
#include "sample/nccl_log.h"
#include "sample/timeline.h"

namespace stallscope {

// "python3 train.py exited 0 after 42.0 s, 40 samples" or "was killed by
// SIGKILL (the OOM killer)".
std::string DescribeRunEnd(const RunInfo& info, size_t samples);
std::string RenderEpochTable(const std::vector<EpochSummary>& epochs);
nlohmann::ordered_json EpochsToJson(const std::vector<EpochSummary>& epochs);
nlohmann::ordered_json RunInfoToJson(const RunInfo& info);

// What `run`, `watch` and `report` print: the JSON (stallscope.report/1 plus
// run, epochs, ranks and the NCCL logs the run read), and the text.
nlohmann::ordered_json NcclLogsJson(const std::vector<NcclLogFile>& logs);
nlohmann::ordered_json RunReportJson(std::string_view command, const RunAnalysis& run,
                                     const std::vector<NcclLogFile>& nccl_logs);
std::string RenderRunReportText(std::string_view command, const RunAnalysis& run);

// `report RUN.db --html F`: the page of the run (render/html_report.h).
std::string RenderRunHtml(const RunAnalysis& run);

}  // namespace stallscope
