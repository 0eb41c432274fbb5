// Rendering what `stallscope trace` found: per rank, HTA's breakdowns (the
// temporal breakdown, comm/compute overlap, the kernel types and the top
// kernels, idle time per stream, copies by direction) as a table, then the
// findings in the triage's layer order; and the same as JSON, schema
// `stallscope.trace/1` (docs/commands/trace.md). Pure. Thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analyze/trace/breakdown.h"
#include "analyze/trace/collectives.h"
#include "render/report.h"

namespace stallscope {

// Top kernels a rank lists (JSON and text).
inline constexpr size_t kTraceTopKernels = 10;

std::string RenderTraceText(const std::vector<TraceRankBreakdown>& ranks,
                            const ReportHeader& header, const Report& report,
                            const PotentialStragglers& stragglers = {},
                            const CollectiveSplit& split = {});
nlohmann::ordered_json TraceToJson(const std::vector<TraceRankBreakdown>& ranks,
                                   const ReportHeader& header, const Report& report,
                                   const PotentialStragglers& stragglers = {},
                                   const CollectiveSplit& split = {});

// How HTA's potential stragglers compare with the distributed.straggler
// finding: "" when they agree (or neither names a rank), else a sentence.
std::string StragglerAgreement(const PotentialStragglers& stragglers, const Report& report);

}  // namespace stallscope
