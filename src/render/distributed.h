// Rendering of the distributed figures: the per-rank table that `run` and
// `report` print for a data-parallel run, the per-node table of a job read
// from several run files, and the table of `stallscope
// scale`; text for people, JSON objects for the --json reports. Pure;
// thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analyze/run/analysis.h"
#include "analyze/run/job_analysis.h"
#include "analyze/run/rank_rules.h"
#include "analyze/run/scaling.h"

namespace stallscope {

// Empty for fewer than two ranks (a single process has nothing to compare).
std::string RenderRankTable(const std::vector<RankSummary>& ranks);
nlohmann::ordered_json RanksToJson(const std::vector<RankSummary>& ranks);
// A node's job interface and what it received while its ranks synced:
// "veth-a 12.3 MB/s"; "-" without an interface.
std::string ReceiveText(const NodeRow& n);
// "" for fewer than two nodes.
std::string RenderNodeTable(const std::vector<NodeRow>& nodes);
// JSON `nodes` of stallscope.report/1: an array (empty for one file).
nlohmann::ordered_json NodesToJson(const std::vector<NodeRow>& nodes);

std::string RenderScaleTable(const ScaleAnalysis& analysis);
// The report's "scale" object: the analysis, then the command, the steps a
// point ran and the launcher that started its ranks.
nlohmann::ordered_json ScaleToJson(const ScaleAnalysis& analysis, const std::string& command,
                                   int64_t steps, const std::string& launcher);

}  // namespace stallscope
