// Rendering `stallscope cluster`: one row per node (ranks with identical
// facts share a row), cells that differ from the other nodes marked with
// '*', for people; and the "cluster" object (schema stallscope.cluster/1)
// beside the stallscope.report/1 fields in --json output, with every rank's
// summary. Pure; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analyze/fleet/cluster_rules.h"
#include "sample/node_summary.h"

namespace stallscope {

std::string RenderClusterText(const ClusterComparison& comparison);
nlohmann::ordered_json ClusterToJson(const ClusterComparison& comparison,
                                     const std::vector<NodeSummary>& ranks,
                                     const std::vector<ClockOffset>& offsets);

}  // namespace stallscope
