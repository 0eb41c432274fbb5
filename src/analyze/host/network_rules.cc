#include "analyze/host/network_rules.h"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "analyze/host/nic_placement_rules.h"
#include "core/text.h"
#include "sample/rdma_congestion.h"

namespace stallscope {
namespace {

int64_t AsInt(uint64_t v) { return static_cast<int64_t>(v); }

std::optional<uint32_t> Ipv4(std::string_view text) {
  std::string s(text.substr(0, text.find('/')));
  in_addr a;
  if (inet_pton(AF_INET, s.c_str(), &a) != 1) return std::nullopt;
  return ntohl(a.s_addr);
}

bool InDockerBridgeRange(std::string_view address) {
  std::optional<uint32_t> v4 = Ipv4(address);
  return v4 && (*v4 >> 16) == ((172u << 8) | 17u);
}

bool IsLoopbackAddress(std::string_view address) {
  if (std::optional<uint32_t> v4 = Ipv4(address)) return (*v4 >> 24) == 127;
  return address == "::1";
}

// An address NCCL can bootstrap over: IPv4, or IPv6 that is not link-local.
bool RoutableAddress(const IpAddress& a) {
  if (a.family == IpAddress::Family::kIpv4) return true;
  return !IsLinkLocalAddress(a.address) && a.address != "::1";
}

const NetInterface* FindInterface(const NetworkObservation& o, std::string_view name) {
  for (const NetInterface& i : o.interfaces) {
    if (i.name == name) return &i;
  }
  return nullptr;
}

// The peer is this host: a loopback address, the source address itself, or
// a route out through lo.
bool PeerIsThisHost(const NetworkObservation& o, const PeerRoute& r) {
  if (IsLoopbackAddress(r.address) || r.address == r.local_address) return true;
  const NetInterface* via = FindInterface(o, r.interface);
  return via != nullptr && via->kind == InterfaceKind::kLoopback;
}

bool IsUp(const NetInterface& i) {
  // Virtual interfaces (lo, some tunnels) report "unknown" while working.
  if (i.operstate == "down" || i.operstate == "lowerlayerdown" || i.operstate == "notpresent") {
    return false;
  }
  return i.carrier.value_or(true);
}

// Empty when NCCL/Gloo can use the interface for traffic between hosts;
// otherwise why not, in the user's words.
std::string WhyUnusable(const NetInterface& i) {
  if (i.kind == InterfaceKind::kLoopback) return i.name + " is loopback";
  if (i.kind == InterfaceKind::kDocker && i.master.empty()) {
    return i.name + " is a Docker bridge";
  }
  if (!IsUp(i)) return fmt::format("{} is down (operstate {})", i.name, i.operstate);
  bool has_address = std::any_of(i.addresses.begin(), i.addresses.end(), RoutableAddress);
  if (!has_address) return i.name + " has no IP address";
  return "";
}

// Interfaces other hosts can reach this one through (not loopback, not a
// Docker bridge, up, addressed).
bool HostNetworkInterface(const NetInterface& i) {
  return i.kind == InterfaceKind::kEthernet || i.kind == InterfaceKind::kBond ||
         i.kind == InterfaceKind::kInfiniband || i.kind == InterfaceKind::kVlan ||
         (i.kind == InterfaceKind::kDocker && i.master.empty());
}

struct ListProblems {
  std::vector<std::string> problems;
  std::vector<std::string> usable;  // interfaces (or ports) NCCL would use
};

ListProblems JudgeSocketList(const NetworkObservation& o, const InterfaceList& list) {
  ListProblems out;
  if (list.exclude) {
    for (const NetInterface& i : o.interfaces) {
      if (ListSelects(list, i.name, std::nullopt) && WhyUnusable(i).empty()) {
        out.usable.push_back(i.name);
      }
    }
    if (out.usable.empty()) out.problems.push_back("it excludes every usable interface");
    return out;
  }
  for (const InterfaceList::Entry& entry : list.entries) {
    // A prefix entry is fine when one of its matches is usable (NCCL takes
    // the usable ones); it is a problem when none is.
    std::vector<std::string> why;
    bool matched = false;
    bool entry_usable = false;
    for (const NetInterface& i : o.interfaces) {
      if (!EntryMatches(list, entry, i.name, std::nullopt)) continue;
      matched = true;
      std::string reason = WhyUnusable(i);
      if (reason.empty()) {
        entry_usable = true;
        out.usable.push_back(i.name);
      } else {
        why.push_back(reason);
      }
    }
    if (!matched) {
      out.problems.push_back(fmt::format("no interface {} '{}' exists",
                                         list.exact ? "named" : "starts with", entry.name));
    } else if (!entry_usable) {
      out.problems.push_back(Join(why, ", "));
    }
  }
  return out;
}

// Gloo takes exact names, comma separated (torch splits the variable).
ListProblems JudgeGlooList(const NetworkObservation& o, std::string_view value) {
  ListProblems out;
  for (std::string_view part : Split(value, ',')) {
    std::string name(Trim(part));
    if (name.empty()) continue;
    const NetInterface* i = FindInterface(o, name);
    if (i == nullptr) {
      out.problems.push_back(fmt::format("no interface named '{}' exists", name));
      continue;
    }
    std::string reason = WhyUnusable(*i);
    if (reason.empty()) {
      out.usable.push_back(name);
    } else {
      out.problems.push_back(reason);
    }
  }
  return out;
}

bool PortActive(const InfinibandPort& p) { return p.state && p.state->code == 4; }

ListProblems JudgeHcaList(const NetworkObservation& o, const InterfaceList& list) {
  ListProblems out;
  auto each_port = [&](auto&& f) {
    for (const InfinibandDevice& d : o.infiniband) {
      for (const InfinibandPort& p : d.ports) f(d, p);
    }
  };
  auto describe = [](const InfinibandDevice& d, const InfinibandPort& p) {
    return fmt::format("{}:{} is {}", d.name, p.port,
                       p.state ? p.state->name : "in no known state");
  };
  if (list.exclude) {
    each_port([&](const InfinibandDevice& d, const InfinibandPort& p) {
      if (ListSelects(list, d.name, static_cast<int>(p.port)) && PortActive(p)) {
        out.usable.push_back(fmt::format("{}:{}", d.name, p.port));
      }
    });
    if (out.usable.empty()) out.problems.push_back("it excludes every active RDMA port");
    return out;
  }
  for (const InterfaceList::Entry& entry : list.entries) {
    bool matched = false;
    bool entry_usable = false;
    std::vector<std::string> why;
    each_port([&](const InfinibandDevice& d, const InfinibandPort& p) {
      if (!EntryMatches(list, entry, d.name, static_cast<int>(p.port))) return;
      matched = true;
      if (PortActive(p)) {
        entry_usable = true;
        out.usable.push_back(fmt::format("{}:{}", d.name, p.port));
      } else {
        why.push_back(describe(d, p));
      }
    });
    if (!matched) {
      out.problems.push_back(fmt::format(
          "no RDMA device {} '{}'{}", list.exact ? "named" : "starting with", entry.name,
          entry.port ? fmt::format(" with port {}", *entry.port) : std::string()));
    } else if (!entry_usable) {
      out.problems.push_back(Join(why, ", "));
    }
  }
  return out;
}

bool Truthy(std::optional<std::string_view> v) {
  if (!v) return false;
  std::string_view t = Trim(*v);
  return !t.empty() && t != "0";
}

void CheckWrongInterface(const NetworkObservation& o, std::vector<Finding>& out) {
  const TrainingEnvironment& env = o.environment;
  struct Judged {
    std::string variable;
    std::string value;
    ListProblems result;
  };
  std::vector<Judged> judged;
  if (auto v = env.Get("NCCL_SOCKET_IFNAME"); v && !Trim(*v).empty()) {
    judged.push_back(
        {"NCCL_SOCKET_IFNAME", std::string(*v), JudgeSocketList(o, ParseInterfaceList(*v))});
  }
  if (auto v = env.Get("GLOO_SOCKET_IFNAME"); v && !Trim(*v).empty()) {
    judged.push_back({"GLOO_SOCKET_IFNAME", std::string(*v), JudgeGlooList(o, *v)});
  }
  // With IB disabled NCCL never reads NCCL_IB_HCA; rdma_unused speaks then.
  if (auto v = env.Get("NCCL_IB_HCA");
      v && !Trim(*v).empty() && !Truthy(env.Get("NCCL_IB_DISABLE"))) {
    judged.push_back({"NCCL_IB_HCA", std::string(*v), JudgeHcaList(o, ParseInterfaceList(*v))});
  }

  // The route to the master (or a given peer) must leave through an
  // interface the variable allows, or the bootstrap connects nowhere.
  for (Judged& j : judged) {
    if (j.variable == "NCCL_IB_HCA") continue;
    for (const PeerRoute& r : o.routes) {
      if (!r.error.empty() || r.interface.empty()) continue;
      if (PeerIsThisHost(o, r)) continue;
      bool allowed = j.variable == "NCCL_SOCKET_IFNAME"
                         ? ListSelects(ParseInterfaceList(j.value), r.interface, std::nullopt)
                         : std::find(j.result.usable.begin(), j.result.usable.end(), r.interface) !=
                               j.result.usable.end();
      if (allowed) continue;
      j.result.problems.push_back(
          fmt::format("the kernel routes to {} ({}) through {}", r.peer, r.address, r.interface));
    }
  }

  for (const Judged& j : judged) {
    if (j.result.problems.empty()) continue;
    bool none_usable = j.result.usable.empty();
    Finding f;
    f.id = "network.wrong_interface";
    f.layer = Layer::kNetwork;
    f.severity = none_usable ? Severity::kCritical : Severity::kWarning;
    f.summary = fmt::format("{}={}: {}{}", j.variable, j.value, Join(j.result.problems, "; "),
                            none_usable ? (j.variable == "NCCL_IB_HCA"
                                               ? " (no active port left: NCCL falls back to TCP)"
                                               : " (nothing usable left: the rendezvous fails or "
                                                 "stays on this host)")
                                        : "");
    f.evidence = {{"variable", j.variable},
                  {"value", j.value},
                  {"problems", Join(j.result.problems, "; ")},
                  {"usable", Join(j.result.usable, ",")},
                  {"usable_count", static_cast<int64_t>(j.result.usable.size())}};
    for (const PeerRoute& r : o.routes) {
      if (r.error.empty() && !r.interface.empty()) {
        f.evidence.push_back({"route_" + r.address, r.interface});
      }
    }
    std::vector<std::string> candidates;
    for (const NetInterface& i : o.interfaces) {
      if (WhyUnusable(i).empty() && i.kind != InterfaceKind::kDocker) candidates.push_back(i.name);
    }
    if (j.variable == "NCCL_IB_HCA") {
      f.next =
          "list the ports and their states with `ibstat` (or `stallscope snapshot`); set "
          "NCCL_IB_HCA to active ones (e.g. =mlx5_0:1), then confirm with NCCL_DEBUG=INFO "
          "that 'NET/IB : Using' names them";
    } else {
      f.next = fmt::format(
          "`ip -br addr` and `ip route get $MASTER_ADDR` show the interface that reaches the "
          "other hosts; set {} to it{}; confirm with NCCL_DEBUG=INFO ('NET/Socket : Using')",
          j.variable,
          candidates.empty() ? "" : fmt::format(" (usable here: {})", Join(candidates, ", ")));
    }
    out.push_back(std::move(f));
  }
}

void CheckContainerBridge(const NetworkObservation& o, std::vector<Finding>& out) {
  std::vector<std::string> clues;
  bool host_network = false;
  std::string bridged_interface;
  std::string bridged_address;
  for (const NetInterface& i : o.interfaces) {
    if (HostNetworkInterface(i)) host_network = true;
    if (i.kind == InterfaceKind::kLoopback) continue;
    for (const IpAddress& a : i.addresses) {
      bool veth = i.kind == InterfaceKind::kVeth;
      if (a.family != IpAddress::Family::kIpv4) continue;
      if ((veth || InDockerBridgeRange(a.address)) && bridged_interface.empty()) {
        bridged_interface = i.name;
        bridged_address = a.address;
        if (veth) clues.push_back(fmt::format("{} is a veth ({})", i.name, i.kind_evidence));
        if (InDockerBridgeRange(a.address)) {
          clues.push_back(fmt::format("{} has {} in Docker's bridge range {}", i.name, a.address,
                                      kDockerBridgeRange));
        }
      }
    }
  }
  if (host_network || bridged_interface.empty()) return;
  if (!o.container.in_container && !InDockerBridgeRange(bridged_address)) return;
  // A Kubernetes pod's veth carries a CNI address other nodes can route to;
  // only Docker's default bridge range says the address is host-private.
  if (o.container.runtime == "kubernetes" && !InDockerBridgeRange(bridged_address)) return;
  for (const std::string& e : o.container.evidence) clues.push_back(e);

  std::string multi_why;
  bool multi = MultiNodeHint(o, &multi_why);
  std::optional<int64_t> world = o.environment.WorldSize();
  Finding f;
  f.id = "network.container_bridge";
  f.layer = Layer::kNetwork;
  f.severity = multi                   ? Severity::kCritical
               : (world && *world > 1) ? Severity::kWarning
                                       : Severity::kInfo;
  f.summary = fmt::format(
      "the job runs in a container{} on bridge networking ({} {}): other hosts cannot reach "
      "{}, so a multi-host rendezvous times out ('Connect to {} timed out')",
      o.container.runtime.empty() ? "" : " (" + o.container.runtime + ")", bridged_interface,
      bridged_address, bridged_address, bridged_address);
  f.evidence = {{"interface", bridged_interface},
                {"address", bridged_address},
                {"in_container", o.container.in_container},
                {"host_network", false},
                {"clues", Join(clues, "; ")}};
  if (world) f.evidence.push_back({"world_size", *world});
  if (multi) f.evidence.push_back({"multi_node_hint", multi_why});
  f.next =
      "start the container with --network host (Kubernetes: hostNetwork: true) so the ranks use "
      "the host's NICs; check with `ip -br addr` inside the container that the host's interfaces "
      "appear";
  out.push_back(std::move(f));
}

void CheckRdmaUnused(const NetworkObservation& o, std::vector<Finding>& out) {
  std::vector<std::string> active;
  for (const InfinibandDevice& d : o.infiniband) {
    for (const InfinibandPort& p : d.ports) {
      if (!PortActive(p)) continue;
      active.push_back(fmt::format("{}:{} ({}{})", d.name, p.port, p.roce ? "RoCE" : "InfiniBand",
                                   p.rate ? ", " + p.rate->text : std::string()));
    }
  }
  if (active.empty()) return;
  const TrainingEnvironment& env = o.environment;
  std::string why;
  if (Truthy(env.Get("NCCL_IB_DISABLE"))) {
    why = fmt::format("NCCL_IB_DISABLE={}", *env.Get("NCCL_IB_DISABLE"));
  } else if (auto net = env.Get("NCCL_NET"); net && (*net == "Socket" || *net == "socket")) {
    why = fmt::format("NCCL_NET={}", *net);
  } else {
    return;
  }
  Finding f;
  f.id = "network.rdma_unused";
  f.layer = Layer::kNetwork;
  f.severity = Severity::kWarning;
  f.summary = fmt::format("{} active RDMA port{} ({}) but {}: NCCL sends over TCP sockets instead",
                          active.size(), active.size() == 1 ? "" : "s", Join(active, ", "), why);
  f.evidence = {{"active_ports", Join(active, ", ")},
                {"active_port_count", static_cast<int64_t>(active.size())},
                {"setting", why}};
  f.next =
      "unset it (NCCL_IB_DISABLE=0), rerun with NCCL_DEBUG=INFO and look for 'NET/IB : Using "
      "[0]mlx5_...'; compare with `stallscope nccl-log` of the current run (NET/Socket)";
  out.push_back(std::move(f));
}

void CheckPortErrors(const NetworkObservation& o, std::vector<Finding>& out) {
  if (!o.window_seconds) return;
  for (const PortErrorDelta& d : o.port_deltas) {
    Finding f;
    f.id = "network.port_errors";
    f.layer = Layer::kNetwork;
    if (d.rdma) {
      const uint64_t link_faults = d.buffer_overrun_errors + d.link_integrity_errors;
      if (d.symbol_errors + d.link_downed + d.rcv_errors + link_faults == 0) continue;
      f.severity = d.link_downed > 0 ? Severity::kCritical : Severity::kWarning;
      f.summary = fmt::format(
          "RDMA port {} counted {} symbol errors, {} receive errors and {} link-down events in "
          "{:.1f} s{}",
          d.port, d.symbol_errors, d.rcv_errors, d.link_downed, *o.window_seconds,
          link_faults > 0
              ? fmt::format(" ({} excessive buffer overruns, {} local link integrity errors)",
                            d.buffer_overrun_errors, d.link_integrity_errors)
              : "");
      f.evidence = {{"port", d.port},
                    {"window_seconds", *o.window_seconds},
                    {"symbol_errors", AsInt(d.symbol_errors)},
                    {"rcv_errors", AsInt(d.rcv_errors)},
                    {"link_downed", AsInt(d.link_downed)}};
      if (link_faults > 0) {
        f.evidence.push_back({"excessive_buffer_overrun_errors", AsInt(d.buffer_overrun_errors)});
        f.evidence.push_back({"local_link_integrity_errors", AsInt(d.link_integrity_errors)});
      }
      f.next = fmt::format(
          "`perfquery` / `ibqueryerrors` on the fabric, then reseat or replace the cable of {}; "
          "link_downed means the link flapped and NCCL's IB connections broke",
          d.port);
      out.push_back(std::move(f));
      continue;
    }
    uint64_t errors = d.rx_errors + d.tx_errors;
    uint64_t drops = d.rx_drops + d.tx_drops;
    double packets = static_cast<double>(std::max<uint64_t>(d.packets, 1));
    double error_fraction = static_cast<double>(errors) / packets;
    double drop_fraction = static_cast<double>(drops) / packets;
    bool error_hit = errors >= kPortErrorsWarningCount;
    bool drop_hit = drops >= kPortDropsMinCount && drop_fraction >= kPortDropsWarningFraction;
    if (!error_hit && !drop_hit) continue;
    bool critical = (error_hit && error_fraction >= kPortErrorsCriticalFraction) ||
                    (drop_hit && drop_fraction >= kPortDropsCriticalFraction);
    f.severity = critical ? Severity::kCritical : Severity::kWarning;
    f.summary = fmt::format(
        "{} counted {} errors (rx {}, tx {}) and {} drops (rx {}, tx {}) over {} packets in "
        "{:.1f} s",
        d.port, errors, d.rx_errors, d.tx_errors, drops, d.rx_drops, d.tx_drops, d.packets,
        *o.window_seconds);
    f.evidence = {{"interface", d.port},
                  {"window_seconds", *o.window_seconds},
                  {"packets", AsInt(d.packets)},
                  {"rx_errors", AsInt(d.rx_errors)},
                  {"tx_errors", AsInt(d.tx_errors)},
                  {"rx_drops", AsInt(d.rx_drops)},
                  {"tx_drops", AsInt(d.tx_drops)},
                  {"error_fraction", error_fraction},
                  {"drop_fraction", drop_fraction}};
    f.next = fmt::format(
        "`ethtool -S {}` for the counter that grows (crc, fifo, missed, discards); `ip -s link "
        "show {}`; check the cable/transceiver and the switch port, and ring buffers (`ethtool "
        "-g {}`) for drops",
        d.port, d.port, d.port);
    out.push_back(std::move(f));
  }
}

}  // namespace

InterfaceList ParseInterfaceList(std::string_view value) {
  InterfaceList list;
  value = Trim(value);
  if (!value.empty() && value.front() == '^') {
    list.exclude = true;
    value.remove_prefix(1);
  }
  if (!value.empty() && value.front() == '=') {
    list.exact = true;
    value.remove_prefix(1);
  }
  for (std::string_view part : Split(value, ',')) {
    part = Trim(part);
    if (part.empty()) continue;
    InterfaceList::Entry entry;
    size_t colon = part.find(':');
    if (colon != std::string_view::npos) {
      std::optional<uint64_t> port = ParseUint(part.substr(colon + 1));
      if (port && *port < 1u << 16) entry.port = static_cast<int>(*port);
      part = part.substr(0, colon);
    }
    entry.name = std::string(part);
    if (!entry.name.empty()) list.entries.push_back(std::move(entry));
  }
  return list;
}

bool EntryMatches(const InterfaceList& list, const InterfaceList::Entry& entry,
                  std::string_view name, std::optional<int> port) {
  bool name_ok = list.exact ? name == entry.name : StartsWith(name, entry.name);
  bool port_ok = !entry.port || !port || *entry.port == *port;
  return name_ok && port_ok;
}

bool ListSelects(const InterfaceList& list, std::string_view name, std::optional<int> port) {
  bool any = false;
  for (const InterfaceList::Entry& e : list.entries) {
    if (EntryMatches(list, e, name, port)) {
      any = true;
      break;
    }
  }
  return list.exclude ? !any : any;
}

std::vector<PortErrorDelta> NicErrorDeltas(const std::vector<NetRates>& rates) {
  std::vector<PortErrorDelta> out;
  for (const NetRates& r : rates) {
    if (r.counters_reset || r.name == "lo") continue;
    PortErrorDelta d;
    d.port = r.name;
    d.packets = static_cast<uint64_t>((r.rx_packets_per_s + r.tx_packets_per_s) * r.seconds + 0.5);
    d.rx_errors = r.rx_errors;
    d.tx_errors = r.tx_errors;
    d.rx_drops = r.rx_drops;
    d.tx_drops = r.tx_drops;
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<PortErrorDelta> RdmaErrorDeltas(const std::vector<InfinibandDevice>& before,
                                            const std::vector<InfinibandDevice>& after) {
  std::map<std::string, const InfinibandPort*> earlier;
  for (const InfinibandDevice& d : before) {
    for (const InfinibandPort& p : d.ports) earlier[fmt::format("{}:{}", d.name, p.port)] = &p;
  }
  auto grew = [](const std::optional<uint64_t>& a, const std::optional<uint64_t>& b) -> uint64_t {
    return a && b && *b > *a ? *b - *a : 0;
  };
  std::vector<PortErrorDelta> out;
  for (const InfinibandDevice& d : after) {
    for (const InfinibandPort& p : d.ports) {
      PortErrorDelta delta;
      delta.port = fmt::format("{}:{}", d.name, p.port);
      delta.rdma = true;
      auto it = earlier.find(delta.port);
      if (it == earlier.end()) continue;
      delta.symbol_errors = grew(it->second->symbol_errors, p.symbol_errors);
      delta.link_downed = grew(it->second->link_downed, p.link_downed);
      delta.rcv_errors = grew(it->second->rcv_errors, p.rcv_errors);
      delta.buffer_overrun_errors =
          grew(it->second->excessive_buffer_overrun_errors, p.excessive_buffer_overrun_errors);
      delta.link_integrity_errors =
          grew(it->second->local_link_integrity_errors, p.local_link_integrity_errors);
      out.push_back(std::move(delta));
    }
  }
  return out;
}

std::vector<NetworkObservation::NicCongestionDelta> RdmaCongestionDeltas(
    const std::vector<InfinibandDevice>& before, const std::vector<InfinibandDevice>& after) {
  std::map<std::string, NicCongestion> earlier;
  for (RdmaCongestionReading& r : RdmaCongestionReadings(before)) earlier[r.port] = r.total;
  std::vector<NetworkObservation::NicCongestionDelta> out;
  for (const RdmaCongestionReading& r : RdmaCongestionReadings(after)) {
    auto it = earlier.find(r.port);
    if (it == earlier.end()) continue;
    out.push_back({r.port, NicCongestionGrowth(it->second, r.total)});
  }
  return out;
}

bool MultiNodeHint(const NetworkObservation& o, std::string* why) {
  auto say = [&](std::string text) {
    if (why) *why = std::move(text);
    return true;
  };
  const TrainingEnvironment& env = o.environment;
  std::optional<int64_t> world = env.WorldSize();
  std::optional<int64_t> local_world;
  if (auto v = env.Get("LOCAL_WORLD_SIZE")) local_world = ParseInt(*v);
  if (world && local_world && *world > *local_world) {
    return say(fmt::format("WORLD_SIZE={} > LOCAL_WORLD_SIZE={}", *world, *local_world));
  }
  for (const char* name : {"NODE_RANK", "GROUP_RANK"}) {
    if (auto v = env.Get(name)) {
      if (auto n = ParseInt(*v); n && *n > 0) return say(fmt::format("{}={}", name, *n));
    }
  }
  if (world && *world > 1) {
    for (const PeerRoute& r : o.routes) {
      if (!r.error.empty() || r.interface.empty() || PeerIsThisHost(o, r)) continue;
      return say(fmt::format("{} ({}) is reached through {}, off this host", r.peer, r.address,
                             r.interface));
    }
  }
  return false;
}

// "mlx5_0:1": an RDMA port (RdmaCongestionDeltas); NICs never hold a ':'.
bool IsRdmaPortName(std::string_view name) { return name.find(':') != std::string_view::npos; }

struct XmitWait {
  double ticks_per_second = 0;
  double ratio = 0;  // ticks per 4-byte word sent
  bool hit = false;
  bool critical = false;
};

// An InfiniBand port's port_xmit_wait growth over the window against what
// it sent (network.congestion; the thresholds are in network_rules.h).
XmitWait XmitWaitOf(const NicCongestion& g, double seconds) {
  XmitWait w;
  if (!g.has_xmit_wait || seconds <= 0) return w;
  w.ticks_per_second = static_cast<double>(g.xmit_wait_ticks) / seconds;
  w.ratio = static_cast<double>(g.xmit_wait_ticks) /
            static_cast<double>(std::max<uint64_t>(g.xmit_words, 1));
  w.hit = w.ticks_per_second >= kXmitWaitMinTicksPerSecond && w.ratio >= kXmitWaitWarningRatio;
  w.critical = w.hit && w.ratio >= kXmitWaitCriticalRatio;
  return w;
}

// network.congestion and network.drops_buffer from the NICs' driver
// statistics over the window (sample/nic_stats.h).
void CheckNicCongestion(const NetworkObservation& o, std::vector<Finding>& out) {
  if (!o.window_seconds || *o.window_seconds <= 0) return;
  const double seconds = *o.window_seconds;
  for (const NetworkObservation::NicCongestionDelta& d : o.nic_congestion) {
    const NicCongestion& g = d.growth;
    const double pause_rate = static_cast<double>(g.pause_rx) / seconds;
    const double ecn_rate = static_cast<double>(g.ecn_marked) / seconds;
    const double cnp_rate = static_cast<double>(g.cnp_handled) / seconds;
    const XmitWait wait = XmitWaitOf(g, seconds);
    if (pause_rate >= kCongestionWarningPerSecond || ecn_rate >= kCongestionWarningPerSecond ||
        cnp_rate >= kCongestionWarningPerSecond || wait.hit) {
      Finding f;
      f.id = "network.congestion";
      f.layer = Layer::kNetwork;
      f.severity = pause_rate >= kPauseStormPerSecond || wait.critical ? Severity::kCritical
                                                                       : Severity::kWarning;
      std::vector<std::string> signs;
      if (wait.hit)
        signs.push_back(fmt::format(
            "port_xmit_wait grew {:.3g} ticks/s ({:.2f} ticks per 4-byte word sent: it waited "
            "for credits)",
            wait.ticks_per_second, wait.ratio));
      if (g.pause_rx > 0)
        signs.push_back(
            fmt::format("{:.0f} pause frames/s received (the switch told it to stop)", pause_rate));
      if (g.ecn_marked > 0) signs.push_back(fmt::format("{:.0f} ECN-marked packets/s", ecn_rate));
      if (g.cnp_handled > 0)
        signs.push_back(fmt::format("{:.0f} CNPs/s handled (its send rate was cut)", cnp_rate));
      f.summary = fmt::format(
          "{}: the fabric pushes back: {} over {:.1f} s: PFC/ECN at work, so the network, not "
          "this host, is what is slow",
          d.interface, Join(signs, ", "), seconds);
      f.evidence = {{IsRdmaPortName(d.interface) ? "port" : "interface", d.interface},
                    {"window_seconds", seconds},
                    {"pause_rx", AsInt(g.pause_rx)},
                    {"pause_tx", AsInt(g.pause_tx)},
                    {"ecn_marked", AsInt(g.ecn_marked)},
                    {"cnp_sent", AsInt(g.cnp_sent)},
                    {"cnp_handled", AsInt(g.cnp_handled)},
                    {"counters", Join(g.counters_used, ", ")}};
      if (g.has_xmit_wait) {
        f.evidence.push_back({"xmit_wait_ticks", AsInt(g.xmit_wait_ticks)});
        f.evidence.push_back({"xmit_wait_ticks_per_second", wait.ticks_per_second});
        f.evidence.push_back({"xmit_wait_per_word_sent", wait.ratio});
      }
      f.next =
          g.has_xmit_wait
              ? fmt::format(
                    "perfquery -x on {} twice, a minute apart (PortXmitWait), and `ibdiagnet "
                    "--pm_pause_time 60` for the fabric's congested links; an oversubscribed "
                    "uplink or many senders to one receiver (incast) in the job's all-to-all or "
                    "all-reduce shows as this",
                    d.interface)
              : fmt::format(
                    "ethtool -S {} | grep -E 'pause|cnp|ecn' twice, a minute apart; on the switch, "
                    "the "
                    "port's PFC and ECN counters and the uplinks' oversubscription; many senders "
                    "to one "
                    "receiver (incast) in the job's all-to-all or all-reduce shows as this",
                    d.interface);
      out.push_back(std::move(f));
    }
    const uint64_t drops = g.buffer_drops + g.allowance_exceeded;
    if (drops >= kBufferDropsMinCount) {
      Finding f;
      f.id = "network.drops_buffer";
      f.layer = Layer::kNetwork;
      const double rate = static_cast<double>(drops) / seconds;
      f.severity = rate >= kBufferDropsCriticalPerSecond ? Severity::kCritical : Severity::kWarning;
      f.summary =
          g.allowance_exceeded > 0
              ? fmt::format(
                    "{}: {} packets queued or dropped over {:.1f} s because the instance's "
                    "network allowance (bandwidth, packets/s) was exceeded{}",
                    d.interface, g.allowance_exceeded, seconds,
                    g.buffer_drops > 0
                        ? fmt::format(", and {} dropped for want of a buffer", g.buffer_drops)
                        : "")
              : fmt::format(
                    "{}: {} packets dropped over {:.1f} s for want of a receive buffer or ring "
                    "slot: the host does not drain the NIC fast enough",
                    d.interface, g.buffer_drops, seconds);
      f.evidence = {{"interface", d.interface},
                    {"window_seconds", seconds},
                    {"buffer_drops", AsInt(g.buffer_drops)},
                    {"allowance_exceeded", AsInt(g.allowance_exceeded)},
                    {"pause_tx", AsInt(g.pause_tx)},
                    {"counters", Join(g.counters_used, ", ")}};
      if (IsRdmaPortName(d.interface)) {
        f.summary = fmt::format(
            "RDMA port {}: {} packets dropped over {:.1f} s for want of a posted receive buffer "
            "(out_of_buffer): the receiving processes do not keep up",
            d.interface, g.buffer_drops, seconds);
        f.evidence[0] = {"port", d.interface};
      }
      f.next = IsRdmaPortName(d.interface)
                   ? "the job's ranks on this host starved of CPU (doctor's cpu findings), or "
                     "NCCL_IB_QPS_PER_CONNECTION / NCCL_BUFFSIZE too small for the traffic; "
                     "compare the counter on each host to find the slow receiver"
               : g.allowance_exceeded > 0
                   ? "a larger instance type or fewer, larger transfers; ethtool -S " +
                         d.interface + " | grep allowance shows which limit"
                   : fmt::format(
                         "ethtool -g {} (raise the RX ring to its maximum with ethtool -G), spread "
                         "the NIC's interrupts over the NUMA node's CPUs, and keep the loader's "
                         "workers off those CPUs",
                         d.interface);
      out.push_back(std::move(f));
    }
  }
}

NetworkObservation ObserveNetwork(const Snapshot& snapshot) {
  NetworkObservation o;
  o.interfaces = snapshot.interfaces;
  o.infiniband = snapshot.infiniband;
  o.environment = snapshot.environment;
  o.container = snapshot.container;
  o.topology = snapshot.topology;
  if (snapshot.interval_seconds > 0 && !snapshot.net_rates.empty()) {
    o.window_seconds = snapshot.interval_seconds;
    o.port_deltas = NicErrorDeltas(snapshot.net_rates);
  }
  if (snapshot.interval_seconds > 0) {
    for (const Snapshot::NicStatsReading& r : snapshot.nic_stats) {
      if (!r.growth_known) continue;
      if (!o.window_seconds) o.window_seconds = snapshot.interval_seconds;
      o.nic_congestion.push_back({r.interface, r.growth});
    }
  }
  return o;
}

FindingsWithNotes CheckNetwork(const NetworkObservation& observation) {
  std::vector<Finding> out;
  CheckContainerBridge(observation, out);
  CheckWrongInterface(observation, out);
  CheckRdmaUnused(observation, out);
  CheckPortErrors(observation, out);
  CheckNicCongestion(observation, out);
  if (observation.topology) {
    std::optional<Finding> far =
        CheckNicFarFromGpu({*observation.topology, observation.environment,
                            observation.nccl_log_nics, observation.nccl_log_name});
    if (far) out.push_back(std::move(*far));
  }
  return FindingsWithNotes{std::move(out), {}};
}

std::optional<Finding> CheckPathMtu(const MtuObservation& o) {
  if (!o.local_mtu || !o.path_mtu) return std::nullopt;
  bool peer_differs = o.peer_mtu && *o.peer_mtu != *o.local_mtu;
  bool path_smaller = *o.path_mtu < *o.local_mtu;
  if (!peer_differs && !path_smaller) return std::nullopt;
  // The kernel learns a smaller path MTU from ICMP "fragmentation needed";
  // when it still believes the local MTU, full-size packets vanish silently.
  bool black_hole = path_smaller && (!o.kernel_mtu || *o.kernel_mtu >= *o.local_mtu);
  Finding f;
  f.id = "network.mtu_mismatch";
  f.layer = Layer::kNetwork;
  f.severity = black_hole ? Severity::kCritical : Severity::kWarning;
  std::string peer_part =
      o.peer_mtu
          ? fmt::format(", {}'s {} MTU {}", o.peer,
                        o.peer_interface.empty() ? "interface" : o.peer_interface, *o.peer_mtu)
          : "";
  f.summary = fmt::format(
      "MTU mismatch towards {}: local {} MTU {}, path MTU {}{}{}", o.peer, o.local_interface,
      *o.local_mtu, *o.path_mtu, peer_part,
      black_hole ? ": packets above the path MTU are dropped without notice (small packets pass, "
                   "large ones vanish)"
                 : "");
  f.evidence = {{"peer", o.peer},
                {"local_interface", o.local_interface},
                {"local_mtu_bytes", AsInt(*o.local_mtu)},
                {"path_mtu_bytes", AsInt(*o.path_mtu)}};
  if (o.kernel_mtu) f.evidence.push_back({"kernel_path_mtu_bytes", AsInt(*o.kernel_mtu)});
  if (o.peer_mtu) {
    f.evidence.push_back({"peer_interface", o.peer_interface});
    f.evidence.push_back({"peer_mtu_bytes", AsInt(*o.peer_mtu)});
  }
  uint64_t smallest = std::min(*o.local_mtu, *o.path_mtu);
  if (o.peer_mtu) smallest = std::min(smallest, *o.peer_mtu);
  f.next = fmt::format(
      "set the same MTU on both ends and every switch port between (`ip link set dev {} mtu "
      "{}` here, or raise the others to {}); check with `ping -M do -s {} {}`",
      o.local_interface.empty() ? "IFACE" : o.local_interface, smallest,
      std::max(*o.local_mtu, o.peer_mtu.value_or(*o.local_mtu)), *o.local_mtu - 28, o.peer);
  return f;
}

}  // namespace stallscope
