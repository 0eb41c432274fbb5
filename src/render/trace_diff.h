// Rendering `stallscope trace --diff CONTROL TEST` (analyze/trace/diff.h):
// both sides' temporal breakdown, the ops and kernels whose count or total
// time changed ranked by the time they explain, those added and removed, as
// text; and the same as JSON, schema `stallscope.trace_diff/1`
// (docs/commands/trace.md). Pure. Thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "analyze/trace/diff.h"

namespace stallscope {

// How many changed ops the text lists (JSON lists every one).
inline constexpr size_t kTraceDiffTopOps = 20;

std::string RenderTraceDiffText(const TraceDiff& diff, size_t top = kTraceDiffTopOps);
nlohmann::ordered_json TraceDiffToJson(const TraceDiff& diff);

// One line of a changed op, as the text and `diff`'s GPU part show it:
// "+60.0 µs  gemm (kernel): 1 x 30.0 µs -> 1 x 90.0 µs".
std::string TraceOpDiffLine(const TraceOpDiff& op);

}  // namespace stallscope
