// A run's time breakdown (analyze/run/time_breakdown.h) as `report` prints it:
// a text table of up to four ranks' rows (seconds and share of the wall
// time), its HTML table and its JSON (`time_breakdown`), and the rows of
// two runs side by side for `diff`.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "analyze/run/time_breakdown.h"

namespace stallscope {

// "" when no rank reported steps.
std::string RenderTimeTable(const TimeBreakdown& time);
std::string RenderTimeHtml(const TimeBreakdown& time);
nlohmann::ordered_json TimeBreakdownToJson(const TimeBreakdown& time);

// The lowest rank's rows of two runs, and how each moved; "" when either
// run has no steps.
std::string RenderTimeChanges(const TimeBreakdown& before, const TimeBreakdown& after);
nlohmann::ordered_json TimeChangesToJson(const TimeBreakdown& before, const TimeBreakdown& after);

}  // namespace stallscope
