// Findings from an NCCL log summary (see nccl_log.h). Pure: a summary and,
// optionally, this host's RDMA ports in; findings out. Thresholds and their
// reasons are in the catalog (analyze/catalog.cc) under the same ids.
#include "analyze/nccl_log/rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "analyze/nccl_log/causes.h"
#include "analyze/nccl_log/failures.h"
#include "analyze/nccl_log/versions.h"
#include "core/text.h"
#include "sample/nccl_log.h"
#include "sample/network.h"

namespace stallscope {
namespace {

// TCP copes up to about 4 hosts; from 8 hosts on, its CPU cost and resends
// after drops make RDMA all but required. So sockets on an RDMA-capable job
// are critical from kRdmaRequiredNodes hosts, a warning below.
constexpr int kRdmaRequiredNodes = 8;
// Names listed in one evidence string before "and N more".
constexpr size_t kMaxNamesListed = 8;

std::string JoinCapped(const std::vector<std::string>& names, size_t cap = kMaxNamesListed) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < cap; ++i) {
    if (i) out += ", ";
    out += names[i];
  }
  if (names.size() > cap) out += fmt::format(" and {} more", names.size() - cap);
  return out;
}

std::string InterfaceText(const NcclInterface& i) {
  return i.address.empty() ? i.name : i.name + ":" + i.address;
}

// The first octets of an IPv4 address; false for anything else.
bool Octets(std::string_view a, int* first, int* second) {
  size_t dot = a.find('.');
  if (dot == std::string_view::npos) return false;
  auto x = ParseInt(a.substr(0, dot));
  std::string_view rest = a.substr(dot + 1);
  auto y = ParseInt(rest.substr(0, rest.find('.')));
  if (!x || !y) return false;
  *first = static_cast<int>(*x);
  *second = static_cast<int>(*y);
  return true;
}

bool InDockerRange(std::string_view address) {  // 172.16.0.0/12, Docker's bridges
  int a = 0, b = 0;
  return Octets(address, &a, &b) && a == 172 && b >= 16 && b <= 31;
}

// Why an interface cannot carry a multi-host job; empty when it can. Judged
// by kind and address, not by name alone: a veth or docker-named interface
// is a container bridge when its address is in Docker's range or the process
// has another interface to use; one that holds the process's only address is
// its network (`alone`).
std::string BadInterfaceReason(const NcclInterface& i, bool alone) {
  if (i.name == "lo" || StartsWith(i.address, "127.") || i.address == "::1") return "loopback";
  // libvirt's default network is 192.168.122.0/24, NATed: by name and
  // address; a virbr that holds the process's only address is its network.
  if (StartsWith(i.name, "virbr")) {
    return StartsWith(i.address, "192.168.122.") || !alone ? "libvirt NAT bridge" : "";
  }
  if (StartsWith(i.name, "docker") || StartsWith(i.name, "br-") || StartsWith(i.name, "veth")) {
    if (InDockerRange(i.address) || !alone) return "container bridge";
    return "";
  }
  // Docker's default bridge network is 172.17.0.0/16: a container on it sees
  // its own eth0 with such an address, unreachable from other hosts (use --network host).
  if (StartsWith(i.address, "172.17.")) return "Docker default bridge address";
  return "";
}

// The interfaces a process used, not all it listed: bootstrap listens on the
// first; the channels name the NET/Socket ones ("via NET/Socket/1"), and none
// of them when every channel ran another net; IB's OOB when IB is used.
struct UsedInterface {
  const NcclInterface* iface;
  const char* role;
  bool alone;
};

std::vector<UsedInterface> InterfacesUsed(const NcclProcess& p) {
  std::vector<UsedInterface> out;
  size_t addresses = 0;
  std::set<std::string> seen;
  for (const auto* list : {&p.bootstrap, &p.net_socket}) {
    for (const NcclInterface& i : *list) {
      if (!NcclAddressRedacted(i.address) && seen.insert(i.address).second) ++addresses;
    }
  }
  const bool alone = addresses <= 1;
  if (!p.bootstrap.empty()) out.push_back({&p.bootstrap[0], "bootstrap", alone});
  bool socket_channels = false;
  bool other_channels = false;
  for (const std::string& n : p.channel_nets)
    (n == "Socket" ? socket_channels : other_channels) = true;
  for (size_t i = 0; i < p.net_socket.size(); ++i) {
    bool used = p.socket_devs_used != 0 ? (i < 64 && (p.socket_devs_used >> i) & 1)
                                        : !(other_channels && !socket_channels);
    if (used) out.push_back({&p.net_socket[i], "NET/Socket", alone});
  }
  for (const NcclInterface& i : p.ib_oob) out.push_back({&i, "NET/IB out-of-band", alone});
  return out;
}

bool MultiNode(const NcclLogSummary& log) { return NcclJobNodes(log) > 1; }

std::string RankName(const NcclLogSummary& log, const NcclRank& r) {
  std::string name = log.processes[r.process].Name();
  if (r.cuda_dev >= 0) name += fmt::format(" [{}]", r.cuda_dev);
  if (r.rank >= 0) name += fmt::format(" rank {}", r.rank);
  return name;
}

// The line that shows the interface in its role for p: bootstrap's line,
// the first channel over a socket (or the NET/Socket list), 0 if none.
uint64_t LineOfUse(const NcclProcess& p, std::string_view role) {
  if (role == "bootstrap") return p.bootstrap_line;
  if (role == "NET/Socket")
    return p.socket_channel_line != 0 ? p.socket_channel_line : p.socket_line;
  return 0;
}

void WrongInterface(const NcclLogSummary& log, std::string_view source, std::vector<Finding>& out) {
  struct Use {
    std::string reason;
    std::set<std::string> roles;
    std::vector<std::string> processes;
    uint64_t first_line = 0;
    std::set<std::string> good;  // other interfaces these processes listed, not bad ones
    bool by_name_only = false;   // a bridge's name, its address no sign of one
  };
  std::map<std::string, Use> bad;  // by "name:address"
  for (const NcclProcess& p : log.processes) {
    for (const UsedInterface& u : InterfacesUsed(p)) {
      std::string reason = BadInterfaceReason(*u.iface, u.alone);
      if (reason.empty()) continue;
      Use& use = bad[InterfaceText(*u.iface)];
      use.reason = reason;
      use.by_name_only =
          (reason == "libvirt NAT bridge" && !StartsWith(u.iface->address, "192.168.122.")) ||
          (reason == "container bridge" && !InDockerRange(u.iface->address));
      use.roles.insert(u.role);
      uint64_t line = LineOfUse(p, u.role);
      if (line != 0 && (use.first_line == 0 || line < use.first_line)) use.first_line = line;
      if (use.processes.empty() || use.processes.back() != p.Name()) {
        use.processes.push_back(p.Name());
      }
      for (const auto* list : {&p.bootstrap, &p.net_socket}) {
        for (const NcclInterface& i : *list) {
          if (!NcclAddressRedacted(i.address) && BadInterfaceReason(i, false).empty() &&
              !IsLinkLocalAddress(i.address)) {
            use.good.insert(i.name);
          }
        }
      }
    }
  }
  if (bad.empty()) return;
  bool multi = MultiNode(log);
  bool one_host = NcclLogProvesOneHost(log);
  int nodes = NcclJobNodes(log);
  for (const auto& [iface, use] : bad) {
    std::string roles;
    for (const std::string& r : use.roles) roles += (roles.empty() ? "" : ", ") + r;
    Finding f;
    f.id = "network.wrong_interface";
    f.layer = Layer::kNetwork;
    // "Harmless on one host" only when the log proves there is one.
    f.severity = multi ? Severity::kCritical : one_host ? Severity::kInfo : Severity::kWarning;
    f.summary = multi ? fmt::format(
                            "NCCL uses {} ({}) for {} on {} process(es) of a {}-host job: "
                            "other hosts cannot reach it",
                            iface, use.reason, roles, use.processes.size(), nodes)
                : one_host ? fmt::format(
                                 "NCCL uses {} ({}) for {}: harmless on one host, it breaks "
                                 "as soon as the job spans hosts",
                                 iface, use.reason, roles)
                           : fmt::format(
                                 "NCCL uses {} ({}) for {}: the log shows one host but not "
                                 "all ranks; if the job spans hosts, other hosts cannot reach it",
                                 iface, use.reason, roles);
    f.evidence = {{"interface", iface},
                  {"kind", use.reason},
                  {"used_for", roles},
                  {"processes", JoinCapped(use.processes)},
                  {"process_count", static_cast<int64_t>(use.processes.size())},
                  {"hosts", static_cast<int64_t>(nodes)},
                  {"judged_by", use.by_name_only ? "name" : "address"}};
    if (use.first_line != 0) {
      f.evidence.push_back({"first_at", NcclLogPlace(source, use.first_line)});
    }
    // The interface to name: one the same processes listed that is not
    // bad, else an exclusion of the bad one's kind.
    std::string bad_name = iface.substr(0, iface.find(':'));
    std::string exclude = StartsWith(bad_name, "virbr") ? "^virbr,lo"
                          : use.reason == "loopback"    ? "^lo"
                          : StartsWith(bad_name, "br-") ? "^br-,docker,veth,lo"
                                                        : "^docker,veth,lo";
    f.next =
        use.reason == "Docker default bridge address"
            ? fmt::format(
                  "{} is the container's own side of Docker's default bridge: other hosts cannot "
                  "reach it whatever NCCL_SOCKET_IFNAME says; run the containers with --network "
                  "host (hostNetwork: true in Kubernetes), then `stallscope doctor` on each host",
                  iface)
        : use.good.empty()
            ? fmt::format(
                  "set NCCL_SOCKET_IFNAME (and GLOO_SOCKET_IFNAME) to the training network's "
                  "interface on each host (the log lists none besides {}; "
                  "NCCL_SOCKET_IFNAME={} excludes it); run containers with --network host; "
                  "then `stallscope doctor` on each host",
                  bad_name, exclude)
            : fmt::format(
                  "set NCCL_SOCKET_IFNAME={} (and GLOO_SOCKET_IFNAME={}), which the same "
                  "processes list, instead of {} (or NCCL_SOCKET_IFNAME={}); run containers with "
                  "--network host; then `stallscope doctor` on each host",
                  *use.good.begin(), *use.good.begin(), bad_name, exclude);
    out.push_back(std::move(f));
  }
}

// "ib0", "ibp12s0", "ibs1": an IPoIB interface (TCP over the InfiniBand fabric).
bool IsIpoib(std::string_view name) {
  return name.size() >= 3 && name[0] == 'i' && name[1] == 'b' &&
         ((name[2] >= '0' && name[2] <= '9') || name[2] == 'p' || name[2] == 's');
}

// Whether the process ran an NCCL before 2.6, which prints no "Using
// network" line: by its version, else by the forms only 2.3 prints.
bool BeforeUsingNetwork(const NcclProcess& p) {
  if (!p.version.empty()) {
    std::string_view v = p.version;
    if (!StartsWith(v, "2.")) return false;
    v.remove_prefix(2);
    auto minor = ParseInt(v.substr(0, v.find_first_not_of("0123456789")));
    return minor && *minor < 6;
  }
  auto saw = [&](NcclLineForm form) { return (p.line_forms >> static_cast<unsigned>(form)) & 1; };
  return (saw(NcclLineForm::kInternalNetwork) || saw(NcclLineForm::kCompleteWithoutInit)) &&
         !saw(NcclLineForm::kUsingNetwork);
}

// The network a process chose: its "Using network" line, or before 2.6
// (no such line) what its net lines show: NCCL initializes IB first and the
// socket transport only when IB has no device, so a NET/Socket list without
// IB devices is sockets, IB devices without one is IB. Empty when unknown.
std::string NetworkOf(const NcclProcess& p) {
  if (!p.network.empty()) return p.network;
  // Before 2.6 NCCL uses the first net transport that initialises: IB when
  // it lists devices; its NET/Socket list then serves the bootstrap only.
  if (BeforeUsingNetwork(p) && !p.ib_devices.empty() && !p.ib_disabled) return "IB";
  if (!p.net_socket.empty() && p.ib_devices.empty()) return "Socket";
  if (!p.ib_devices.empty() && p.net_socket.empty()) return "IB";
  return "";
}

bool UsesNet(const NcclProcess& p, std::string_view prefix) {
  for (const std::string& n : p.channel_nets) {
    if (StartsWith(n, prefix)) return true;
  }
  return false;
}

// aws-ofi-nccl on libfabric's tcp, sockets or udp provider: the plugin's
// channels run over TCP/IP, not over EFA's or verbs' RDMA.
bool OfiProviderOverTcp(const NcclProcess& p) {
  const std::string& v = p.ofi_provider;
  return StartsWith(v, "tcp") || StartsWith(v, "sockets") || StartsWith(v, "udp");
}

// Every sign that RDMA was there and sockets carried the job: RDMA devices
// listed, an IPoIB interface under the sockets, libibverbs missing, an IB
// plugin loaded, EFA's libfabric provider missing, another host on IB, this
// host's Active ports. IB disabled on purpose is a note, not a finding.
void RdmaUnused(const NcclLogSummary& log, const std::optional<HostRdmaPorts>& host,
                std::string_view source, std::vector<Finding>& out,
                std::vector<std::string>& notes) {
  uint64_t first_line = 0;  // the first channel over a socket of a process judged
  uint64_t socket_connections = 0;
  std::vector<uint64_t> socket_by_process(log.processes.size(), 0);
  std::vector<uint64_t> plugin_by_process(log.processes.size(), 0);
  for (const NcclRank& r : log.ranks) {
    socket_connections += r.transports.net_socket;
    socket_by_process[r.process] += r.transports.net_socket;
    plugin_by_process[r.process] += r.transports.net_other;
  }
  uint64_t ofi_tcp_connections = 0;
  bool any_ofi_tcp = false;
  int nodes = NcclJobNodes(log);
  std::set<std::string> ib_hosts;
  for (const NcclProcess& p : log.processes) {
    if (UsesNet(p, "IB") || (p.channel_nets.empty() && NetworkOf(p) == "IB"))
      ib_hosts.insert(p.host);
  }
  bool libibverbs_missing = false;
  for (const NcclWarning& w : log.warnings) {
    libibverbs_missing = libibverbs_missing || w.text.find("libibverbs") != std::string::npos;
  }
  bool efa_missing = false;
  for (const std::string& p : log.libfabric_empty_providers)
    efa_missing = efa_missing || p == "efa";
  for (const NcclWarning& w : log.warnings)
    efa_missing = efa_missing || w.text.find("No EFA devices") != std::string::npos;
  for (const NcclProcess& p : log.processes) libibverbs_missing |= p.libibverbs_missing;
  bool signs_only = true;     // no process judged had channels or a network over sockets
  bool any_channels = false;  // a process's channels' lines show sockets
  const bool efa_failed = !log.libfabric_efa_failures.empty();
  std::vector<std::string> processes;
  std::set<std::string> ib_seen;
  std::set<std::string> socket_hosts;
  std::vector<std::string> reasons;
  auto reason = [&](std::string text) {
    if (std::find(reasons.begin(), reasons.end(), text) == reasons.end()) reasons.push_back(text);
  };
  bool disabled_on_purpose = false;
  for (size_t i = 0; i < log.processes.size(); ++i) {
    const NcclProcess& p = log.processes[i];
    // The plugin's channels over libfabric's TCP provider are sockets too.
    const bool ofi_tcp = OfiProviderOverTcp(p) && (plugin_by_process[i] > 0 || nodes > 1);
    // Shown: channels over sockets, or NCCL's own "Using network Socket".
    // Inferred from the interfaces it listed, with no such line (an excerpt
    // that stops early, or NCCL 2.3-2.5, which prints none): a sign only.
    const bool shown = socket_by_process[i] > 0 || ofi_tcp || (p.network == "Socket" && nodes > 1);
    const bool inferred = !shown && p.network.empty() && NetworkOf(p) == "Socket" && nodes > 1;
    bool socket = shown || inferred;
    // Before any channel line, the unambiguous signs alone: an IPoIB
    // interface under the sockets with libibverbs missing, EFA looked for
    // and absent. RDMA shown in use rules them out.
    bool ipoib_listed = false;
    for (const NcclInterface& iface : p.net_socket.empty() ? p.bootstrap : p.net_socket)
      ipoib_listed = ipoib_listed || IsIpoib(iface.name);
    bool rdma_in_use = UsesNet(p, "IB") || (!p.channel_nets.empty() && !UsesNet(p, "Socket")) ||
                       (!p.network.empty() && p.network != "Socket");
    bool signs = !rdma_in_use && ((ipoib_listed && (libibverbs_missing || p.ib_no_device)) ||
                                  efa_missing || efa_failed);
    if (!socket && !signs) continue;
    if (shown) signs_only = false;
    any_channels = any_channels || socket_by_process[i] > 0 || ofi_tcp;
    if (p.ib_disabled) {
      disabled_on_purpose = true;
      continue;
    }
    bool fires = false;
    if (!p.ib_devices.empty()) {
      fires = true;
      for (const NcclInterface& d : p.ib_devices) ib_seen.insert(d.name);
      reason(
          "NCCL found RDMA devices and still chose sockets (NCCL_NET=Socket, or the IB "
          "transport failed to initialize)");
    }
    for (const NcclWarning& w : log.warnings) {
      if (w.first_seen_by != p.Name() || w.text.find("NET/IB : Unable to") == std::string::npos)
        continue;
      fires = true;
      reason(fmt::format("NET/IB could not use its device ({}) and NCCL fell back to sockets",
                         w.text.substr(w.text.find("Unable"))));
      break;
    }
    for (const NcclInterface& iface : p.net_socket.empty() ? p.bootstrap : p.net_socket) {
      if (!IsIpoib(iface.name)) continue;
      fires = true;
      reason(fmt::format(
          "an IPoIB interface ({}) carries the job's sockets: the InfiniBand fabric is there "
          "and NCCL runs TCP over it",
          iface.name));
      break;
    }
    // libibverbs missing is a sign only beside another one: on a cluster
    // without RDMA it is NCCL's harmless fallback.
    bool libibverbs_reason = libibverbs_missing;
    if (!p.net_plugin.empty() && (p.net_plugin.find("IB") != std::string::npos ||
                                  p.net_plugin.find("SHARP") != std::string::npos)) {
      fires = true;
      reason(fmt::format("the IB net plugin ({}) loaded, yet the channels run NET/Socket",
                         p.net_plugin));
    }
    if (efa_failed) {
      fires = true;
      reason(fmt::format(
          "an EFA queue failed ({}) and the channels fell back to NET/Socket: the EFA device is "
          "there but not usable from this process",
          log.libfabric_efa_failures.front()));
    }
    if (ofi_tcp) {
      fires = true;
      any_ofi_tcp = true;
      ofi_tcp_connections += plugin_by_process[i];
      reason(fmt::format(
          "aws-ofi-nccl selected libfabric's {} provider{}: the plugin's channels run over TCP/IP, "
          "not over EFA",
          p.ofi_provider, p.ofi.nics >= 0 ? fmt::format(" (found {} NIC(s))", p.ofi.nics) : ""));
    }
    if (efa_missing) {
      fires = true;
      reason(
          "EFA was looked for and libfabric's efa provider is unavailable (fi_getinfo: "
          "provider efa output empty list): no EFA device or driver in the container");
    }
    if (!ib_hosts.empty() && ib_hosts.count(p.host) == 0) {
      fires = true;
      socket_hosts.insert(p.host);
    }
    bool on_this_host = host && !host->active_ports.empty() && p.host == host->hostname;
    if (on_this_host) {
      fires = true;
      if (p.ib_no_device) {
        reason(
            "NCCL saw no RDMA device while this host has Active ports: a container without "
            "/dev/infiniband, or no rdma-core/libibverbs in the image");
      }
    }
    if (fires && libibverbs_reason)
      reason("NCCL could not open libibverbs: the image lacks rdma-core");
    if (fires) {
      processes.push_back(p.Name());
      uint64_t line = p.socket_channel_line != 0            ? p.socket_channel_line
                      : ofi_tcp && p.ofi.provider_line != 0 ? p.ofi.provider_line
                      : p.socket_line != 0                  ? p.socket_line
                                                            : p.bootstrap_line;
      if (line != 0 && (first_line == 0 || line < first_line)) first_line = line;
    }
  }
  if (disabled_on_purpose) {
    notes.push_back(
        "NCCL_IB_DISABLE=1 in the log's environment lines: InfiniBand was disabled on purpose, "
        "sockets are what it asked for (network.rdma_unused not judged for those processes)");
  }
  if (processes.empty()) return;
  if (!socket_hosts.empty()) {
    std::vector<std::string> s(socket_hosts.begin(), socket_hosts.end());
    std::vector<std::string> ib(ib_hosts.begin(), ib_hosts.end());
    reason(fmt::format("{} run{} NET/Socket while {} run{} NET/IB in the same job{}",
                       JoinCapped(s, 4), s.size() == 1 ? "s" : "", JoinCapped(ib, 4),
                       ib.size() == 1 ? "s" : "",
                       libibverbs_missing ? " (libibverbs is missing there)" : ""));
  }
  if (reasons.empty()) reason("this host has Active RDMA ports; the job used sockets");
  std::vector<std::string> ib_list(ib_seen.begin(), ib_seen.end());
  Finding f;
  f.id = "network.rdma_unused";
  f.layer = Layer::kNetwork;
  // On signs alone (no channel line) at most a warning: the scale is a guess.
  f.severity =
      nodes >= kRdmaRequiredNodes && !signs_only ? Severity::kCritical : Severity::kWarning;
  f.summary = fmt::format("gradients cross hosts over TCP sockets although RDMA is there: {}",
                          reasons.front());
  f.evidence = {{"processes_on_sockets", JoinCapped(processes)},
                {"process_count", static_cast<int64_t>(processes.size())},
                {"socket_connections", static_cast<int64_t>(socket_connections)},
                {"hosts", static_cast<int64_t>(nodes)},
                {"rdma_devices_in_log", ib_list.empty() ? "none" : JoinCapped(ib_list)},
                {"nccl_ib_disable", false},
                {"judged_from", signs_only     ? "signs alone: the log shows no channel yet"
                                : any_channels ? "the channels' transport"
                                               : "the network NCCL chose (Using network Socket)"}};
  if (host && !host->active_ports.empty()) {
    f.evidence.push_back({"host_active_ports", JoinCapped(host->active_ports)});
  }
  if (any_ofi_tcp) {
    f.evidence.push_back({"ofi_tcp_connections", static_cast<int64_t>(ofi_tcp_connections)});
  }
  f.evidence.push_back({"why", JoinCapped(reasons)});
  if (first_line != 0) f.evidence.push_back({"first_at", NcclLogPlace(source, first_line)});
  // What to do follows from the signs seen, on the processes seen.
  std::string where =
      socket_hosts.empty()
          ? JoinCapped(processes, 4)
          : JoinCapped(std::vector<std::string>(socket_hosts.begin(), socket_hosts.end()), 4);
  std::vector<std::string> steps;
  const bool efa = efa_missing || efa_failed || any_ofi_tcp;
  if (efa) {
    steps.push_back(
        "give the container the EFA devices (the EFA device plugin's vpc.amazonaws.com/efa "
        "resource, or --device=/dev/infiniband/uverbs*) and check `fi_info -p efa` inside it");
  }
  if (libibverbs_missing) {
    steps.push_back("install rdma-core (libibverbs1, ibverbs-providers) in the image");
  }
  if (any_ofi_tcp) {
    steps.push_back(
        "set FI_PROVIDER=efa so that aws-ofi-nccl fails where EFA is missing instead of "
        "running over TCP");
  }
  if (!efa) {
    steps.push_back(
        "pass --device=/dev/infiniband --cap-add=IPC_LOCK (or the RDMA device plugin) and check "
        "`ibv_devinfo` inside the container");
  }
  steps.push_back("unset NCCL_NET=Socket if it is set");
  f.next = fmt::format(
      "on {}: {}; rerun with NCCL_DEBUG=INFO and look for 'via NET/{}' in `stallscope nccl-log`",
      where, fmt::join(steps, "; "),
      any_ofi_tcp                 ? "Libfabric' with 'Selected provider is efa"
      : efa_missing || efa_failed ? "Libfabric"
                                  : "IB");
  out.push_back(std::move(f));
}

void ConnectFailed(const NcclLogSummary& log, std::string_view source, std::vector<Finding>& out) {
  // INFO retries alone are NCCL waiting for a peer that is not listening yet;
  // only a WARN (a connection given up) makes the finding.
  // "No interface found in the same subnet" tried no connect: that is
  // network.root_unreachable's.
  std::vector<const NcclPeerFailure*> failures;
  for (const NcclPeerFailure& p : log.peer_failures) {
    if (p.reason != "no local interface in the same subnet") failures.push_back(&p);
  }
  if (failures.empty()) return;
  std::vector<std::string> peers;
  int64_t docker_peers = 0;
  for (const NcclPeerFailure* pf : failures) {
    const NcclPeerFailure& p = *pf;
    peers.push_back(fmt::format("{} ({}{})", p.peer, p.reason.empty() ? "failed" : p.reason,
                                p.count > 1 ? fmt::format(", {}x", p.count) : ""));
    if (StartsWith(p.peer, "172.17.")) ++docker_peers;
  }
  Finding f;
  f.id = "network.connect_failed";
  f.layer = Layer::kNetwork;
  f.severity = Severity::kCritical;
  const NcclPeerFailure& first = *failures.front();
  f.summary = fmt::format("NCCL could not reach {} peer(s): {} {}", failures.size(), first.peer,
                          first.reason.empty() ? "failed" : first.reason);
  f.evidence = {{"peers", JoinCapped(peers)},
                {"peer_count", static_cast<int64_t>(failures.size())},
                {"connect_retries", static_cast<int64_t>(log.connect_retries)}};
  if (!log.connect_retry_reason.empty()) {
    f.evidence.push_back({"retry_reason", log.connect_retry_reason});
  }
  if (!first.first_seen_by.empty()) f.evidence.push_back({"first_seen_by", first.first_seen_by});
  if (docker_peers > 0) f.evidence.push_back({"docker_bridge_peers", docker_peers});
  if (first.first_line != 0) {
    f.evidence.push_back({"first_at", NcclLogPlace(source, first.first_line)});
  }
  // The commands name the peer the log names (a retry line may name the
  // one a WARN did not); without one, the other hosts' bootstrap addresses.
  std::string_view peer = first.peer;
  if (peer == kPeerNotPrinted) peer = log.connect_retry_peer;
  auto [address, port] = NcclPeerAddressPort(peer);
  const std::string who =
      first.first_seen_by.empty() ? "the host that failed" : first.first_seen_by;
  std::string check;
  const NcclProcess* seer = nullptr;
  for (const NcclProcess& p : log.processes) {
    if (p.Name() == first.first_seen_by) seer = &p;
  }
  // NCCL always prints the address before "<port>": none there was cut out.
  const bool redacted = NcclAddressRedacted(address) &&
                        (!address.empty() || (!port.empty() && !peer.empty() && peer[0] == '<'));
  if (redacted) {
    check = fmt::format(
        "the peer's address is redacted in this log ({}): take it from the unredacted log or "
        "the peer host's `ip -br addr`, then `nc -vz` it{} from this host",
        peer, port.empty() ? " on NCCL's port" : " on port " + port);
  } else if (!address.empty()) {
    check = port.empty() ? fmt::format("`nc -vz {}` on NCCL's port", address)
                         : fmt::format("`nc -vz {} {}`", address, port);
    check += fmt::format(
        " (firewall? the port range NCCL listens on must be open); "
        "`stallscope net probe {}`",
        address);
  } else {
    // Other hosts' addresses: never the failing host's own (another of its
    // processes, or an address it holds too), never a redacted one.
    std::vector<std::string> others;
    for (const NcclProcess& p : log.processes) {
      if (p.bootstrap.empty() || (seer && p.host == seer->host)) continue;
      const std::string& a = p.bootstrap[0].address;
      bool own = false;
      if (seer) {
        for (const auto* list : {&seer->bootstrap, &seer->net_socket}) {
          for (const NcclInterface& i : *list) own = own || i.address == a;
        }
      }
      if (!own && !NcclAddressRedacted(a) &&
          std::find(others.begin(), others.end(), a) == others.end()) {
        others.push_back(a);
      }
    }
    check = others.empty() ? std::string(
                                 "the log names no peer: `nc -vz` each other host's address on "
                                 "NCCL's port")
                           : fmt::format(
                                 "the log names no peer: `nc -vz` the other hosts' bootstrap "
                                 "addresses ({}) on NCCL's port, `stallscope net probe` them",
                                 JoinCapped(others, 3));
  }
  f.next = docker_peers > 0
               ? "the peers have Docker bridge addresses (172.17.x), unreachable from other "
                 "hosts: run the containers with --network host (hostNetwork in Kubernetes)"
               : fmt::format(
                     "from {}: {}; check that NCCL_SOCKET_IFNAME names an interface "
                     "both hosts can route",
                     who, check);
  out.push_back(std::move(f));
}

// What in the log shows a rank stopped, in words; empty when nothing does
// (the log may just end): a timeout, an error the job printed, lost peers,
// retries, a WARN NCCL did not carry on from. Not a fallback NCCL went on
// from, nor a WARN that is harmless alone.
std::string StopEvidence(const NcclLogSummary& log) {
  if (log.timeouts > 0) return "timeout (NCCL's or the watchdog's)";
  if (log.system_errors + log.remote_errors + log.torch_nccl_errors > 0)
    return "error the job printed (NCCL error, unhandled system error, remote process exited)";
  if (!log.peer_failures.empty()) return "peer lost or unreachable";
  if (log.connect_retries > 0) return "connects retried";
  for (const NcclWarning& w : log.warnings) {
    if (!NcclWarningBenign(w.text) && !NcclWarningFallback(w.text)) return "WARN: " + w.text;
  }
  return "";
}

std::string ProxyFailureText(const NcclProxyFailure& p) {
  std::string_view name = NcclResultName(p.retcode);
  return fmt::format("rank {} asked rank {}'s proxy ({}) to {} and it failed (retcode {}{}{}){}",
                     p.from_rank, p.proxy_rank, p.proxy_process, p.operation, p.retcode,
                     name.empty() ? "" : ", ", name,
                     p.count > 1 ? fmt::format(", {}x", p.count) : "");
}

// The rank numbered `number` among the log's ranks on `host`, or null.
const NcclRank* RankOnHost(const NcclLogSummary& log, int number, std::string_view host) {
  for (const NcclRank& r : log.ranks) {
    if (r.rank == number && log.processes[r.process].host == host) return &r;
  }
  return nullptr;
}

// The ranks a proxy's "... from rank M" names that are not in `stuck`
// already: on the proxy's host (a proxy serves its own host's ranks). A
// rank the log shows there is named as it prints; one with no lines of its
// own, as the proxy names it. Adds their hosts to `hosts`.
std::vector<std::string> ProxyNamedRanks(const NcclLogSummary& log,
                                         const std::vector<std::string>& stuck,
                                         std::set<std::string>& hosts) {
  std::vector<std::string> out;
  for (const NcclProxyFailure& p : log.proxy_failures) {
    const NcclRank* known = RankOnHost(log, p.from_rank, p.host);
    std::string name =
        known ? RankName(log, *known)
              : fmt::format("rank {} on {} (named by rank {}'s proxy; no lines of its own)",
                            p.from_rank, p.host, p.proxy_rank);
    if (known && known->init_completed > 0) continue;  // its init finished: a later request
    // The proxy's process went on through init after it: NCCL carried on.
    bool carried = false;
    for (const NcclProcess& proc : log.processes) {
      if (proc.Name() != p.proxy_process) continue;
      for (const NcclWarnOnProcess& w : proc.warns) {
        carried = carried || (w.line == p.first_line && w.init_completed_after && !w.aborted_after);
      }
    }
    if (carried) continue;
    if (std::find(stuck.begin(), stuck.end(), name) != stuck.end() ||
        std::find(out.begin(), out.end(), name) != out.end()) {
      continue;
    }
    out.push_back(std::move(name));
    hosts.insert(p.host);
  }
  return out;
}

// A host:pid that stands for several processes says how many hosts it
// stands for, and what told them apart.
void TwinNotes(const NcclLogSummary& log, std::vector<std::string>& notes) {
  std::map<std::string, std::vector<const NcclProcess*>> by_name;
  for (const NcclProcess& p : log.processes) {
    if (p.twin > 0) by_name[p.host + ":" + std::to_string(p.pid)];
  }
  for (const NcclProcess& p : log.processes) {
    auto it = by_name.find(p.host + ":" + std::to_string(p.pid));
    if (it != by_name.end()) it->second.push_back(&p);
  }
  for (const auto& [name, processes] : by_name) {
    std::vector<std::string> told;
    for (const NcclProcess* p : processes) {
      std::string what;
      if (!p->bootstrap.empty()) what = "bootstrap " + InterfaceText(p->bootstrap[0]);
      for (const NcclRank& r : log.ranks) {
        if (&log.processes[r.process] == p && r.identity_from_init && r.rank >= 0) {
          what += fmt::format("{}rank {}", what.empty() ? "" : ", ", r.rank);
          break;
        }
      }
      told.push_back(fmt::format("{} ({})", p->Name(), what.empty() ? "no line of its own" : what));
    }
    notes.push_back(fmt::format(
        "{} stands for {} processes on {} hosts: the log writes their hosts alike (redacted, or "
        "one name on every host) and the pid repeats across hosts, as it does in containers; "
        "told apart by their bootstrap addresses and their ranks of one communicator, lines of "
        "other threads going to the first: {}",
        name, processes.size(), processes.size(), JoinCapped(told, 8)));
  }
}

// Ranks that never finished init on positive evidence: START without
// COMPLETE (2.18+), or no COMPLETE while other ranks completed or the log
// shows trouble. The rest of the ranks without COMPLETE are a note: the log
// may just end before init does.
bool InitIncomplete(const NcclLogSummary& log, std::string_view source, std::vector<Finding>& out,
                    std::vector<std::string>& notes) {
  if (log.info_lines == 0) return false;  // NCCL_DEBUG=WARN: no Init COMPLETE lines to expect
  std::vector<uint64_t> completed_by_process(log.processes.size(), 0);
  uint64_t completed_ranks = 0;
  for (const NcclRank& r : log.ranks) {
    completed_by_process[r.process] += r.init_completed;
    completed_ranks += r.init_completed > 0;
  }
  const std::string stop = StopEvidence(log);
  const bool trouble = !stop.empty();
  std::vector<std::string> stuck;
  std::set<std::string> hosts;
  uint64_t unknown = 0;
  uint64_t open_start_line = 0;  // the first Init START left open
  const NcclRank* unknown_start = nullptr;
  for (const NcclRank& r : log.ranks) {
    bool started_not_done = r.init_started > r.init_completed;
    bool never = r.init_completed == 0 && completed_by_process[r.process] == 0;
    if (!started_not_done && !never) continue;
    if (completed_ranks == 0 && !trouble) {
      ++unknown;  // an excerpt that ends is no rank stopped
      if (started_not_done && unknown_start == nullptr) unknown_start = &r;
      continue;
    }
    stuck.push_back(RankName(log, r));
    hosts.insert(log.processes[r.process].host);
    if (started_not_done && r.init_start_line != 0 &&
        (open_start_line == 0 || r.init_start_line < open_start_line)) {
      open_start_line = r.init_start_line;
    }
  }
  // A rank named by a proxy's "... from rank M" runs on the proxy's host;
  // its request failed, so it is stuck there, lines of its own or not.
  const std::vector<std::string> proxy_named = ProxyNamedRanks(log, stuck, hosts);
  const size_t inferred_ranks = proxy_named.size();
  stuck.insert(stuck.end(), proxy_named.begin(), proxy_named.end());
  if (unknown > 0 && stuck.empty()) {
    std::string wait;
    if (unknown_start) {
      const NcclProcess& p = log.processes[unknown_start->process];
      wait =
          fmt::format("; if the job hangs there, `py-spy dump --pid {}` on {} shows where {} waits",
                      p.pid, p.host, p.Name());
    }
    notes.push_back(fmt::format(
        "init state unknown: {} rank(s) printed no Init COMPLETE, but nothing says a rank "
        "stopped (no later error, no timeout, no lost peer, no other rank done): the log may "
        "end before init does{}",
        unknown, wait));
  }
  if (stuck.empty()) return false;
  Finding f;
  f.id = "distributed.init_incomplete";
  f.layer = Layer::kDistributed;
  f.severity = Severity::kCritical;
  std::vector<std::string> host_list(hosts.begin(), hosts.end());
  f.summary = fmt::format("{} of {} rank(s) never finished NCCL init (on {}){}", stuck.size(),
                          log.ranks.size() + inferred_ranks, JoinCapped(host_list, 4),
                          completed_ranks > 0 ? ": the others wait for them" : "");
  f.evidence = {{"ranks", JoinCapped(stuck, 16)},
                {"incomplete_ranks", static_cast<int64_t>(stuck.size())},
                {"completed_ranks", static_cast<int64_t>(completed_ranks)},
                {"warnings", static_cast<int64_t>(log.warn_lines)},
                {"trouble_in_log", trouble},
                {"stopped_by", completed_ranks > 0 && !trouble
                                   ? std::string("other ranks completed and wait for these")
                                   : stop}};
  // Where to read: the first init left open, else the first trouble.
  uint64_t at = open_start_line;
  if (at == 0 && !log.peer_failures.empty()) at = log.peer_failures.front().first_line;
  if (at == 0) at = log.connect_retry_line;
  for (const NcclWarning& w : log.warnings) {
    if (at == 0 && !NcclWarningBenign(w.text)) at = w.first_line;
  }
  if (at != 0) f.evidence.push_back({"first_at", NcclLogPlace(source, at)});
  if (!log.proxy_failures.empty()) {
    std::vector<std::string> proxies;
    for (const NcclProxyFailure& p : log.proxy_failures) {
      proxies.push_back(
          fmt::format("{} at {}", ProxyFailureText(p), NcclLogPlace(source, p.first_line)));
    }
    f.evidence.push_back({"proxy_failures", JoinCapped(proxies, 4)});
  }
  // The next check follows from what the log shows, not always MASTER_ADDR.
  const NcclPeerFailure* lost = log.peer_failures.empty() ? nullptr : &log.peer_failures.front();
  const NcclWarning* cuda = nullptr;  // the GPU side failed first: peers lost follow from it
  for (const NcclWarning& w : log.warnings) {
    if (!cuda && (w.text.find("Cuda failure") != std::string::npos ||
                  w.text.find("CUDA IPC handle") != std::string::npos)) {
      cuda = &w;
    }
  }
  if (cuda) {
    f.next = fmt::format(
        "NCCL's CUDA set-up failed on {} ({}; distributed.nccl_cuda_failure): the other ranks "
        "lost it as a peer. On that host run `nvidia-smi`, compare the driver with NCCL's +cuda "
        "suffix and check CUDA_VISIBLE_DEVICES, then rerun",
        cuda->first_seen_by.empty() ? "a rank" : cuda->first_seen_by, cuda->text);
  } else if (lost && lost->reason == "no local interface in the same subnet") {
    f.next = fmt::format(
        "the bootstrap root {} is in no subnet of {}'s interfaces (network.root_unreachable): fix "
        "MASTER_ADDR or NCCL_SOCKET_IFNAME first, then rerun",
        lost->peer, lost->first_seen_by.empty() ? "the host" : lost->first_seen_by);
  } else if (!log.proxy_failures.empty() && !lost) {
    const NcclProxyFailure& p = log.proxy_failures.front();
    f.next = fmt::format(
        "on {}: {}; read rank {}'s own output there{} and the lines of {} before {}; rerun "
        "with NCCL_DEBUG_SUBSYS=INIT,PROXY,NET to see the connection it set up",
        p.host, ProxyFailureText(p), p.from_rank,
        RankOnHost(log, p.from_rank, p.host) ? "" : " (it printed no line in this log)",
        p.proxy_process, NcclLogPlace(source, p.first_line));
  } else if (lost) {
    f.next = fmt::format(
        "{} could not reach {} ({}): from that host `nc -vz` the peer's address and port, "
        "`stallscope net probe` it, and check that NCCL_SOCKET_IFNAME names an interface both "
        "hosts route (network.connect_failed)",
        lost->first_seen_by.empty() ? "a rank" : lost->first_seen_by, lost->peer,
        lost->reason.empty() ? "no reason printed" : lost->reason);
  } else if (log.connect_retries > 0) {
    f.next = fmt::format(
        "NCCL retried its connects {} time(s) ({}{}): the peer was not listening or not "
        "reachable; check that every rank started and that the hosts route to each other",
        log.connect_retries,
        log.connect_retry_reason.empty() ? "reason not printed" : log.connect_retry_reason,
        log.connect_retry_peer.empty() ? "" : ", to " + log.connect_retry_peer);
  } else {
    // Nothing failed in the log: the ranks wait. Name the first one.
    const NcclRank* first = nullptr;
    for (const NcclRank& r : log.ranks) {
      if (!first && r.init_started > r.init_completed) first = &r;
    }
    if (!first) {
      for (const NcclRank& r : log.ranks) {
        if (!first && r.init_completed == 0) first = &r;
      }
    }
    const NcclProcess& p = log.processes[first ? first->process : 0];
    f.next = fmt::format(
        "{} waits in init: read its first NCCL WARN (listed by `stallscope nccl-log`), check "
        "that every rank of the job started ({} of {} printed a line), and on {} run `py-spy "
        "dump --pid {}` to see where it waits; `stallscope doctor` there",
        p.Name(), log.ranks.size(),
        std::max<int>(first ? first->nranks : 0, static_cast<int>(log.ranks.size())), p.host,
        p.pid);
  }
  out.push_back(std::move(f));
  return true;
}

}  // namespace

int NcclPeerHostsInferred(const NcclLogSummary& log) {
  // Addresses the processes in the log hold: a peer at one is no other host.
  std::set<std::string> own;
  for (const NcclProcess& p : log.processes) {
    for (const auto* list : {&p.bootstrap, &p.net_socket, &p.ib_oob}) {
      for (const NcclInterface& i : *list) own.insert(i.address);
    }
  }
  std::set<std::string> others;
  auto add = [&](std::string_view peer) {
    std::string address = NcclPeerAddressPort(peer).first;
    if (address.empty() || peer == kPeerNotPrinted || NcclAddressRedacted(address)) return;
    if (StartsWith(address, "127.") || address == "::1" || own.count(address)) return;
    // A host name a peer is printed as, when that host printed lines itself.
    for (const NcclProcess& p : log.processes) {
      if (p.host == address) return;
    }
    others.insert(address);
  };
  for (const NcclPeerFailure& f : log.peer_failures) add(f.peer);
  if (!log.connect_retry_peer.empty()) add(log.connect_retry_peer);
  // Hosts known by name only (nccl-tests' table) may be those peers.
  std::set<std::string_view> unaddressed;
  for (const NcclTestsRank& r : log.tests_ranks) unaddressed.insert(r.host);
  for (const NcclProcess& p : log.processes) unaddressed.erase(p.host);
  return std::max(0, static_cast<int>(others.size()) - static_cast<int>(unaddressed.size()));
}

int NcclJobNodes(const NcclLogSummary& log) {
  std::set<std::string_view> hosts;
  int nnodes = 0;
  // Processes told apart under one host:pid run on other hosts than the
  // first (one pid is one process on a host): each a host more.
  int twins = 0;
  for (const NcclProcess& p : log.processes) {
    hosts.insert(p.host);
    nnodes = std::max(nnodes, p.nnodes);
    twins += p.twin > 0;
  }
  for (const NcclTestsRank& r : log.tests_ranks) hosts.insert(r.host);
  // Peers the log's connects name that printed no line of their own are
  // hosts too (inferred: one host may hold two of the addresses).
  int n = std::max(static_cast<int>(hosts.size()) + twins + NcclPeerHostsInferred(log), nnodes);
  // Every other sign that the job spans hosts, when fewer printed lines:
  // NET channels (within a host NCCL uses P2P or SHM), more ranks than the one
  // host in the log holds, a bootstrap root in no local subnet.
  int nranks = 0;
  bool net = false;
  for (const NcclRank& r : log.ranks) {
    nranks = std::max(nranks, r.nranks);
    net = net || r.transports.net_socket + r.transports.net_ib + r.transports.net_other > 0;
  }
  if (net) n = std::max(n, 2);
  // (NCCL's own nNodes, when printed, says how many the ranks span.)
  if (hosts.size() == 1 && twins == 0 && nnodes == 0 &&
      nranks > static_cast<int>(log.ranks.size())) {
    n = std::max(n, 2);
  }
  for (const NcclPeerFailure& f : log.peer_failures) {
    if (f.reason == "no local interface in the same subnet") n = std::max(n, 2);
  }
  return n;
}

bool NcclLogProvesOneHost(const NcclLogSummary& log) {
  if (log.ranks.empty() || NcclJobNodes(log) != 1) return false;
  // Every rank of the communicator is in the log, all on the one host.
  int nranks = 0;
  for (const NcclRank& r : log.ranks) {
    if (r.nranks <= 0) return false;
    nranks = std::max(nranks, r.nranks);
  }
  return nranks <= static_cast<int>(log.ranks.size());
}

// Findings judged by an interface's kind, graded by what the log shows it
// did: on one host, with every rank through init, the sockets carried the
// bootstrap alone and a container's bridge address is what one container
// has (info); across hosts, where no connect failed and every rank finished
// init, the connections worked over it (a warning).
void GradeByOutcome(const NcclLogSummary& log, std::vector<Finding>& out) {
  bool all_done = !log.ranks.empty();
  for (const NcclRank& r : log.ranks) all_done = all_done && r.init_completed > 0;
  if (!all_done) return;
  const bool one_host = NcclLogProvesOneHost(log);
  const bool connects_failed = !log.peer_failures.empty() || log.connect_retries > 0;
  for (Finding& f : out) {
    if (f.severity != Severity::kCritical) continue;
    const bool by_kind = f.id == "network.wrong_interface" ||
                         f.id == "network.link_local_interface" ||
                         f.id == "network.duplicate_address";
    if (one_host && (by_kind || f.id == "network.rdma_unused")) {
      f.severity = Severity::kInfo;
      f.evidence.push_back({"graded_by",
                            "one host, every rank through init: the sockets carried "
                            "the bootstrap alone"});
    } else if (!one_host && by_kind && !connects_failed) {
      f.severity = Severity::kWarning;
      f.evidence.push_back({"graded_by",
                            "every rank through init and no connect failed: the "
                            "connections worked over it"});
    }
  }
}

FindingsWithNotes CheckNcclLog(const NcclLogSummary& log, const std::optional<HostRdmaPorts>& host,
                               std::string_view source) {
  FindingsWithNotes result;
  std::vector<Finding>& out = result.findings;
  // Causes first, then what follows from them.
  // A CUDA-side failure, whatever its words, joins the rule that reads Cuda
  // failures.
  const std::vector<NcclJudgedWarn> judged = JudgeNcclWarnings(log);
  CheckNcclCudaFailure(log, source, out, NcclCudaFailureTexts(judged));
  CheckNcclOobSocket(log, source, out);
  CheckNcclRootUnreachable(log, source, out);
  CheckNcclDuplicateAddress(log, source, out);
  WrongInterface(log, source, out);
  CheckNcclLinkLocal(log, NcclJobNodes(log), source, out);
  CheckNcclPluginFallback(log, source, out);
  RdmaUnused(log, host, source, out, result.notes);
  ConnectFailed(log, source, out);
  CheckNcclVersionMismatch(log, source, out);
  std::vector<Finding> init;
  bool init_failed = InitIncomplete(log, source, init, result.notes);
  CheckNcclConnectTimeout(log, init_failed, source, out);
  // Every failure no rule above quotes, whatever its words.
  CheckNcclFailures(log, judged, source, out);
  // An init that stopped follows from a cause found above: its next is the
  // cause's (a lost peer or a retry is itself a consequence, not a cause).
  const Finding* cause = nullptr;
  for (const Finding& f : out) {
    if (f.severity != Severity::kCritical ||
        NcclCauseRank(f.id) >= NcclCauseRank("network.connect_timeout")) {
      continue;
    }
    if (!cause || NcclCauseRank(f.id) < NcclCauseRank(cause->id)) cause = &f;
  }
  for (Finding& f : init) {
    if (cause && cause->id != "distributed.nccl_cuda_failure") {
      f.next = fmt::format("{} comes first ({}): {}", cause->id, cause->summary, cause->next);
    }
  }
  for (Finding& f : init) out.push_back(std::move(f));
  GradeNcclCarriedOn(log, judged, source, out);
  DemoteNcclConsequences(log, judged, out);
  GradeByOutcome(log, out);
  TwinNotes(log, result.notes);
  return result;
}

// A finding that rests on an interface's name alone comes after every one
// with direct evidence (a used interface that fails, a failed call).
int VerdictRank(const Finding& f) {
  int rank = NcclCauseRank(f.id);
  for (const Evidence& e : f.evidence) {
    const std::string* v = std::get_if<std::string>(&e.value);
    if (e.name == "judged_by" && v && *v == "name") rank += 1000;
  }
  return rank;
}

// The line of a finding's first_at ("FILE:LINE"); 0 when it has none.
uint64_t FirstLine(const Finding& f) {
  for (const Evidence& e : f.evidence) {
    const std::string* v = std::get_if<std::string>(&e.value);
    if (e.name != "first_at" || !v) continue;
    size_t colon = v->rfind(':');
    std::string_view digits =
        colon == std::string::npos ? std::string_view(*v) : std::string_view(*v).substr(colon + 1);
    if (StartsWith(digits, "line ")) digits.remove_prefix(5);
    if (auto n = ParseInt(digits); n && *n > 0) return static_cast<uint64_t>(*n);
  }
  return 0;
}

void PreferNcclCause(Report& report) {
  const Finding* best = nullptr;
  for (const Finding& f : report.findings) {
    if (f.severity != Severity::kCritical) continue;
    if (!best || VerdictRank(f) < VerdictRank(*best)) {
      best = &f;
    } else if (VerdictRank(f) == VerdictRank(*best) && FirstLine(f) != 0 &&
               (FirstLine(*best) == 0 || FirstLine(f) < FirstLine(*best))) {
      best = &f;  // causes of one rank: the first in the log
    }
  }
  if (best) report.verdict = Verdict{best->layer, best->id, best->summary};
}

}  // namespace stallscope
