// Rendering the collectives matched across ranks' traces
// (analyze/trace/collectives.h): each rank's wait and transfer, the latest
// arrivals, the stragglers; as text for `stallscope trace` and as the
// `collectives` parts of `stallscope.trace/1` (docs/commands/trace.md). Pure.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analyze/trace/collectives.h"

namespace stallscope {

// Latest arrivals the text lists.
inline constexpr size_t kTraceLatestArrivalsShown = 3;

// The top-level `collectives` object.
nlohmann::ordered_json CollectivesJson(const CollectiveSplit& split);
// A rank's `collectives` object (null where none of its kernels matched)
// and its `comm_kernels` list.
nlohmann::ordered_json RankCollectivesJson(const CollectiveSplit& split, int rank);
nlohmann::ordered_json CommKernelsJson(const std::vector<CommKernelUse>& kernels);

// "" where nothing matched.
std::string CollectivesText(const CollectiveSplit& split);

}  // namespace stallscope
