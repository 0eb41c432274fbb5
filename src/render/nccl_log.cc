#include "render/nccl_log.h"

#include <fmt/format.h>

#include <map>

#include "analyze/nccl_log/host.h"
#include "analyze/nccl_log/rules.h"
#include "core/units.h"

namespace stallscope {
namespace {

std::string Interfaces(const std::vector<NcclInterface>& list) {
  if (list.empty()) return "-";
  std::string out;
  for (const NcclInterface& i : list) {
    if (!out.empty()) out += " ";
    out += i.address.empty() ? i.name : i.name + ":" + i.address;
  }
  return out;
}

// The IB devices column: the devices, or why there are none.
std::string IbColumn(const NcclProcess& p) {
  if (p.ib_disabled) return "disabled";
  if (!p.ib_devices.empty()) return Interfaces(p.ib_devices);
  if (p.ib_no_device) return "none found";
  return "-";
}

// `text` in at most `width` bytes: longer values end in "~" (the JSON has
// them whole).
std::string Fit(const std::string& text, size_t width) {
  if (text.size() <= width) return text;
  return text.substr(0, width - 1) + "~";
}

std::string InitText(const NcclRank& r) {
  std::string state = r.init_started > r.init_completed ? "STARTED, not done"
                      : r.init_completed > 0            ? "done"
                                                        : "no COMPLETE";
  if (r.init_seconds) state += fmt::format(" {:.2f} s", *r.init_seconds);
  return state;
}

// One table row of a rank, without its identity.
std::string RankColumns(const NcclProcess& p, const NcclRank& r) {
  return fmt::format("{:<17} {:<9} {:<24} {:<24} {:<24} {:<24} {:<26} {}",
                     Fit(p.version.empty() ? "-" : p.version, 17),
                     Fit(p.network.empty() ? "-" : p.network, 9), Fit(Interfaces(p.bootstrap), 24),
                     Fit(IbColumn(p), 24), Fit(Interfaces(p.net_socket), 24),
                     Fit(p.ib_oob_empty ? "(empty)" : Interfaces(p.ib_oob), 24),
                     Fit(NcclTransportMix(r.transports), 26), InitText(r));
}

nlohmann::ordered_json InterfacesJson(const std::vector<NcclInterface>& list) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const NcclInterface& i : list) out.push_back({{"name", i.name}, {"address", i.address}});
  return out;
}

nlohmann::ordered_json TransportsJson(const NcclTransportCounts& t) {
  return {{"p2p", t.p2p},
          {"shm", t.shm},
          {"net_socket", t.net_socket},
          {"net_ib", t.net_ib},
          {"net_other", t.net_other},
          {"gdrdma", t.gdrdma},
          {"collnet", t.collnet},
          {"nvls_channels", t.nvls_channels}};
}

}  // namespace

std::string NcclTransportMix(const NcclTransportCounts& t) {
  std::string out;
  auto add = [&](uint64_t n, std::string_view name) {
    if (n == 0) return;
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", name, n);
  };
  add(t.p2p, "P2P");
  add(t.shm, "SHM");
  add(t.net_ib, "NET/IB");
  add(t.net_socket, "NET/Socket");
  add(t.net_other, "NET/plugin");
  add(t.collnet, "CollNet");
  if (t.gdrdma) out += fmt::format(" (GDR {})", t.gdrdma);
  if (t.nvls_channels) out += fmt::format("{}NVLS {} ch", out.empty() ? "" : ", ", t.nvls_channels);
  return out.empty() ? "-" : out;
}

std::string RenderNcclLogText(std::string_view source, const NcclLogSummary& log,
                              const ReportHeader& header, const Report& report) {
  std::string out = fmt::format(
      "stallscope nccl-log {}: {} read, {} NCCL lines ({} INFO, {} WARN, {} TRACE), {} rank(s) "
      "in {} process(es) on {} host(s){}\n",
      source, FormatBytes(log.bytes), log.nccl_lines, log.info_lines, log.warn_lines,
      log.trace_lines, log.ranks.size(), log.processes.size(), NcclJobNodes(log),
      NcclPeerHostsInferred(log) > 0
          ? fmt::format(" ({} inferred from network peers with no lines of their own)",
                        NcclPeerHostsInferred(log))
          : "");
  out += fmt::format("lines: {} NCCL lines given to a host:pid, {} other line(s)",
                     log.attributed_lines, log.other_lines);
  if (log.folded_repeats) {
    out += fmt::format(", {} line(s) Ray folded into \"[repeated Nx]\" (their ranks are unknown)",
                       log.folded_repeats);
  }
  if (log.joined_lines) out += fmt::format(", {} wrapped line(s) joined", log.joined_lines);
  out += "\n\n";
  if (log.ranks.empty()) {
    out += "no NCCL lines with a host:pid:tid prefix: was the job run with NCCL_DEBUG=INFO?\n\n";
  } else {
    out += fmt::format("{:<24} {:>3} {:>9} {:<17} {:<9} {:<24} {:<24} {:<24} {:<24} {:<26} {}\n",
                       "host:pid", "dev", "rank", "version", "network", "bootstrap", "IB devices",
                       "sockets", "IB OOB", "transports", "init");
    // Past 16 ranks, ranks whose columns are all alike share one row.
    const bool group = log.ranks.size() > 16;
    std::vector<std::pair<std::string, std::vector<const NcclRank*>>> rows;
    std::map<std::string, size_t> row_of;
    for (const NcclRank& r : log.ranks) {
      std::string columns = RankColumns(log.processes[r.process], r);
      auto [it, added] = row_of.emplace(group ? columns : std::to_string(rows.size()), rows.size());
      if (added) rows.push_back({columns, {}});
      rows[it->second].second.push_back(&r);
    }
    size_t shown = 0;
    for (const auto& [columns, ranks] : rows) {
      if (shown++ == kNcclTextMaxRows) {
        out += fmt::format("... {} more row(s): --json lists every rank\n",
                           rows.size() - kNcclTextMaxRows);
        break;
      }
      const NcclRank& r = *ranks.front();
      const NcclProcess& p = log.processes[r.process];
      std::string nranks = r.nranks > 0 ? std::to_string(r.nranks) : "?";
      if (ranks.size() == 1) {
        out += fmt::format("{:<24} {:>3} {:>9} {}\n", Fit(p.Name(), 24),
                           r.cuda_dev >= 0 ? std::to_string(r.cuda_dev) : "-",
                           r.rank >= 0 ? fmt::format("{}/{}", r.rank, nranks) : "-", columns);
      } else {
        out += fmt::format("{:<24} {:>3} {:>9} {}\n",
                           Fit(fmt::format("{} ranks: {}..", ranks.size(), p.Name()), 24), "-",
                           "/" + nranks, columns);
      }
    }
    out += "\n";
  }
  // The CUDA runtime NCCL was built for (its "+cudaX.Y" suffix) next to the
  // driver it found: a runtime newer than the driver cannot run.
  std::map<std::pair<std::string, std::string>, size_t> cuda;
  for (const NcclProcess& p : log.processes) {
    std::string runtime = NcclCudaRuntime(p.version);
    std::string driver = NcclCudaDriverText(p.cuda_driver);
    if (!runtime.empty() || !driver.empty()) ++cuda[{runtime, driver}];
  }
  for (const auto& [versions, count] : cuda) {
    std::string compat = NcclCudaCompatibility(versions.first, versions.second);
    out += fmt::format("CUDA: runtime {} (NCCL's +cuda suffix), driver {} on {} process(es){}\n",
                       versions.first.empty() ? "-" : versions.first,
                       versions.second.empty() ? "-" : versions.second, count,
                       compat.empty() ? "" : ": " + compat);
  }
  if (log.launcher.lines > 0) {
    const NcclLauncherEcho& e = log.launcher;
    out += fmt::format(
        "launcher's echo (line {}, {} line(s)): WORLD_SIZE {}, RANK {}, LOCAL_RANK {}\n",
        e.first_line, e.lines, e.world_size > 0 ? std::to_string(e.world_size) : "-",
        e.ranks.empty()
            ? "-"
            : fmt::format("{} value(s) {}..{}", e.ranks.size(), e.ranks.front(), e.ranks.back()),
        e.local_ranks.empty() ? "-"
                              : fmt::format("{} value(s) {}..{}", e.local_ranks.size(),
                                            e.local_ranks.front(), e.local_ranks.back()));
  }
  // aws-ofi-nccl's own facts, one line per distinct set.
  std::map<std::string, size_t> ofi;
  for (const NcclProcess& p : log.processes) {
    if (p.ofi.Any()) ++ofi[NcclOfiText(p)];
  }
  for (const auto& [text, count] : ofi) {
    out += fmt::format("aws-ofi-nccl: {} on {} process(es)\n", text, count);
  }
  if (!log.unattributed_versions.empty()) {
    out += fmt::format("NCCL versions printed without a prefix: {}\n",
                       fmt::join(log.unattributed_versions, ", "));
  }
  if (!log.tests_ranks.empty()) {
    std::map<std::string, std::vector<int>> by_host;
    for (const NcclTestsRank& r : log.tests_ranks) by_host[r.host].push_back(r.rank);
    std::vector<std::string> hosts;
    for (const auto& [host, ranks] : by_host) {
      hosts.push_back(fmt::format("{} ({} rank(s))", host, ranks.size()));
    }
    out +=
        fmt::format("nccl-tests ranks: {} on {}\n", log.tests_ranks.size(), fmt::join(hosts, ", "));
  }
  if (!log.torch_groups.empty()) {
    const NcclTorchGroup& g = log.torch_groups.front();
    out +=
        fmt::format("PyTorch process groups: {} line(s) read; first: global rank {}, size {}{}\n",
                    log.torch_groups.size(), g.global_rank, g.size,
                    g.nccl_version.empty() ? "" : ", NCCL " + g.nccl_version);
  }
  if (log.libfabric_lines > 0) {
    // Its routine warnings (a provider it looked for and did not find, ...)
    // are counted here, not only in the JSON.
    uint64_t named = log.libfabric_efa_failures.size() + log.libfabric_empty_providers.size();
    out += fmt::format(
        "libfabric: {} line(s) of its own ({} named below, the rest routine: providers and "
        "options it reports while it looks for a fabric)\n",
        log.libfabric_lines, named);
  }
  if (!log.libfabric_efa_failures.empty()) {
    out += fmt::format("libfabric: {} EFA failure(s); first: {}\n",
                       log.libfabric_efa_failures.size(), log.libfabric_efa_failures.front());
  }
  if (!log.libfabric_empty_providers.empty()) {
    out += fmt::format("libfabric: no provider {} (fi_getinfo returned an empty list)\n",
                       fmt::join(log.libfabric_empty_providers, ", "));
  }
  if (!log.rings.empty()) {
    out += fmt::format("rings (as rank 0 printed them): {}\n", fmt::join(log.rings, " | "));
  }
  for (const NcclRank& r : log.ranks) {
    if (r.trees.empty()) continue;
    out +=
        fmt::format("trees of {} [{}]: {}\n", log.processes[r.process].Name(), r.cuda_dev, r.trees);
    break;
  }
  if (!log.algorithms.empty()) {
    std::vector<std::string> algos;
    for (const NcclAlgorithmChoice& a : log.algorithms) {
      algos.push_back(fmt::format("{} x{}", a.text, a.count));
    }
    out += fmt::format("algorithm/protocol: {}\n", fmt::join(algos, ", "));
  }
  if (!log.warnings.empty()) {
    out += fmt::format("warnings ({} distinct):\n", log.warnings.size());
    for (const NcclWarning& w : log.warnings) {
      out += fmt::format("  {:>5}x  {}  {}\n", w.count, w.first_seen_by, w.text);
    }
  }
  if (log.connect_retries > 0) {
    out += fmt::format(
        "connect retries: {} ({}{}{})\n", log.connect_retries,
        log.connect_retry_reason.empty() ? "reason not printed" : log.connect_retry_reason,
        log.connect_retry_peer.empty() ? "" : ", to " + log.connect_retry_peer,
        log.connect_retry_limit
            ? fmt::format(", attempt {} of {}", log.connect_retry_max, log.connect_retry_limit)
            : "");
  }
  for (const NcclPeerFailure& f : log.peer_failures) {
    out += fmt::format("peer failure: {} ({}), {}x, first seen by {}\n", f.peer,
                       f.reason.empty() ? "no reason printed" : f.reason, f.count,
                       f.first_seen_by.empty() ? "-" : f.first_seen_by);
  }
  if (log.system_errors + log.remote_errors + log.timeouts > 0) {
    out += fmt::format(
        "errors: {} 'unhandled system error', {} 'remote process exited or network error', {} "
        "timeouts\n",
        log.system_errors, log.remote_errors, log.timeouts);
  }
  if (log.dropped) {
    out += fmt::format("note: {} item(s) past the parser's caps were counted, not kept\n",
                       log.dropped);
  }
  out += "\n";
  out += RenderFindingsSection(header, report);
  return out;
}

nlohmann::ordered_json NcclLogToJson(std::string_view source, const NcclLogSummary& log,
                                     const ReportHeader& header, const Report& report) {
  nlohmann::ordered_json out = ReportToJson(header, report);
  nlohmann::ordered_json n;
  n["source"] = source;
  n["bytes"] = log.bytes;
  n["nccl_lines"] = log.nccl_lines;
  n["info_lines"] = log.info_lines;
  n["warn_lines"] = log.warn_lines;
  n["trace_lines"] = log.trace_lines;
  n["attributed_lines"] = log.attributed_lines;
  n["other_lines"] = log.other_lines;
  n["folded_repeats"] = log.folded_repeats;
  n["joined_lines"] = log.joined_lines;
  n["hosts"] = NcclJobNodes(log);
  n["hosts_inferred_from_peers"] = NcclPeerHostsInferred(log);
  nlohmann::ordered_json processes = nlohmann::ordered_json::array();
  for (const NcclProcess& p : log.processes) {
    processes.push_back(
        {{"host", p.host},
         {"pid", p.pid},
         {"version", p.version},
         {"cuda_runtime", NcclCudaRuntime(p.version)},
         {"cuda_driver", p.cuda_driver},
         {"error_returns", p.error_returns},
         {"cuda_compatibility",
          NcclCudaCompatibility(NcclCudaRuntime(p.version), NcclCudaDriverText(p.cuda_driver))},
         {"network", p.network},
         {"bootstrap", InterfacesJson(p.bootstrap)},
         {"net_socket", InterfacesJson(p.net_socket)},
         {"ib_devices", InterfacesJson(p.ib_devices)},
         {"ib_oob", InterfacesJson(p.ib_oob)},
         {"ib_no_device", p.ib_no_device},
         {"ib_disabled", p.ib_disabled},
         {"socket_ifname", p.socket_ifname},
         {"nnodes", p.nnodes},
         {"net_plugin", p.net_plugin},
         {"plugin_path", p.plugin_path},
         {"plugin_failed", p.plugin_failed},
         {"plugin_failure", p.plugin_failure},
         {"libibverbs_missing", p.libibverbs_missing},
         {"ofi_provider", p.ofi_provider},
         {"channel_nets", p.channel_nets}});
    // Another process under the same host:pid (named "host:pid#N").
    if (p.twin > 0) processes.back()["same_host_pid_as_another"] = p.twin + 1;
    if (p.ofi.Any()) {
      processes.back()["ofi"] = {{"plugin_version", p.ofi.plugin_version},
                                 {"libfabric_version", p.ofi.libfabric_version},
                                 {"provider", p.ofi_provider},
                                 {"fabric", p.ofi.fabric},
                                 {"nics", p.ofi.nics},
                                 {"devices", p.ofi.devices},
                                 {"protocol", p.ofi.protocol},
                                 {"platform", p.ofi.platform},
                                 {"gdr_disabled", p.ofi.gdr_disabled}};
    }
  }
  n["processes"] = processes;
  nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
  for (const NcclRank& r : log.ranks) {
    nlohmann::ordered_json j = {{"host", log.processes[r.process].host},
                                {"pid", log.processes[r.process].pid},
                                {"cuda_dev", r.cuda_dev},
                                {"rank", r.rank},
                                {"nranks", r.nranks},
                                {"init_started", r.init_started},
                                {"init_completed", r.init_completed},
                                {"identity_from_init", r.identity_from_init}};
    if (log.processes[r.process].twin > 0) j["process"] = log.processes[r.process].Name();
    j["init_seconds"] = r.init_seconds ? nlohmann::ordered_json(*r.init_seconds) : nullptr;
    j["transports"] = TransportsJson(r.transports);
    j["trees"] = r.trees;
    j["lines"] = r.lines;
    j["warnings"] = r.warnings;
    ranks.push_back(j);
  }
  n["ranks"] = ranks;
  n["unattributed_versions"] = log.unattributed_versions;
  n["rings"] = log.rings;
  nlohmann::ordered_json algos = nlohmann::ordered_json::array();
  for (const NcclAlgorithmChoice& a : log.algorithms) {
    algos.push_back({{"choice", a.text}, {"count", a.count}});
  }
  n["algorithms"] = algos;
  nlohmann::ordered_json warnings = nlohmann::ordered_json::array();
  for (const NcclWarning& w : log.warnings) {
    warnings.push_back({{"text", w.text}, {"first_seen_by", w.first_seen_by}, {"count", w.count}});
  }
  n["warnings"] = warnings;
  nlohmann::ordered_json peers = nlohmann::ordered_json::array();
  for (const NcclPeerFailure& p : log.peer_failures) {
    peers.push_back({{"peer", p.peer},
                     {"reason", p.reason},
                     {"first_seen_by", p.first_seen_by},
                     {"count", p.count}});
  }
  n["peer_failures"] = peers;
  nlohmann::ordered_json proxies = nlohmann::ordered_json::array();
  for (const NcclProxyFailure& f : log.proxy_failures) {
    proxies.push_back({{"proxy_of_rank", f.proxy_rank},
                       {"from_rank", f.from_rank},
                       {"operation", f.operation},
                       {"retcode", f.retcode},
                       {"host", f.host},
                       {"printed_by", f.proxy_process},
                       {"count", f.count}});
  }
  if (!proxies.empty()) n["proxy_failures"] = proxies;
  n["connect_retries"] = log.connect_retries;
  n["connect_retry"] = {{"reason", log.connect_retry_reason},
                        {"peer", log.connect_retry_peer},
                        {"max_attempt", log.connect_retry_max},
                        {"limit", log.connect_retry_limit}};
  n["errors"] = {{"unhandled_system_error", log.system_errors},
                 {"remote_error", log.remote_errors},
                 {"timeout", log.timeouts},
                 {"version_mismatch_warning", log.version_mismatch_warnings}};
  n["dropped"] = log.dropped;
  nlohmann::ordered_json tests = nlohmann::ordered_json::array();
  for (const NcclTestsRank& r : log.tests_ranks) {
    tests.push_back({{"rank", r.rank},
                     {"group", r.group},
                     {"pid", r.pid},
                     {"host", r.host},
                     {"device", r.device},
                     {"bus_id", r.bus_id},
                     {"gpu", r.gpu}});
  }
  n["nccl_tests_ranks"] = tests;
  nlohmann::ordered_json torch = nlohmann::ordered_json::array();
  for (const NcclTorchGroup& g : log.torch_groups) {
    torch.push_back({{"process", g.process},
                     {"launcher_tag", g.tag},
                     {"global_rank", g.global_rank},
                     {"size", g.size},
                     {"nccl_version", g.nccl_version}});
  }
  n["pytorch_groups"] = torch;
  n["launcher"] = {{"world_size", log.launcher.world_size},
                   {"ranks", log.launcher.ranks},
                   {"local_ranks", log.launcher.local_ranks},
                   {"lines", log.launcher.lines},
                   {"first_line", log.launcher.first_line}};
  n["torch_nccl_errors"] = log.torch_nccl_errors;
  n["torch_error_versions"] = log.torch_error_versions;
  n["libfabric"] = {{"lines", log.libfabric_lines},
                    {"empty_providers", log.libfabric_empty_providers},
                    {"efa_failures", log.libfabric_efa_failures}};
  out["nccl"] = n;
  return out;
}

}  // namespace stallscope
