// The causes an NCCL log names of its own failures (see causes.h).
#include "analyze/nccl_log/causes.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "core/text.h"
#include "sample/network.h"

namespace stallscope {
namespace {

bool Has(std::string_view text, std::string_view needle) {
  return text.find(needle) != std::string_view::npos;
}

std::string Joined(const std::vector<std::string>& items, size_t cap = 8) {
  return NcclJoined(items, cap);
}

std::string Who(const NcclWarning& w) {
  if (w.first_seen_by.empty()) return "(no prefix)";
  return w.first_seen_dev >= 0 ? fmt::format("{} [{}]", w.first_seen_by, w.first_seen_dev)
                               : w.first_seen_by;
}

const NcclProcess* ProcessNamed(const NcclLogSummary& log, std::string_view name) {
  for (const NcclProcess& p : log.processes) {
    if (p.Name() == name) return &p;
  }
  return nullptr;
}

std::string InterfaceText(const NcclInterface& i) {
  return i.address.empty() ? i.name : i.name + ":" + i.address;
}

bool IsTunnel(std::string_view name) {
  return StartsWith(name, "ip6tnl") || StartsWith(name, "tunl") || StartsWith(name, "sit") ||
         StartsWith(name, "gre") || StartsWith(name, "ip6gre");
}

bool IsTimeoutReason(std::string_view reason) {
  return Has(reason, "timed out") || Has(reason, "No route to host") ||
         Has(reason, "unreachable") || Has(reason, "exceeded timeouts");
}

}  // namespace

std::string NcclJoined(const std::vector<std::string>& items, size_t cap) {
  std::string out;
  for (size_t i = 0; i < items.size() && i < cap; ++i) {
    if (i) out += "; ";
    out += items[i];
  }
  if (items.size() > cap) out += fmt::format("; and {} more", items.size() - cap);
  return out;
}

std::string NcclLogPlace(std::string_view source, uint64_t line) {
  if (line == 0) return source.empty() ? "-" : std::string(source);
  return source.empty() ? fmt::format("line {}", line) : fmt::format("{}:{}", source, line);
}

std::pair<std::string, std::string> NcclPeerAddressPort(std::string_view peer) {
  // The port is the last "<N>": a redacted address may hold brackets of its
  // own ("<ip><43211>").
  size_t lt = peer.rfind('<');
  if (lt == std::string_view::npos) return {std::string(peer), ""};
  std::string_view port = peer.substr(lt + 1);
  port = port.substr(0, port.find('>'));
  if (port.empty() || port.find_first_not_of("0123456789") != std::string_view::npos) {
    return {std::string(peer), ""};  // no port: "<ip>" alone is the address
  }
  return {std::string(peer.substr(0, lt)), std::string(port)};
}

bool NcclWarningExplained(std::string_view t) {
  static constexpr std::string_view kRead[] = {
      "Connect to ", "connect to ", "PollConnect", "Call to recv", "Call to send",
      "Connection closed by remote peer", "Call to connect", "exceeded timeouts",
      "exceeded retries", "connect returned", "No interface found in the same subnet",
      "Mismatched NCCL version", "NCCL version mismatch", "Cuda failure", "CUDA IPC handle",
      "Socket creation failed", "Call to socket failed", "unhandled system error",
      "remote process exited", "Timeout waiting", "timed out waiting",
      // the proxy's echo of a failed connect
      "Failed to execute operation Connect"};
  for (std::string_view k : kRead) {
    if (Has(t, k)) return true;
  }
  return NcclWarningFallback(t);
}

bool NcclWarningFallback(std::string_view t) {
  return Has(t, "NET/IB : Unable to open device") || Has(t, "NET/IB : Unable to query") ||
         (Has(t, "NET/OFI ") &&
          (Has(t, "Failing initialization") || Has(t, "initialization failed"))) ||
         Has(t, "Failed to initialize NET plugin");
}

bool NcclAddressRedacted(std::string_view a) {
  if (a.empty()) return true;
  for (std::string_view mark : {"xx", "XX", "**", "redact", "REDACT", "hidden", "HIDDEN", "<", "[",
                                "IP_ADDR", "ip_addr", "..."}) {
    if (Has(a, mark)) return true;
  }
  // "x.x.x.x", "10.x.x.12": a letter x where an IPv4 address has a digit.
  return a.find('.') != std::string_view::npos &&
         a.find_first_not_of("0123456789.xX") == std::string_view::npos &&
         a.find_first_of("xX") != std::string_view::npos;
}

bool NcclWarningBenign(std::string_view t) {
  // A host without RDMA libraries that uses sockets, a missing net plugin:
  // NCCL falls back and says so.
  return Has(t, "libibverbs") || Has(t, "NET/Plugin") || Has(t, "libnccl-net");
}

void CheckNcclCudaFailure(const NcclLogSummary& log, std::string_view source,
                          std::vector<Finding>& out, const std::vector<std::string>& also) {
  std::vector<std::string> errors;
  std::set<std::string> hosts;
  uint64_t count = 0;
  std::string first_place;
  bool ipc = false;
  for (const NcclWarning& w : log.warnings) {
    bool cuda = Has(w.text, "Cuda failure") || Has(w.text, "CUDA IPC handle") ||
                Has(w.text, "peer access") ||
                std::find(also.begin(), also.end(), w.text) != also.end();
    if (!cuda) continue;
    ipc = ipc || Has(w.text, "IPC");
    errors.push_back(fmt::format("{} on {}{}", w.text, Who(w),
                                 w.count > 1 ? fmt::format(" ({}x)", w.count) : ""));
    if (!w.first_seen_by.empty())
      hosts.insert(w.first_seen_by.substr(0, w.first_seen_by.rfind(':')));
    count += w.count;
    if (first_place.empty()) first_place = NcclLogPlace(source, w.first_line);
  }
  if (errors.empty()) return;
  Finding f;
  f.id = "distributed.nccl_cuda_failure";
  f.layer = Layer::kDistributed;
  f.severity = Severity::kCritical;
  f.summary = fmt::format("NCCL's set-up failed on the GPU side: {}", errors.front());
  f.evidence = {{"errors", Joined(errors)},
                {"hosts", Joined(std::vector<std::string>(hosts.begin(), hosts.end()))},
                {"count", static_cast<int64_t>(count)},
                {"first_at", first_place}};
  f.next = ipc ? "peers on one host could not share GPU memory: run the ranks in one container "
                 "(or with --ipc=host and one PID namespace), check `nvidia-smi topo -p2p r`, "
                 "or set NCCL_P2P_DISABLE=1 to confirm"
               : "on that host: `nvidia-smi` (the GPU healthy and visible?), the driver against "
                 "NCCL's +cuda suffix (`stallscope nccl-log` prints both), CUDA_VISIBLE_DEVICES "
                 "and the device each rank selects; `stallscope doctor` there";
  out.push_back(std::move(f));
}

void CheckNcclOobSocket(const NcclLogSummary& log, std::string_view source,
                        std::vector<Finding>& out) {
  std::vector<std::string> what;
  std::string first_place;
  for (const NcclWarning& w : log.warnings) {
    if (!Has(w.text, "Socket creation failed") && !Has(w.text, "Call to socket failed")) continue;
    what.push_back(fmt::format("{} on {}", w.text, Who(w)));
    if (first_place.empty()) first_place = NcclLogPlace(source, w.first_line);
  }
  for (const NcclProcess& p : log.processes) {
    if (p.ib_oob_empty && !p.ib_disabled && !p.ib_devices.empty()) {
      what.push_back(fmt::format("{}: NET/IB lists devices with an empty OOB interface", p.Name()));
    }
  }
  if (what.empty()) return;
  Finding f;
  f.id = "network.oob_socket_failed";
  f.layer = Layer::kNetwork;
  f.severity = Severity::kCritical;
  f.summary =
      fmt::format("NCCL could not open the socket its IB connections start over: {}", what.front());
  f.evidence = {{"failures", Joined(what)}, {"count", static_cast<int64_t>(what.size())}};
  if (!first_place.empty()) f.evidence.push_back({"first_at", first_place});
  f.next =
      "the out-of-band interface has no address of the family NCCL asked for: set "
      "NCCL_SOCKET_FAMILY=AF_INET (or AF_INET6) and NCCL_SOCKET_IFNAME / NCCL_IB_OOB_IFNAME "
      "(2.21+) "
      "to an interface with such an address (`ip -br addr`)";
  out.push_back(std::move(f));
}

void CheckNcclRootUnreachable(const NcclLogSummary& log, std::string_view source,
                              std::vector<Finding>& out) {
  for (const NcclPeerFailure& p : log.peer_failures) {
    if (p.reason != "no local interface in the same subnet") continue;
    std::vector<std::string> local;
    if (const NcclProcess* proc = ProcessNamed(log, p.first_seen_by)) {
      for (const auto* list : {&proc->bootstrap, &proc->net_socket}) {
        for (const NcclInterface& i : *list) {
          std::string text = InterfaceText(i);
          if (std::find(local.begin(), local.end(), text) == local.end()) local.push_back(text);
        }
      }
    }
    bool bind = false;
    for (const NcclWarning& w : log.warnings) bind = bind || Has(w.text, "bind failed");
    Finding f;
    f.id = "network.root_unreachable";
    f.layer = Layer::kNetwork;
    f.severity = Severity::kCritical;
    f.summary = fmt::format(
        "the bootstrap root {} is in no subnet of {}'s interfaces ({}): NCCL cannot reach it",
        p.peer, p.first_seen_by.empty() ? "the host" : p.first_seen_by,
        local.empty() ? "none printed" : Joined(local));
    f.evidence = {{"root", p.peer},
                  {"local_addresses", local.empty() ? "none printed" : Joined(local)},
                  {"seen_by", p.first_seen_by.empty() ? "-" : p.first_seen_by},
                  {"first_at", NcclLogPlace(source, p.first_line)},
                  {"bind_failed", bind}};
    f.next =
        "MASTER_ADDR (or NCCL_COMM_ID) names an address this host has no route to on its "
        "interfaces: use the root's address on the training network, or set "
        "NCCL_SOCKET_IFNAME to this host's interface in the root's subnet";
    out.push_back(std::move(f));
    return;  // one root
  }
}

void CheckNcclConnectTimeout(const NcclLogSummary& log, bool init_failed, std::string_view source,
                             std::vector<Finding>& out) {
  std::vector<std::string> peers;
  std::string first_peer;
  uint64_t first_line = 0;
  for (const NcclPeerFailure& p : log.peer_failures) {
    if (!IsTimeoutReason(p.reason)) continue;
    peers.push_back(fmt::format("{} ({})", p.peer, p.reason));
    if (first_peer.empty()) first_peer = p.peer;
    if (first_line == 0 || (p.first_line != 0 && p.first_line < first_line)) {
      first_line = p.first_line;
    }
  }
  bool retries = log.connect_retries > 0 && IsTimeoutReason(log.connect_retry_reason);
  if (peers.empty() && !retries) return;
  if (retries && !log.connect_retry_peer.empty() && peers.empty()) {
    peers.push_back(fmt::format("{} ({})", log.connect_retry_peer, log.connect_retry_reason));
    first_peer = log.connect_retry_peer;
  }
  if (retries && log.connect_retry_line != 0 &&
      (first_line == 0 || log.connect_retry_line < first_line)) {
    first_line = log.connect_retry_line;
  }
  Finding f;
  f.id = "network.connect_timeout";
  f.layer = Layer::kNetwork;
  f.severity = init_failed ? Severity::kCritical : Severity::kWarning;
  f.summary = fmt::format(
      "NCCL's connects time out{}: traffic is dropped or unroutable (a refused connect would "
      "return at once)",
      peers.empty() ? "" : " to " + peers.front());
  f.evidence = {{"peers", peers.empty() ? "not printed" : Joined(peers)},
                {"connect_retries", static_cast<int64_t>(log.connect_retries)},
                {"retry_reason", log.connect_retry_reason.empty() ? "-" : log.connect_retry_reason},
                {"init_failed", init_failed}};
  if (log.connect_retry_limit > 0) {
    f.evidence.push_back(
        {"attempts", fmt::format("{} of {}", log.connect_retry_max, log.connect_retry_limit)});
  }
  if (first_line != 0) f.evidence.push_back({"first_at", NcclLogPlace(source, first_line)});
  // The commands name the peer the log names; without one, the peer's place.
  auto [address, port] = NcclPeerAddressPort(first_peer);
  if (address.empty()) address = "PEER_IP";
  if (port.empty()) port = "PORT";
  f.next = fmt::format(
      "from the host that retried: `ip route get {0}` (which interface?), `nc -vz -w 3 {0} {1}` "
      "(a timeout is a firewall dropping, or a route that goes nowhere); a security group or "
      "NetworkPolicy must allow NCCL's ports between the hosts",
      address, port);
  out.push_back(std::move(f));
}

void CheckNcclDuplicateAddress(const NcclLogSummary& log, std::string_view source,
                               std::vector<Finding>& out) {
  // Bootstrap listens on the first interface listed: two hosts announcing
  // one address (NAT, or each container's own bridge) reach themselves.
  std::map<std::string, std::set<std::string>> hosts_of;
  std::map<std::string, std::map<std::string, uint64_t>> line_of;  // address, host: first line
  for (const NcclProcess& p : log.processes) {
    if (p.bootstrap.empty() || NcclAddressRedacted(p.bootstrap[0].address)) continue;
    const std::string& a = p.bootstrap[0].address;
    if (StartsWith(a, "127.") || a == "::1") continue;  // network.wrong_interface's
    hosts_of[a].insert(p.host);
    uint64_t& line = line_of[a][p.host];
    if (line == 0 || (p.bootstrap_line != 0 && p.bootstrap_line < line)) line = p.bootstrap_line;
  }
  for (const auto& [address, hosts] : hosts_of) {
    if (hosts.size() < 2) continue;
    std::vector<std::string> list(hosts.begin(), hosts.end());
    Finding f;
    f.id = "network.duplicate_address";
    f.layer = Layer::kNetwork;
    f.severity = Severity::kCritical;
    f.summary = fmt::format("{} hosts announce the same bootstrap address {}: {}", hosts.size(),
                            address, Joined(list, 4));
    f.evidence = {{"address", address},
                  {"hosts", Joined(list)},
                  {"host_count", static_cast<int64_t>(hosts.size())}};
    std::vector<std::string> places;
    for (const std::string& h : list) {
      uint64_t line = line_of[address][h];
      if (line != 0) places.push_back(fmt::format("{} ({})", NcclLogPlace(source, line), h));
    }
    if (!places.empty()) f.evidence.push_back({"bootstrap_lines", Joined(places)});
    f.next =
        "each host must bootstrap on an address the others can reach: containers on their own "
        "bridge or NAT all show one address; use --network host (hostNetwork), or "
        "NCCL_SOCKET_IFNAME naming the host's real interface";
    out.push_back(std::move(f));
  }
}

void CheckNcclLinkLocal(const NcclLogSummary& log, int hosts, std::string_view source,
                        std::vector<Finding>& out) {
  // Judged by use: bootstrap listens on its first interface; the channels
  // run over the NET/Socket devices their lines name ("via NET/Socket/1").
  bool bootstrap_first = false;
  bool channels_use = false;
  bool use_not_shown = false;  // socket channels that do not name their device
  uint64_t first_line = 0;
  std::set<std::string> chosen;
  std::set<std::string> roles;
  std::vector<std::string> processes;
  for (const NcclProcess& p : log.processes) {
    bool any = false;
    uint64_t line = 0;
    auto bad = [](const NcclInterface& i) {
      return IsLinkLocalAddress(i.address) || IsTunnel(i.name);
    };
    for (size_t i = 0; i < p.bootstrap.size(); ++i) {
      if (!bad(p.bootstrap[i])) continue;
      chosen.insert(InterfaceText(p.bootstrap[i]));
      any = true;
      if (i == 0) {
        bootstrap_first = true;
        roles.insert("bootstrap");
        line = p.bootstrap_line;
      }
    }
    bool socket_channels =
        std::find(p.channel_nets.begin(), p.channel_nets.end(), "Socket") != p.channel_nets.end();
    for (size_t i = 0; i < p.net_socket.size(); ++i) {
      if (!bad(p.net_socket[i])) continue;
      chosen.insert(InterfaceText(p.net_socket[i]));
      any = true;
      if (i < 64 && (p.socket_devs_used >> i) & 1) {
        channels_use = true;
        roles.insert(fmt::format("channels (via NET/Socket/{})", i));
        if (line == 0) line = p.socket_channel_line != 0 ? p.socket_channel_line : p.socket_line;
      } else if (p.socket_devs_used == 0 && socket_channels) {
        use_not_shown = true;
      }
    }
    for (const NcclInterface& i : p.ib_oob) {
      if (!bad(i)) continue;
      chosen.insert(InterfaceText(i));
      roles.insert("IB out-of-band");
      any = true;
    }
    if (any) processes.push_back(p.Name());
    if (line == 0) line = p.bootstrap_line != 0 ? p.bootstrap_line : p.socket_line;
    if (any && line != 0 && (first_line == 0 || line < first_line)) first_line = line;
  }
  if (chosen.empty()) return;
  std::vector<std::string> list(chosen.begin(), chosen.end());
  const bool used = bootstrap_first || (channels_use && hosts > 1);
  Finding f;
  f.id = "network.link_local_interface";
  f.layer = Layer::kNetwork;
  // Only listed, or used on one host: nothing crosses it.
  f.severity = used                         ? Severity::kCritical
               : use_not_shown && hosts > 1 ? Severity::kWarning
                                            : Severity::kInfo;
  f.summary = fmt::format("NCCL {} a link-local or tunnel interface: {}",
                          bootstrap_first ? "bootstraps over"
                          : channels_use  ? "runs its channels over"
                                          : "lists",
                          list.front());
  std::vector<std::string> role_list(roles.begin(), roles.end());
  f.evidence = {{"interfaces", Joined(list)},
                {"processes", Joined(processes)},
                {"used_for", role_list.empty() ? (use_not_shown ? "not shown (the channels' "
                                                                  "lines name no device)"
                                                                : "listed only")
                                               : Joined(role_list)},
                {"bootstrap_first", bootstrap_first},
                {"hosts", static_cast<int64_t>(hosts)}};
  if (first_line != 0) f.evidence.push_back({"first_at", NcclLogPlace(source, first_line)});
  f.next =
      "link-local addresses (fe80::, 169.254.x.x) reach only the same link and tunnels add "
      "their own hop: set "
      "NCCL_SOCKET_IFNAME to the training interface (e.g. '^ip6tnl,tunl,sit,gre,lo,docker' "
      "excludes), NCCL_SOCKET_FAMILY=AF_INET if IPv6 is not routed";
  out.push_back(std::move(f));
}

// What carried the job instead of a plugin that failed: the channels' nets,
// else the network NCCL named, else what it listed.
std::string NetUsedInstead(const NcclProcess& p) {
  if (!p.channel_nets.empty()) {
    std::string out;
    for (const std::string& n : p.channel_nets) out += (out.empty() ? "NET/" : ", NET/") + n;
    return out + " (the channels' lines)";
  }
  if (!p.network.empty()) return fmt::format("NET/{} ('Using network {}')", p.network, p.network);
  if (!p.ib_devices.empty()) return "NET/IB (NCCL's internal IB, listed; no channel line yet)";
  if (!p.net_socket.empty()) return "NET/Socket (listed; the log ends before the channels)";
  return "not shown: the log ends before NCCL names its network";
}

void CheckNcclPluginFallback(const NcclLogSummary& log, std::string_view source,
                             std::vector<Finding>& out) {
  std::vector<std::string> what;
  std::set<std::string> instead;
  const NcclProcess* first = nullptr;
  for (const NcclProcess& p : log.processes) {
    if (p.plugin_failure.empty()) continue;
    if (!first ||
        (p.plugin_failure_line != 0 && p.plugin_failure_line < first->plugin_failure_line))
      first = &p;
    what.push_back(p.Name());
    instead.insert(NetUsedInstead(p));
  }
  if (!first) return;
  std::vector<std::string> instead_list(instead.begin(), instead.end());
  Finding f;
  f.id = "network.net_plugin_fallback";
  f.layer = Layer::kNetwork;
  f.severity = Severity::kWarning;
  f.summary = fmt::format("the net plugin {} failed ({}) and NCCL went on with {}",
                          first->plugin_failed, first->plugin_failure, instead_list.front());
  f.evidence = {{"plugin", first->plugin_failed},
                {"reason", first->plugin_failure},
                {"instead", Joined(instead_list)},
                {"processes", Joined(what, 4)},
                {"process_count", static_cast<int64_t>(what.size())},
                {"first_at", NcclLogPlace(source, first->plugin_failure_line)}};
  if (!first->plugin_asked.empty()) f.evidence.push_back({"nccl_net_plugin", first->plugin_asked});
  f.next = fmt::format(
      "on {}: check that NCCL_NET_PLUGIN names a library on the loader's path (`ldconfig -p | "
      "grep nccl-net`, LD_LIBRARY_PATH) built for this NCCL and this fabric's libraries "
      "(`ldd` on it shows what is missing); for aws-ofi-nccl, `fi_info -p efa` must list the "
      "devices; rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET and look for 'Loaded net "
      "plugin'",
      first->Name());
  out.push_back(std::move(f));
}

std::string_view NcclResultName(int code) {
  static constexpr std::string_view kNames[] = {
      "ncclSuccess",         "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
      "ncclInvalidArgument", "ncclInvalidUsage",       "ncclRemoteError", "ncclInProgress"};
  return code >= 0 && code < static_cast<int>(std::size(kNames)) ? kNames[code] : "";
}

int NcclCauseRank(std::string_view id) {
  static constexpr std::string_view kOrder[] = {
      "distributed.nccl_cuda_failure", "network.oob_socket_failed", "network.root_unreachable",
      "network.duplicate_address", "network.wrong_interface", "network.link_local_interface",
      "distributed.nccl_version_mismatch",
      // failures whatever their words
      // (failures.h)
      "distributed.nccl_setup_error", "code.nccl_usage_error", "network.nccl_error",
      "network.connect_timeout", "network.connect_failed", "network.rdma_unused",
      "network.net_plugin_fallback", "distributed.init_incomplete"};
  // The failures whatever their words rank as one: the first in the log
  // comes first (PreferNcclCause).
  if (id == "code.nccl_usage_error" || id == "network.nccl_error") {
    id = "distributed.nccl_setup_error";
  }
  for (size_t i = 0; i < std::size(kOrder); ++i) {
    if (kOrder[i] == id) return static_cast<int>(i);
  }
  return static_cast<int>(std::size(kOrder));
}

}  // namespace stallscope
