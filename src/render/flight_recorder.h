// Rendering what `stallscope hang` found in a job's Flight Recorder dumps:
// the ranks the others wait for, then each diverging process group (the
// collective, the ranks in it and missing from it with their last completed
// collective, ranks that stopped completing, differing sizes or dtypes,
// point-to-point ops with no match), the groups stuck together in one line
// each, and the findings; and the same as JSON (schema stallscope.hang/1:
// the report of docs/findings.md plus a "hang" object with every group).
// Pure: an analysis and a report in, a string out. Thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "render/report.h"
#include "sample/flight_recorder.h"

namespace stallscope {

// Diverging groups printed in full before "... N more" (JSON has all).
inline constexpr size_t kFrTextMaxGroups = 8;
// Unmatched point-to-point ops and frames printed per group.
inline constexpr size_t kFrTextMaxLines = 4;

std::string RenderHangText(std::string_view source, const FlightRecorderAnalysis& analysis,
                           const ReportHeader& header, const Report& report);
nlohmann::ordered_json HangToJson(std::string_view source, const FlightRecorderAnalysis& analysis,
                                  const ReportHeader& header, const Report& report);

}  // namespace stallscope
