// Per-rank and scaling tables (render/distributed.h).
#include "render/distributed.h"

#include <fmt/format.h>

namespace stallscope {
namespace {

std::string Ms(const std::optional<double>& seconds) {
  return seconds ? fmt::format("{:.1f}", 1000 * *seconds) : "-";
}

std::string Percent(const std::optional<double>& fraction) {
  return fraction ? fmt::format("{:.1f}%", 100 * *fraction) : "-";
}

nlohmann::ordered_json OrNull(const std::optional<double>& v) {
  return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}

}  // namespace

std::string ReceiveText(const NodeRow& n) {
  if (n.net_interface.empty()) return "-";
  if (!n.receive_bytes_per_s) return n.net_interface + " -";
  return fmt::format("{} {:.1f} MB/s", n.net_interface, *n.receive_bytes_per_s / 1e6);
}

std::string RenderNodeTable(const std::vector<NodeRow>& nodes) {
  if (nodes.size() < 2) return "";
  std::string out =
      "per node (steps/s of its lowest rank; data and sync wait as shares of its ranks' step "
      "time; host figures are means over the samples; net rx: its route to MASTER_ADDR while its "
      "ranks synced, else stepped):\n";
  out += fmt::format("{:>4}  {:<16} {:<10} {:>7} {:>9} {:>9} {:>10} {:>7} {:>12} {:>6}  {}\n",
                     "node", "host", "ranks", "steps/s", "data wait", "sync wait", "peak RSS",
                     "swap p/s", "disk util/ms", "cpu", "net rx");
  for (const NodeRow& n : nodes) {
    out += fmt::format(
        "{:>4}  {:<16} {:<10} {:>7} {:>9} {:>9} {:>10} {:>7.0f} {:>12} {:>5.0f}%  {}{}\n",
        n.node_rank ? std::to_string(*n.node_rank) : "-", n.host.empty() ? "-" : n.host,
        RankRangeText(n.ranks), n.steps_per_s ? fmt::format("{:.2f}", *n.steps_per_s) : "-",
        Percent(n.data_wait_fraction), Percent(n.sync_wait_fraction),
        fmt::format("{:.1f} MiB", static_cast<double>(n.peak_tree_rss_bytes) / (1 << 20)),
        n.swap_pages_per_s,
        n.data_device.empty() ? "-"
                              : fmt::format("{:.0f}%/{:.1f}", n.disk_util_pct, n.disk_await_ms),
        n.cpu_pct, ReceiveText(n), n.truncated ? "  (cut short)" : "");
  }
  return out;
}

nlohmann::ordered_json NodesToJson(const std::vector<NodeRow>& nodes) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const NodeRow& n : nodes) {
    nlohmann::ordered_json j;
    j["host"] = n.host;
    j["node_rank"] = n.node_rank ? nlohmann::ordered_json(*n.node_rank) : nullptr;
    j["file"] = n.path;
    j["ranks"] = n.ranks;
    j["steps_per_s"] = OrNull(n.steps_per_s);
    j["data_wait_fraction"] = OrNull(n.data_wait_fraction);
    j["sync_wait_fraction"] = OrNull(n.sync_wait_fraction);
    j["peak_tree_rss_bytes"] = n.peak_tree_rss_bytes;
    j["swap_pages_per_s"] = n.swap_pages_per_s;
    j["data_device"] = n.data_device;
    j["util_pct"] = n.data_device.empty() ? nlohmann::ordered_json(nullptr)
                                          : nlohmann::ordered_json(n.disk_util_pct);
    j["await_ms"] = n.data_device.empty() ? nlohmann::ordered_json(nullptr)
                                          : nlohmann::ordered_json(n.disk_await_ms);
    j["cpu_pct"] = n.cpu_pct;
    j["net_interface"] = n.net_interface;
    j["receive_bytes_per_s"] = OrNull(n.receive_bytes_per_s);
    j["receive_measured"] =
        !n.receive_bytes_per_s
            ? nlohmann::ordered_json(nullptr)
            : nlohmann::ordered_json(n.receive_during_sync ? "during_sync" : "stepping");
    j["clock_shift_seconds"] = n.clock_shift_seconds;
    j["clock_offset_seconds"] = OrNull(n.clock_offset_seconds);
    j["truncated"] = n.truncated;
    out.push_back(std::move(j));
  }
  return out;
}

std::string RenderRankTable(const std::vector<RankSummary>& ranks) {
  if (ranks.size() < 2) return "";
  std::string out = fmt::format(
      "per rank, mean per step after the first {} steps (sync wait and CPU from "
      "stallscope.ddp(model)):\n",
      kRankWarmupSteps);
  out += fmt::format("{:>5}  {:<16} {:>6} {:>9} {:>11} {:>13} {:>13} {:>8}\n", "rank", "host",
                     "steps", "step ms", "compute ms", "sync wait ms", "data wait ms", "CPU ms");
  for (const RankSummary& r : ranks) {
    out += fmt::format("{:>5}  {:<16} {:>6} {:>9.1f} {:>11.1f} {:>13} {:>13.1f} {:>8}\n", r.rank,
                       r.hostname.empty() ? "-" : r.hostname, r.steps, 1000 * r.step_s,
                       1000 * r.compute_s, Ms(r.sync_wait_s), 1000 * r.data_wait_s, Ms(r.cpu_s));
  }
  return out;
}

nlohmann::ordered_json RanksToJson(const std::vector<RankSummary>& ranks) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const RankSummary& r : ranks) {
    nlohmann::ordered_json j;
    j["rank"] = r.rank;
    j["host"] = r.hostname;
    j["steps"] = r.steps;
    j["step_seconds"] = r.step_s;
    j["compute_seconds"] = r.compute_s;
    j["sync_wait_seconds"] = r.sync_wait_s ? nlohmann::ordered_json(*r.sync_wait_s) : nullptr;
    j["data_wait_seconds"] = r.data_wait_s;
    j["cpu_seconds_per_step"] = r.cpu_s ? nlohmann::ordered_json(*r.cpu_s) : nullptr;
    out.push_back(std::move(j));
  }
  return out;
}

std::string RenderScaleTable(const ScaleAnalysis& a) {
  std::string out =
      fmt::format("{:>5} {:>6} {:>11} {:>8} {:>11} {:>9} {:>11} {:>10}\n", "procs", "ranks",
                  "samples/s", "speedup", "efficiency", "step ms", "comm ratio", "sync wait");
  for (const ScaleRow& r : a.rows) {
    out += fmt::format(
        "{:>5} {:>6} {:>11.1f} {:>7.2f}x {:>10.0f}% {:>9.1f} {:>10.0f}% {:>10}\n", r.point.procs,
        r.point.ranks_reported, r.point.samples_per_s, r.speedup, 100 * r.efficiency,
        1000 * r.point.step_s, 100 * r.comm_ratio,
        r.point.sync_s ? fmt::format("{:.0f}%", 100 * *r.point.sync_s / r.point.step_s) : "-");
  }
  out += fmt::format(
      "speedup and efficiency against {} proc{}; comm ratio = (t_N - t_{}) / t_N; sync wait = "
      "measured by stallscope.ddp(model)\n",
      a.base_procs, a.base_procs == 1 ? "" : "s", a.base_procs);
  if (a.serial_fraction) {
    double s = *a.serial_fraction;
    out += fmt::format("Amdahl fit: serial fraction {:.3f}", s);
    out += s > 0 ? fmt::format(" (speedup can never pass {:.1f}x)\n", 1 / s) : "\n";
  }
  if (!a.rows.empty() && a.rows.size() >= 2) {
    out += fmt::format("gradient accumulation at {} procs (comm share / efficiency):",
                       a.rows.back().point.procs);
    for (const Accumulation& acc : a.accumulation) {
      out += fmt::format("  k={}: {:.0f}% / {:.0f}%", acc.k, 100 * acc.comm_ratio,
                         100 * acc.efficiency);
    }
    out += "\n";
  }
  return out;
}

nlohmann::ordered_json ScaleToJson(const ScaleAnalysis& a, const std::string& command,
                                   int64_t steps, const std::string& launcher) {
  nlohmann::ordered_json j;
  j["base_procs"] = a.base_procs;
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const ScaleRow& r : a.rows) {
    nlohmann::ordered_json row;
    row["procs"] = r.point.procs;
    row["ranks_reported"] = r.point.ranks_reported;
    row["steps"] = r.point.steps;
    row["samples_per_s"] = r.point.samples_per_s;
    row["speedup"] = r.speedup;
    row["efficiency"] = r.efficiency;
    row["step_seconds"] = r.point.step_s;
    row["comm_ratio"] = r.comm_ratio;
    row["sync_wait_seconds"] = r.point.sync_s ? nlohmann::ordered_json(*r.point.sync_s) : nullptr;
    rows.push_back(std::move(row));
  }
  j["rows"] = std::move(rows);
  j["amdahl_serial_fraction"] =
      a.serial_fraction ? nlohmann::ordered_json(*a.serial_fraction) : nullptr;
  nlohmann::ordered_json acc = nlohmann::ordered_json::array();
  for (const Accumulation& x : a.accumulation) {
    acc.push_back({{"k", x.k}, {"comm_ratio", x.comm_ratio}, {"efficiency", x.efficiency}});
  }
  j["gradient_accumulation"] = std::move(acc);
  j["command"] = command;
  j["steps"] = steps;
  j["launcher"] = launcher;
  return j;
}

}  // namespace stallscope
