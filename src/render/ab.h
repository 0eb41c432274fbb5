// Rendering `ab`: the side-by-side table of the two runs (as is, degraded)
// and one run's figures in the JSON. Pure; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "analyze/run/ab_rules.h"

namespace stallscope {

// `change`: what the degraded run changed ("num_workers=0 NCCL_P2P_DISABLE=1").
std::string RenderAbTable(const AbRunFigures& as_is, const AbRunFigures& degraded,
                          const std::string& change);
nlohmann::ordered_json AbFiguresToJson(const AbRunFigures& run);
// The report's "ab" object: the command, the steps asked for, the change,
// both runs' figures and B's speed against A's; with `degraded_log` (B's
// output captured for NCCL_DEBUG), that file and its NCCL line count.
nlohmann::ordered_json AbToJson(const std::string& command, int64_t steps,
                                const std::string& change, const AbRunFigures& as_is,
                                const AbRunFigures& degraded, const std::string& degraded_log,
                                uint64_t nccl_lines);

}  // namespace stallscope
