// The rules across a job's nodes: see node_rules.h.
#include "analyze/run/node_rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "analyze/run/io_rules.h"
#include "core/stats.h"

namespace stallscope {
namespace {

std::string Rate(double bytes_per_s) {
  if (bytes_per_s >= 1e9) return fmt::format("{:.2f} GB/s", bytes_per_s / 1e9);
  if (bytes_per_s >= 1e6) return fmt::format("{:.1f} MB/s", bytes_per_s / 1e6);
  return fmt::format("{:.0f} kB/s", bytes_per_s / 1e3);
}

// The hosts a host-tagged finding is of: its first evidence, "a, b".
std::vector<std::string> HostsOf(const Finding& f) {
  std::vector<std::string> hosts;
  if (f.evidence.empty() || f.evidence.front().name != "host") return hosts;
  const auto* text = std::get_if<std::string>(&f.evidence.front().value);
  if (text == nullptr) return hosts;
  size_t at = 0;
  while (at <= text->size()) {
    size_t comma = text->find(", ", at);
    if (comma == std::string::npos) comma = text->size();
    if (comma > at) hosts.push_back(text->substr(at, comma - at));
    at = comma + 2;
  }
  return hosts;
}

}  // namespace

NodeReceive ReceiveWhileSyncing(const Timeline& t) {
  NodeReceive out;
  if (t.node == std::nullopt || t.node->net_interface.empty() || t.samples.empty()) return out;
  // Sync seconds per (rank, step), then per sample interval by the step's end.
  auto key = [](int rank, int64_t step) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(rank)) << 40) ^ static_cast<uint64_t>(step);
  };
  std::unordered_map<uint64_t, double> sync;
  sync.reserve(t.step_syncs.size());
  for (const StepSync& s : t.step_syncs) sync[key(s.rank, s.step)] += s.sync_seconds;
  std::vector<double> synced(t.samples.size(), 0), stepped(t.samples.size(), 0);
  for (const StepEvent& e : t.steps) {
    auto at = std::lower_bound(t.samples.begin(), t.samples.end(), e.t,
                               [](const TimelineSample& s, double when) { return s.t < when; });
    if (at == t.samples.end()) continue;
    size_t i = static_cast<size_t>(at - t.samples.begin());
    stepped[i] += 1;
    if (auto it = sync.find(key(e.rank, e.step)); it != sync.end()) synced[i] += it->second;
  }
  auto mean_over = [&](const std::vector<double>& marks, NodeReceive& r) {
    double sum = 0;
    for (size_t i = 0; i < t.samples.size(); ++i) {
      if (marks[i] <= 0 || !t.samples[i].net_rx_bytes_per_s) continue;
      sum += *t.samples[i].net_rx_bytes_per_s;
      ++r.samples;
    }
    if (r.samples >= kNodeReceiveMinSamples) r.bytes_per_s = sum / r.samples;
  };
  // While the ranks synced; else (no sync records, or too few samples with
  // them) while they stepped.
  if (!sync.empty()) {
    out.during_sync = true;
    mean_over(synced, out);
    if (out.bytes_per_s) return out;
    out = NodeReceive{};
  }
  mean_over(stepped, out);
  return out;
}

FindingsWithNotes CheckNodeReceive(const std::vector<NodeRow>& nodes) {
  std::vector<Finding> findings;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const NodeRow& n = nodes[i];
    if (!n.receive_bytes_per_s) continue;
    // Like with like: rates while syncing against rates while syncing.
    std::vector<double> others;
    for (size_t j = 0; j < nodes.size(); ++j) {
      if (j != i && nodes[j].receive_bytes_per_s &&
          nodes[j].receive_during_sync == n.receive_during_sync) {
        others.push_back(*nodes[j].receive_bytes_per_s);
      }
    }
    if (others.empty()) continue;
    const double median = Median(others);
    if (median < kNodeReceiveFloorBytesPerSecond) continue;
    if (*n.receive_bytes_per_s >= kNodeReceiveShare * median) continue;
    Finding f;
    f.id = "network.node_receive_slow";
    f.layer = Layer::kNetwork;
    f.severity = Severity::kWarning;
    const char* when = n.receive_during_sync ? "while its ranks waited in gradient sync"
                                             : "while its ranks stepped";
    f.summary = fmt::format(
        "{}: {} (its route to MASTER_ADDR) received {} {}, under {:.0f}% of the other nodes' "
        "median ({}): its ranks' collective traffic leaves by another interface or a slower path",
        n.host, n.net_interface, Rate(*n.receive_bytes_per_s), when, 100 * kNodeReceiveShare,
        Rate(median));
    f.evidence = {{"host", n.host},
                  {"interface", n.net_interface},
                  {"receive_bytes_per_s", *n.receive_bytes_per_s},
                  {"others_median_receive_bytes_per_s", median},
                  {"nodes_compared", static_cast<int64_t>(others.size() + 1)},
                  {"measured", std::string(n.receive_during_sync ? "during_sync" : "stepping")}};
    if (n.node_rank)
      f.evidence.insert(f.evidence.begin() + 1, {"node_rank", int64_t{*n.node_rank}});
    f.next = fmt::format(
        "on {}: which interface the ranks use (NCCL_DEBUG=INFO: the 'NET/Socket : Using' or "
        "'NET/IB' line, stallscope nccl-log; GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME), then "
        "`ip -s link` for the interface that did carry it, `ethtool {}` for its speed, and "
        "`stallscope net probe` to another node",
        n.host, n.net_interface);
    findings.push_back(std::move(f));
  }
  return FindingsWithNotes{std::move(findings), {}};
}

void CompareNodeIo(const std::vector<NodeRow>& nodes, std::vector<Finding>& findings) {
  if (nodes.size() < 2) return;
  for (Finding& f : findings) {
    const bool wait = f.id == "io.input_bound";
    const bool disk = f.id == "io.device_saturated";
    if (!wait && !disk) continue;
    std::vector<std::string> hosts = HostsOf(f);
    if (hosts.empty()) continue;
    std::set<std::string> of(hosts.begin(), hosts.end());
    std::vector<double> a, b;
    for (const NodeRow& n : nodes) {
      if (of.count(n.host)) continue;
      if (wait && n.data_wait_fraction) a.push_back(*n.data_wait_fraction);
      if (disk && !n.data_device.empty()) {
        a.push_back(n.disk_util_pct);
        b.push_back(n.disk_await_ms);
      }
    }
    if (a.empty()) continue;  // every node has it, or the others measured nothing
    if (wait) {
      const double others = Median(a);
      f.evidence.push_back({"other_nodes_data_wait_fraction", others});
      f.evidence.push_back({"other_nodes", static_cast<int64_t>(a.size())});
      f.summary += fmt::format(
          "; the other {} node{} wait {:.0f}% (median): {}", a.size(), a.size() == 1 ? "" : "s",
          100 * others,
          others < kInputBoundWarningFraction ? "this node's input, not the job's" : "the job's");
    } else {
      const double util = Median(a), await = Median(b);
      f.evidence.push_back({"other_nodes_disk_util_pct", util});
      f.evidence.push_back({"other_nodes_disk_await_ms", await});
      f.summary += fmt::format(
          "; the other nodes' data disks: {:.0f}% util, {:.1f} ms await "
          "(median)",
          util, await);
    }
  }
}

}  // namespace stallscope
