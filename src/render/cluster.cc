// `cluster` rendering: see cluster.h.
#include "render/cluster.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/version.h"

namespace stallscope {

std::string RenderClusterText(const ClusterComparison& c) {
  std::string out =
      fmt::format("stallscope cluster: {} rank(s) on {} node(s)\n\n", c.ranks, c.nodes);
  // Column widths from the cells, a marked cell one wider for its '*'.
  std::vector<std::string> head = {"node", "ranks"};
  head.insert(head.end(), c.columns.begin(), c.columns.end());
  std::vector<std::vector<std::string>> cells;
  for (const ClusterRow& r : c.rows) {
    std::vector<std::string> line = {r.host, RankRanges(r.ranks)};
    for (size_t k = 0; k < r.values.size(); ++k)
      line.push_back(r.values[k] + (r.differs[k] ? "*" : ""));
    cells.push_back(std::move(line));
  }
  std::vector<size_t> width(head.size());
  for (size_t k = 0; k < head.size(); ++k) {
    width[k] = head[k].size();
    for (const auto& line : cells) width[k] = std::max(width[k], line[k].size());
  }
  auto emit = [&](const std::vector<std::string>& line) {
    std::string text;
    for (size_t k = 0; k < line.size(); ++k)
      text += fmt::format("{:<{}}{}", line[k], width[k], k + 1 < line.size() ? "  " : "");
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out += text + "\n";
  };
  emit(head);
  for (const auto& line : cells) emit(line);
  out += "\n";
  if (c.differing_columns.empty()) {
    out += c.rows.size() <= 1 ? "every rank reports the same facts\n"
                              : "no column differs between the rows\n";
  } else {
    std::string cols;
    for (const std::string& s : c.differing_columns) cols += (cols.empty() ? "" : ", ") + s;
    out +=
        "* differs from the most common value (other nodes, or other ranks of one node): " + cols +
        "\n";
  }
  return out;
}

nlohmann::ordered_json ClusterToJson(const ClusterComparison& c,
                                     const std::vector<NodeSummary>& ranks,
                                     const std::vector<ClockOffset>& offsets) {
  nlohmann::ordered_json j;
  j["schema"] = "stallscope.cluster/1";
  j["version"] = Version();
  j["ranks"] = c.ranks;
  j["nodes"] = c.nodes;
  j["columns"] = c.columns;
  j["differing_columns"] = c.differing_columns;
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const ClusterRow& r : c.rows) {
    nlohmann::ordered_json values, differs = nlohmann::ordered_json::array();
    for (size_t k = 0; k < c.columns.size(); ++k) {
      values[c.columns[k]] = r.values[k];
      if (r.differs[k]) differs.push_back(c.columns[k]);
    }
    rows.push_back(
        {{"host", r.host}, {"ranks", r.ranks}, {"values", values}, {"differs", differs}});
  }
  j["rows"] = rows;
  nlohmann::ordered_json per_rank = nlohmann::ordered_json::array();
  for (const NodeSummary& n : ranks) {
    nlohmann::ordered_json ifs = nlohmann::ordered_json::array();
    for (const NodeInterface& i : n.interfaces)
      ifs.push_back({{"name", i.name},
                     {"mtu", i.mtu_bytes},
                     {"kind", i.kind},
                     {"operstate", i.operstate},
                     {"speed_mbps", i.speed_mbps}});
    nlohmann::ordered_json env = nlohmann::ordered_json::object();
    for (const EnvironmentVariable& v : n.environment) env[v.name] = v.value;
    nlohmann::ordered_json rdma = nlohmann::ordered_json::array();
    for (const NodeRdmaPort& p : n.rdma_ports)
      rdma.push_back({{"port", p.name}, {"state", p.state}});
    nlohmann::ordered_json entry = {{"rank", n.rank},
                                    {"host", n.hostname},
                                    {"kernel", n.kernel},
                                    {"cpu_model", n.cpu_model},
                                    {"cpus", n.cpu_count},
                                    {"gpus", n.gpus},
                                    {"gpu_note", n.gpu_note},
                                    {"driver_version", n.driver_version},
                                    {"cuda_version", n.cuda_version},
                                    {"interfaces", ifs},
                                    {"rdma_ports", rdma},
                                    {"environment", env},
                                    {"route_interface", n.route_interface},
                                    {"route_peer", n.route_peer},
                                    {"topology", n.topology},
                                    {"interface_in_use", InterfaceInUse(n)}};
    entry["clock_offset_ms"] = nullptr;
    entry["clock_round_trip_ms"] = nullptr;
    for (const ClockOffset& o : offsets) {
      if (o.rank != n.rank) continue;
      entry["clock_offset_ms"] = o.offset_ms;
      entry["clock_round_trip_ms"] = o.round_trip_ms;
    }
    per_rank.push_back(entry);
  }
  j["per_rank"] = per_rank;
  return j;
}

}  // namespace stallscope
