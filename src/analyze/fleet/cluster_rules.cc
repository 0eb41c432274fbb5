// Comparing node summaries: see cluster_rules.h.
#include "analyze/fleet/cluster_rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "analyze/host/network_rules.h"
#include "core/text.h"

namespace stallscope {
namespace {

enum Column {
  kGpus,
  kDriver,
  kCuda,
  kCpu,
  kKernel,
  kNics,
  kInUse,
  kEnv,
  kTopology,
  kClock,
  kColumnCount
};
constexpr const char* kColumnNames[] = {"gpus",    "driver", "cuda",          "cpu",      "kernel",
                                        "nic mtu", "in use", "nccl/gloo env", "topology", "clock"};

// NICs that carry traffic between nodes; bridges, veths and tunnels are
// per-host plumbing whose MTU is the host's own business.
bool IsFabricNic(const NodeInterface& i) {
  return i.kind == "ethernet" || i.kind == "infiniband" || i.kind == "bond" || i.kind == "vlan";
}

std::string GpuText(const NodeSummary& n) {
  if (n.gpus.empty()) return n.gpu_note.empty() ? "none" : "none";
  std::map<std::string, int> models;
  for (const std::string& g : n.gpus) ++models[g];
  std::string out;
  for (const auto& [model, count] : models)
    out += fmt::format("{}{}x {}", out.empty() ? "" : ", ", count, model);
  return out;
}

std::string NicText(const NodeSummary& n) {
  std::string out;
  for (const NodeInterface& i : n.interfaces) {
    if (!IsFabricNic(i)) continue;
    out += fmt::format("{}{}:{}", out.empty() ? "" : " ", i.name, i.mtu_bytes);
  }
  return out.empty() ? "-" : out;
}

const NodeInterface* FindInterface(const NodeSummary& n, std::string_view name) {
  for (const NodeInterface& i : n.interfaces)
    if (i.name == name) return &i;
  return nullptr;
}

std::string InUseText(const NodeSummary& n) {
  std::string name = InterfaceInUse(n);
  if (name.empty()) return "-";
  const NodeInterface* i = FindInterface(n, name);
  return i ? fmt::format("{} mtu {}", name, i->mtu_bytes) : name;
}

std::string EnvText(const NodeSummary& n) {
  std::string out;
  for (const EnvironmentVariable& v : n.environment)
    out += fmt::format("{}{}={}", out.empty() ? "" : " ", v.name, v.value);
  return out.empty() ? "-" : out;
}

std::optional<std::string> EnvValue(const NodeSummary& n, std::string_view name) {
  for (const EnvironmentVariable& v : n.environment)
    if (v.name == name) return v.value;
  return std::nullopt;
}

double ExcessMs(const ClockOffset& o) { return std::fabs(o.offset_ms) - o.round_trip_ms / 2; }

// network.wrong_interface for one rank and one variable.
void CheckNamedInterfaces(const NodeSummary& n, const std::vector<NodeSummary>& all,
                          std::string_view variable, bool rdma, std::vector<Finding>* out) {
  std::optional<std::string> value = EnvValue(n, variable);
  if (!value || value->empty()) return;
  InterfaceList list =
      variable == "GLOO_SOCKET_IFNAME" ? InterfaceList{} : ParseInterfaceList(*value);
  if (variable == "GLOO_SOCKET_IFNAME") {
    // Gloo takes exact names, comma-separated in recent versions.
    list.exact = true;
    size_t start = 0;
    while (start <= value->size()) {
      size_t comma = value->find(',', start);
      std::string name =
          value->substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (!name.empty()) list.entries.push_back({name, std::nullopt});
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  if (list.exclude || list.entries.empty()) return;
  auto matches_on = [&](const NodeSummary& node, const InterfaceList::Entry& e) {
    if (rdma) {
      for (const NodeRdmaPort& p : node.rdma_ports) {
        std::string hca = p.name.substr(0, p.name.find(':'));
        std::optional<int> port;
        if (size_t c = p.name.find(':'); c != std::string::npos)
          port = static_cast<int>(std::strtol(p.name.c_str() + c + 1, nullptr, 10));
        if (EntryMatches(list, e, hca, port)) return true;
      }
      return false;
    }
    for (const NodeInterface& i : node.interfaces)
      if (EntryMatches(list, e, i.name, std::nullopt)) return true;
    return false;
  };
  std::vector<std::string> missing, elsewhere;
  size_t found = 0;
  for (const InterfaceList::Entry& e : list.entries) {
    if (matches_on(n, e)) {
      ++found;
      continue;
    }
    missing.push_back(e.name);
    std::vector<std::string> hosts;
    for (const NodeSummary& other : all) {
      if (other.hostname != n.hostname && matches_on(other, e) &&
          std::find(hosts.begin(), hosts.end(), other.hostname) == hosts.end())
        hosts.push_back(other.hostname);
    }
    if (!hosts.empty()) elsewhere.push_back(fmt::format("{} (on {})", e.name, Join(hosts, ", ")));
  }
  if (missing.empty()) return;
  std::vector<std::string> present;
  if (rdma) {
    for (const NodeRdmaPort& p : n.rdma_ports) present.push_back(p.name);
  } else {
    for (const NodeInterface& i : n.interfaces) present.push_back(i.name);
  }
  Finding f;
  f.id = "network.wrong_interface";
  f.layer = Layer::kNetwork;
  f.severity = found == 0 ? Severity::kCritical : Severity::kWarning;
  f.summary = fmt::format("rank {} on {}: {}={} names {} that {} does not have{}", n.rank,
                          n.hostname, variable, *value, Join(missing, ", "), n.hostname,
                          found == 0 ? ": nothing is left to use" : "");
  f.evidence = {{"rank", static_cast<int64_t>(n.rank)},
                {"host", n.hostname},
                {"variable", std::string(variable)},
                {"value", *value},
                {"missing", Join(missing, ",")},
                {rdma ? "rdma_ports_on_host" : "interfaces_on_host", Join(present, ",")}};
  if (!elsewhere.empty()) f.evidence.push_back({"present_on_other_nodes", Join(elsewhere, "; ")});
  f.next = fmt::format(
      "set {} per node to a name that exists there (ip -br link on {}), or give the NICs the "
      "same names on every node; then rerun stallscope cluster",
      variable, n.hostname);
  out->push_back(std::move(f));
}

}  // namespace

std::string RankRanges(const std::vector<int>& ranks) {
  std::vector<int> r = ranks;
  std::sort(r.begin(), r.end());
  std::string out;
  for (size_t i = 0; i < r.size();) {
    size_t j = i;
    while (j + 1 < r.size() && r[j + 1] == r[j] + 1) ++j;
    out += (out.empty() ? "" : ",") +
           (j == i ? std::to_string(r[i]) : fmt::format("{}-{}", r[i], r[j]));
    i = j + 1;
  }
  return out;
}

std::string InterfaceInUse(const NodeSummary& n) {
  if (std::optional<std::string> v = EnvValue(n, "NCCL_SOCKET_IFNAME"); v && !v->empty()) {
    InterfaceList list = ParseInterfaceList(*v);
    for (const NodeInterface& i : n.interfaces) {
      if (i.kind != "loopback" && i.operstate != "down" && ListSelects(list, i.name, std::nullopt))
        return i.name;
    }
    return "";
  }
  return n.route_interface;
}

ClusterComparison CompareNodes(const std::vector<NodeSummary>& ranks,
                               const std::vector<ClockOffset>& offsets) {
  ClusterComparison c;
  c.columns.assign(std::begin(kColumnNames), std::end(kColumnNames));
  c.ranks = static_cast<int>(ranks.size());
  std::map<int, const ClockOffset*> offset_of;
  for (const ClockOffset& o : offsets) offset_of[o.rank] = &o;

  // Rows: ranks with the same host and the same values share one.
  std::set<std::string> hosts;
  for (const NodeSummary& n : ranks) {
    hosts.insert(n.hostname);
    std::vector<std::string> values(kColumnCount);
    values[kGpus] = GpuText(n);
    values[kDriver] = n.driver_version.empty() ? "-" : n.driver_version;
    values[kCuda] = n.cuda_version.empty() ? "-" : n.cuda_version;
    values[kCpu] = fmt::format("{} x{}", n.cpu_model.empty() ? "?" : n.cpu_model, n.cpu_count);
    values[kKernel] = n.kernel;
    values[kNics] = NicText(n);
    values[kInUse] = InUseText(n);
    values[kEnv] = EnvText(n);
    // The GPU/NIC paths (nvidia-smi topo -m in a few words): one node with
    // a card in another slot or an NVLink down shows here.
    values[kTopology] = n.topology.empty() ? "-" : n.topology;
    ClusterRow* row = nullptr;
    for (ClusterRow& r : c.rows) {
      bool same = r.host == n.hostname;
      for (int k = 0; same && k < kClock; ++k) same = r.values[k] == values[k];
      if (same) row = &r;
    }
    if (row == nullptr) {
      c.rows.push_back({n.hostname, {}, values, std::vector<bool>(kColumnCount, false)});
      row = &c.rows.back();
    }
    row->ranks.push_back(n.rank);
  }
  c.nodes = static_cast<int>(hosts.size());

  // The clock column: the largest offset among the row's ranks.
  for (ClusterRow& r : c.rows) {
    const ClockOffset* worst = nullptr;
    for (int rank : r.ranks) {
      auto it = offset_of.find(rank);
      if (it != offset_of.end() &&
          (!worst || std::fabs(it->second->offset_ms) > std::fabs(worst->offset_ms)))
        worst = it->second;
    }
    r.values[kClock] = worst ? fmt::format("{:+.3f} ms", worst->offset_ms) : "-";
    r.differs[kClock] = worst && ExcessMs(*worst) > kClockOffsetWarningMs;
  }

  // Mark the cells that differ from the most common value (rank 0's row on a tie).
  for (int k = 0; k < kClock; ++k) {
    std::map<std::string, size_t> votes;
    for (const ClusterRow& r : c.rows) ++votes[r.values[k]];
    if (votes.size() < 2) continue;
    c.differing_columns.push_back(kColumnNames[k]);
    std::string majority = c.rows.front().values[k];
    for (const auto& [value, n] : votes)
      if (n > votes[majority]) majority = value;
    for (ClusterRow& r : c.rows) r.differs[k] = r.values[k] != majority;
  }
  if (std::any_of(c.rows.begin(), c.rows.end(),
                  [](const ClusterRow& r) { return r.differs[kClock]; }))
    c.differing_columns.push_back(kColumnNames[kClock]);

  // distributed.heterogeneous_gpus: models over all ranks' nodes (a node
  // counts once), and counts per node.
  std::map<std::string, std::set<std::string>> model_hosts;
  std::map<std::string, size_t> count_of_host;
  for (const NodeSummary& n : ranks) {
    for (const std::string& g : n.gpus) model_hosts[g].insert(n.hostname);
    count_of_host[n.hostname] = std::max(count_of_host[n.hostname], n.gpus.size());
  }
  std::set<size_t> counts;
  for (const auto& [host, count] : count_of_host) counts.insert(count);
  if (!model_hosts.empty() && (model_hosts.size() > 1 || counts.size() > 1)) {
    std::vector<std::string> parts;
    for (const auto& [model, hs] : model_hosts)
      parts.push_back(fmt::format("{} on {}", model, Join({hs.begin(), hs.end()}, ",")));
    std::vector<std::string> per_host;
    for (const auto& [host, count] : count_of_host)
      per_host.push_back(fmt::format("{}:{}", host, count));
    Finding f;
    f.id = "distributed.heterogeneous_gpus";
    f.layer = Layer::kDistributed;
    f.severity = model_hosts.size() > 1 ? Severity::kWarning : Severity::kInfo;
    f.summary = model_hosts.size() > 1
                    ? fmt::format("{} GPU models in one job: the slowest sets every step's pace",
                                  model_hosts.size())
                    : "nodes have different GPU counts";
    f.evidence = {{"models", Join(parts, "; ")}, {"gpus_per_node", Join(per_host, " ")}};
    f.next =
        "run on one GPU model (a node selector or Slurm --constraint), or give the slower GPUs "
        "smaller batches; stallscope run reports which rank the others wait for";
    c.findings.push_back(std::move(f));
  }

  // network.mtu_mismatch: the interfaces in use, then same-named fabric NICs.
  std::map<uint64_t, std::vector<std::string>> in_use_mtus;
  std::set<std::string> seen_hosts;
  for (const NodeSummary& n : ranks) {
    if (!seen_hosts.insert(n.hostname).second) continue;
    std::string name = InterfaceInUse(n);
    const NodeInterface* i = name.empty() ? nullptr : FindInterface(n, name);
    if (i && i->kind != "loopback")
      in_use_mtus[i->mtu_bytes].push_back(fmt::format("{}:{}", n.hostname, name));
  }
  std::map<std::string, std::map<uint64_t, std::vector<std::string>>> named_mtus;
  seen_hosts.clear();
  for (const NodeSummary& n : ranks) {
    if (!seen_hosts.insert(n.hostname).second) continue;
    for (const NodeInterface& i : n.interfaces)
      if (IsFabricNic(i) && i.operstate != "down")
        named_mtus[i.name][i.mtu_bytes].push_back(n.hostname);
  }
  std::vector<std::string> mismatches;
  if (in_use_mtus.size() > 1) {
    std::vector<std::string> parts;
    for (const auto& [mtu, where] : in_use_mtus)
      parts.push_back(fmt::format("{} on {}", mtu, Join(where, ",")));
    mismatches.push_back("interfaces in use: " + Join(parts, "; "));
  }
  for (const auto& [name, by_mtu] : named_mtus) {
    if (by_mtu.size() < 2) continue;
    std::vector<std::string> parts;
    for (const auto& [mtu, where] : by_mtu)
      parts.push_back(fmt::format("{} on {}", mtu, Join(where, ",")));
    mismatches.push_back(fmt::format("{}: {}", name, Join(parts, "; ")));
  }
  if (!mismatches.empty()) {
    Finding f;
    f.id = "network.mtu_mismatch";
    f.layer = Layer::kNetwork;
    f.severity = Severity::kWarning;
    f.summary = "MTUs differ between nodes: " + mismatches.front();
    f.evidence = {{"mtus", Join(mismatches, " | ")}, {"nodes", static_cast<int64_t>(c.nodes)}};
    f.next =
        "set one MTU on every node's fabric NIC (ip link set dev IF mtu 9000, and the switch "
        "ports), then check the path: ping -M do -s 8972 PEER, or stallscope net probe PEER";
    c.findings.push_back(std::move(f));
  }

  // network.wrong_interface, per rank.
  for (const NodeSummary& n : ranks) {
    CheckNamedInterfaces(n, ranks, "NCCL_SOCKET_IFNAME", false, &c.findings);
    CheckNamedInterfaces(n, ranks, "GLOO_SOCKET_IFNAME", false, &c.findings);
    CheckNamedInterfaces(n, ranks, "NCCL_IB_HCA", true, &c.findings);
  }

  // distributed.clock_offset.
  for (const ClockOffset& o : offsets) {
    double excess = ExcessMs(o);
    if (excess <= kClockOffsetWarningMs) continue;
    std::string host;
    for (const NodeSummary& n : ranks)
      if (n.rank == o.rank) host = n.hostname;
    Finding f;
    f.id = "distributed.clock_offset";
    f.layer = Layer::kDistributed;
    f.severity = excess > kClockOffsetCriticalMs ? Severity::kCritical : Severity::kWarning;
    f.summary = fmt::format("the clock of {} (rank {}) is {:+.1f} ms off rank 0's", host, o.rank,
                            o.offset_ms);
    f.evidence = {{"rank", static_cast<int64_t>(o.rank)},
                  {"host", host},
                  {"offset_ms", o.offset_ms},
                  {"round_trip_ms", o.round_trip_ms}};
    f.next = fmt::format("chronyc tracking (or timedatectl) on {}: enable NTP/chrony on every node",
                         host);
    c.findings.push_back(std::move(f));
  }
  return c;
}

}  // namespace stallscope
