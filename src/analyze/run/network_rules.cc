// The network rules of a recorded run (network_rules.h).
//
// network.port_errors judges the growth of each port's error counters from
// the run's first stored reading to its last (the timeline's
// port_counters); network.congestion and network.drops_buffer the growth
// of its congestion counters (congestion_counters) over the same span. The host rules
// (wrong_interface, container_bridge, rdma_unused) judge the run's baseline snapshot, which the run
// file keeps as stallscope.snapshot/1 JSON; NetworkFromBaseline turns that JSON back into a
// NetworkObservation, accepting missing or mistyped fields (the file may come from anywhere) as
// unknown. The route to MASTER_ADDR is the live kernel's and is not in a run file: doctor checks
// it.
#include "analyze/run/network_rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "analyze/run/congestion_sync.h"
#include "analyze/run/rules.h"

namespace stallscope {
namespace {

using Json = nlohmann::json;

std::string Text(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::optional<uint64_t> Unsigned(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_unsigned()) return std::nullopt;
  return it->get<uint64_t>();
}

InterfaceKind KindNamed(const std::string& name) {
  for (InterfaceKind k : {InterfaceKind::kLoopback, InterfaceKind::kEthernet,
                          InterfaceKind::kBridge, InterfaceKind::kBond, InterfaceKind::kVeth,
                          InterfaceKind::kDocker, InterfaceKind::kInfiniband, InterfaceKind::kVlan,
                          InterfaceKind::kTun, InterfaceKind::kWireless}) {
    if (name == InterfaceKindName(k)) return k;
  }
  return InterfaceKind::kOther;
}

// A prefix length: up to three digits.
std::optional<int64_t> ParsePrefixLength(const std::string& text) {
  if (text.empty() || text.size() > 3) return std::nullopt;
  int64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

// "10.1.2.3/24" or "fe80::1/64".
std::optional<IpAddress> AddressFrom(const std::string& text) {
  size_t slash = text.rfind('/');
  if (slash == std::string::npos || slash == 0) return std::nullopt;
  IpAddress a;
  a.address = text.substr(0, slash);
  a.family = a.address.find(':') != std::string::npos ? IpAddress::Family::kIpv6
                                                      : IpAddress::Family::kIpv4;
  std::optional<int64_t> prefix = ParsePrefixLength(text.substr(slash + 1));
  a.prefix_length = prefix ? static_cast<int>(*prefix) : 0;
  return a;
}

int IbStateCode(const std::string& name) {
  static const std::map<std::string, int> kCodes = {
      {"DOWN", 1}, {"INIT", 2}, {"ARMED", 3}, {"ACTIVE", 4}, {"ACTIVE_DEFER", 5}};
  auto it = kCodes.find(name);
  return it == kCodes.end() ? 0 : it->second;
}

// The port a congestion finding names: evidence "interface" or "port".
std::string FindingPort(const Finding& f) {
  for (const auto& e : f.evidence) {
    const std::string* text = std::get_if<std::string>(&e.value);
    if ((e.name == "interface" || e.name == "port") && text != nullptr) return *text;
  }
  return {};
}

// Whether the port's congestion came with the job's all-reduce phases
// (analyze/run/congestion_sync.h), in the finding's words and evidence.
void AddSyncCorrelation(const Timeline& timeline, Finding& f) {
  std::optional<CongestionSyncCorrelation> c =
      CorrelateCongestionWithSync(timeline, FindingPort(f));
  if (!c) return;
  const bool with_sync = c->correlation >= kCongestionSyncCorrelation;
  f.summary += fmt::format(
      "; the job's sync-wait share was {:.0f}% in the {} intervals with congestion against {:.0f}% "
      "in the other {} (r = {:.2f}){}",
      100 * c->sync_share_congested, c->congested_intervals, 100 * c->sync_share_quiet,
      c->intervals - c->congested_intervals, c->correlation,
      with_sync ? ": it comes with the all-reduce phases, so it slows the collectives" : "");
  f.evidence.push_back({"sync_share_congested", c->sync_share_congested});
  f.evidence.push_back({"sync_share_quiet", c->sync_share_quiet});
  f.evidence.push_back({"congestion_sync_correlation", c->correlation});
  f.evidence.push_back({"intervals", static_cast<int64_t>(c->intervals)});
}

}  // namespace

Result<NetworkObservation> NetworkFromBaseline(std::string_view snapshot_json) {
  Json j = Json::parse(snapshot_json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::ParseError("baseline", 0, "the run file's baseline snapshot is not JSON");
  }
  NetworkObservation o;
  if (auto it = j.find("interfaces"); it != j.end() && it->is_array()) {
    for (const Json& i : *it) {
      if (!i.is_object()) continue;
      NetInterface n;
      n.name = Text(i, "name");
      if (n.name.empty()) continue;
      n.kind = KindNamed(Text(i, "kind"));
      n.kind_evidence = Text(i, "kind_evidence");
      n.mtu_bytes = Unsigned(i, "mtu");
      n.operstate = Text(i, "operstate");
      n.master = Text(i, "master");
      n.pci_address = Text(i, "pci_address");
      if (auto a = i.find("addresses"); a != i.end() && a->is_array()) {
        for (const Json& text : *a) {
          if (!text.is_string()) continue;
          if (std::optional<IpAddress> address = AddressFrom(text.get<std::string>())) {
            n.addresses.push_back(*address);
          }
        }
      }
      o.interfaces.push_back(std::move(n));
    }
  }
  if (auto it = j.find("infiniband"); it != j.end() && it->is_array()) {
    std::map<std::string, InfinibandDevice> devices;
    for (const Json& p : *it) {
      if (!p.is_object()) continue;
      std::string hca = Text(p, "hca");
      std::optional<uint64_t> number = Unsigned(p, "port");
      if (hca.empty() || !number) continue;
      InfinibandDevice& d = devices[hca];
      d.name = hca;
      InfinibandPort port;
      port.port = static_cast<uint32_t>(*number);
      if (std::string state = Text(p, "state"); !state.empty()) {
        port.state = IbPortState{IbStateCode(state), state};
      }
      if (auto rate = p.find("rate_gbps"); rate != p.end() && rate->is_number()) {
        port.rate = IbRate{rate->get<double>(), fmt::format("{} Gb/sec", rate->get<double>())};
      }
      port.link_layer = Text(p, "link_layer");
      port.roce = port.link_layer == "Ethernet";
      port.netdev = Text(p, "netdev");
      port.symbol_errors = Unsigned(p, "symbol_errors");
      port.link_downed = Unsigned(p, "link_downed");
      port.rcv_errors = Unsigned(p, "rcv_errors");
      d.ports.push_back(std::move(port));
    }
    for (auto& [name, device] : devices) o.infiniband.push_back(std::move(device));
  }
  if (auto it = j.find("environment"); it != j.end() && it->is_object()) {
    o.environment.source = "the run's baseline";
    for (const auto& [name, value] : it->items()) {
      if (value.is_string()) o.environment.variables.push_back({name, value.get<std::string>()});
    }
    std::sort(
        o.environment.variables.begin(), o.environment.variables.end(),
        [](const EnvironmentVariable& a, const EnvironmentVariable& b) { return a.name < b.name; });
  }
  if (auto it = j.find("container"); it != j.end() && it->is_object()) {
    if (auto in = it->find("in_container"); in != it->end() && in->is_boolean()) {
      o.container.in_container = in->get<bool>();
    }
    o.container.runtime = Text(*it, "runtime");
    if (auto e = it->find("evidence"); e != it->end() && e->is_array()) {
      for (const Json& clue : *e) {
        if (clue.is_string()) o.container.evidence.push_back(clue.get<std::string>());
      }
    }
  }
  return o;
}

FindingsWithNotes CheckRunNetwork(const Timeline& timeline) {
  // First and last stored reading of each port, in the order first seen.
  std::vector<std::string> order;
  std::map<std::string, std::pair<const PortCounterPoint*, const PortCounterPoint*>> span;
  for (const PortCounterPoint& p : timeline.port_counters) {
    auto [it, inserted] = span.try_emplace(p.port, &p, &p);
    if (inserted) {
      order.push_back(p.port);
    } else {
      if (p.t < it->second.first->t) it->second.first = &p;
      if (p.t >= it->second.second->t) it->second.second = &p;
    }
  }
  NetworkObservation o;
  auto grew = [](uint64_t a, uint64_t b) { return b > a ? b - a : 0; };
  double window = 0;
  for (const std::string& name : order) {
    const PortCounterPoint& a = *span[name].first;
    const PortCounterPoint& b = *span[name].second;
    if (&a == &b) continue;
    window = std::max(window, b.t - a.t);
    PortErrorDelta d;
    d.port = name;
    d.rdma = b.rdma;
    d.packets = grew(a.packets, b.packets);
    d.rx_errors = grew(a.rx_errors, b.rx_errors);
    d.tx_errors = grew(a.tx_errors, b.tx_errors);
    d.rx_drops = grew(a.rx_drops, b.rx_drops);
    d.tx_drops = grew(a.tx_drops, b.tx_drops);
    d.symbol_errors = grew(a.symbol_errors, b.symbol_errors);
    d.link_downed = grew(a.link_downed, b.link_downed);
    d.rcv_errors = grew(a.rcv_errors, b.rcv_errors);
    o.port_deltas.push_back(std::move(d));
  }
  // The congestion counters from each port's first stored reading to its
  // last: the same rules as doctor's, with the run as the window.
  std::map<std::string, std::pair<const CongestionPoint*, const CongestionPoint*>> congestion;
  std::vector<std::string> congestion_order;
  for (const CongestionPoint& p : timeline.congestion) {
    auto [it, inserted] = congestion.try_emplace(p.port, &p, &p);
    if (inserted) {
      congestion_order.push_back(p.port);
    } else {
      if (p.t < it->second.first->t) it->second.first = &p;
      if (p.t >= it->second.second->t) it->second.second = &p;
    }
  }
  for (const std::string& name : congestion_order) {
    const auto [a, b] = congestion[name];
    if (a == b || b->t <= a->t) continue;
    window = std::max(window, b->t - a->t);
    o.nic_congestion.push_back({name, NicCongestionGrowth(a->counters, b->counters)});
  }
  if ((o.port_deltas.empty() && o.nic_congestion.empty()) || window <= 0) return {};
  o.window_seconds = window;
  FindingsWithNotes out = CheckNetwork(o);
  for (Finding& f : out.findings) {
    if (f.id == "network.congestion") AddSyncCorrelation(timeline, f);
  }
  return out;
}

}  // namespace stallscope
