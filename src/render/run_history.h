// Rendering `stallscope history`: the text a user reads (per job: a table
// of runs with outliers marked, a line per change with its causes, the
// verdict) and the stallscope.history/1 JSON (docs/commands/history.md).
// Pure; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analyze/run/history.h"

namespace stallscope {

std::string RenderHistoryText(const std::vector<HistoryJob>& jobs, HistoryMetric metric,
                              const std::vector<std::string>& notes);
nlohmann::ordered_json HistoryJson(const std::vector<HistoryJob>& jobs, HistoryMetric metric,
                                   const std::vector<std::string>& notes);
// The causes of one change in a line: the step's parts that explain it and
// what else changed between the two representatives.
std::string ChangeCauses(const HistoryChange& change);

}  // namespace stallscope
