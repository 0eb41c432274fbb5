// Rendering of the distributed figures: the per-rank table that `run` and
// `report` print for a data-parallel run, and the table of `stallscope
// scale`; text for people, JSON objects for the --json reports. Pure;
// thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analyze/rank_rules.h"
#include "analyze/scaling.h"

namespace stallscope {

// Empty for fewer than two ranks (a single process has nothing to compare).
std::string RenderRankTable(const std::vector<RankSummary>& ranks);
nlohmann::ordered_json RanksToJson(const std::vector<RankSummary>& ranks);

std::string RenderScaleTable(const ScaleAnalysis& analysis);
nlohmann::ordered_json ScaleToJson(const ScaleAnalysis& analysis);

}  // namespace stallscope
