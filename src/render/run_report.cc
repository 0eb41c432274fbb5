#include "render/run_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "analyze/nccl_log/rules.h"
#include "analyze/report.h"
#include "analyze/run/inputs.h"
#include "core/text.h"
#include "core/units.h"
#include "render/distributed.h"
#include "render/html_report.h"
#include "render/report.h"
#include "render/time_breakdown.h"

namespace stallscope {
namespace {
constexpr size_t kInputsShown = 3;
}  // namespace

std::string DescribeRunEnd(const RunInfo& info, size_t samples) {
  std::string how;
  if (info.oom_killed) {
    how = "was killed by the OOM killer (SIGKILL)";
  } else if (info.exit_signal) {
    const char* name = sigabbrev_np(*info.exit_signal);
    how = fmt::format("was killed by SIG{} (signal {})", name ? name : "?", *info.exit_signal);
  } else if (info.exit_code) {
    how = fmt::format("exited {}", *info.exit_code);
  } else if (info.duration_seconds) {
    how = "ended (exit status unknown: not our child)";
  } else {
    how = "did not finish recording (stallscope was stopped, or its run file filled up, mid-run)";
  }
  return fmt::format("{} {} after {:.1f} s; {} samples every {:.1f} s on {}\n", info.command, how,
                     info.duration_seconds.value_or(0), samples, info.interval_seconds,
                     info.hostname);
}

std::string RenderEpochTable(const std::vector<EpochSummary>& epochs) {
  if (epochs.empty()) return "";
  // What each epoch read, where boundary samples measured it (newer files).
  const bool reads = std::any_of(epochs.begin(), epochs.end(),
                                 [](const EpochSummary& e) { return e.read_bytes.has_value(); });
  std::string out = fmt::format("{:>6}{:>10}{:>10}{:>9}{:>11}{:>11}{:>14}", "epoch", "start s",
                                "seconds", "steps", "steps/s", "data wait", "peak tree RSS");
  out += reads ? fmt::format("{:>11}\n", "disk read") : "\n";
  for (const EpochSummary& e : epochs) {
    out += fmt::format(
        "{:>6}{:>10.1f}{:>10.1f}{:>9}{:>11.1f}{:>11}{:>14}", e.epoch, e.start_s, e.duration_s,
        e.steps, e.steps_per_s,
        e.data_wait_fraction ? fmt::format("{:.0f}%", *e.data_wait_fraction * 100) : "-",
        e.peak_tree_rss_bytes ? FormatBytes(e.peak_tree_rss_bytes) : "-");
    if (reads) {
      out += fmt::format("{:>11}\n",
                         e.read_bytes ? FormatBytes(static_cast<uint64_t>(*e.read_bytes)) : "-");
    } else {
      out += "\n";
    }
  }
  return out;
}

nlohmann::ordered_json EpochsToJson(const std::vector<EpochSummary>& epochs) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const EpochSummary& e : epochs) {
    nlohmann::ordered_json epoch = {
        {"epoch", e.epoch},
        {"start_seconds", e.start_s},
        {"duration_seconds", e.duration_s},
        {"steps", e.steps},
        {"steps_per_s", e.steps_per_s},
        {"data_wait_fraction", e.data_wait_fraction ? nlohmann::ordered_json(*e.data_wait_fraction)
                                                    : nlohmann::ordered_json(nullptr)},
        {"peak_tree_rss_bytes", e.peak_tree_rss_bytes}};
    // From boundary samples only (files that have them).
    if (e.read_bytes) epoch["read_bytes"] = static_cast<int64_t>(*e.read_bytes);
    if (e.cpu_seconds) epoch["cpu_seconds"] = *e.cpu_seconds;
    out.push_back(std::move(epoch));
  }
  return out;
}

// The host, or a job's hosts in node order.
std::string RunHosts(const RunAnalysis& run) {
  if (run.nodes.empty()) return run.timeline.info.hostname;
  std::vector<std::string> hosts;
  for (const NodeRow& n : run.nodes) hosts.push_back(n.host);
  return Join(hosts, ", ");
}

nlohmann::ordered_json RunInfoToJson(const RunInfo& info) {
  auto opt = [](const auto& v) {
    return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
  };
  return {{"command", info.command},
          {"host", info.hostname},
          {"started", info.started_utc},
          {"interval_seconds", info.interval_seconds},
          {"duration_seconds", opt(info.duration_seconds)},
          {"exit_code", opt(info.exit_code)},
          {"exit_signal", opt(info.exit_signal)},
          {"oom_killed", info.oom_killed},
          {"data_device", info.data_device}};
}

std::string RenderRunHtml(const RunAnalysis& run) {
  Report report = MakeRunReport(run);
  const RunInfo& info = run.timeline.info;
  HtmlReportInput in;
  in.command = "report";
  in.host = RunHosts(run);
  in.time_utc = info.started_utc;
  in.report = &report;
  in.timeline = &run.timeline;
  in.run_file = run.path;
  in.snapshot_json = run.baseline_json;
  if (!run.nodes.empty()) in.nodes = &run.nodes;
  in.not_checked_why = {{Layer::kDistributed, "fewer than two ranks reported steps"},
                        {Layer::kCode, "no rule of the code layer fired on this run's data"}};
  in.facts = {{"command", info.command},
              {"ended", DescribeRunEnd(info, run.timeline.samples.size())},
              {"interval", fmt::format("{:.2f} s", info.interval_seconds)}};
  if (!info.data_device.empty()) in.facts.push_back({"data disk", info.data_device});
  in.sections_html = RenderTimeHtml(run.time);
  return RenderHtmlReport(in);
}

nlohmann::ordered_json NcclLogsJson(const std::vector<NcclLogFile>& logs) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const NcclLogFile& log : logs) {
    out.push_back({{"file", log.path},
                   {"nccl_lines", log.summary.nccl_lines},
                   {"ranks", log.summary.ranks.size()},
                   {"hosts", NcclJobNodes(log.summary)},
                   {"first_socket_line", log.first_socket_line}});
  }
  return out;
}

// What the loader read, most seen first (analyze/run/inputs.h); null for
// run files that predate the inputs table.
nlohmann::ordered_json InputsToJson(const Timeline& timeline) {
  if (!timeline.inputs_recorded) return nullptr;
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const LoaderInput& in : WhatTheLoaderReads(timeline)) {
    out.push_back({{"kind", in.kind},
                   {"path", in.path},
                   {"role", in.role},
                   {"files", in.files},
                   {"samples", in.samples},
                   {"size_bytes", in.size_bytes},
                   {"fs_type", in.fs_type},
                   {"remote", in.remote},
                   {"device", in.device},
                   {"format", in.format},
                   {"compressed", in.compressed},
                   {"method", in.method}});
  }
  return out;
}

nlohmann::ordered_json RunReportJson(std::string_view command, const RunAnalysis& run,
                                     const std::vector<NcclLogFile>& nccl_logs) {
  const Timeline& timeline = run.timeline;
  Report report = MakeRunReport(run);
  ReportHeader header{std::string(command), RunHosts(run), timeline.info.started_utc,
                      timeline.info.duration_seconds.value_or(0)};
  nlohmann::ordered_json j = ReportToJson(header, report);
  j["run"] = RunInfoToJson(timeline.info);
  j["run"]["file"] = run.path;
  // The version that wrote the run file; null: older than that record.
  j["run"]["written_by"] = timeline.written_by.empty()
                               ? nlohmann::ordered_json(nullptr)
                               : nlohmann::ordered_json(timeline.written_by);
  j["run"]["samples"] = timeline.samples.size();
  j["epochs"] = EpochsToJson(run.epochs);
  j["time_breakdown"] = TimeBreakdownToJson(run.time);
  j["ranks"] = RanksToJson(run.ranks);
  j["inputs"] = InputsToJson(timeline);
  if (!run.nodes.empty()) j["nodes"] = NodesToJson(run.nodes);
  if (!nccl_logs.empty()) j["nccl_logs"] = NcclLogsJson(nccl_logs);
  return j;
}

std::string RenderRunReportText(std::string_view command, const RunAnalysis& run) {
  const Timeline& timeline = run.timeline;
  Report report = MakeRunReport(run);
  ReportHeader header{std::string(command), RunHosts(run), timeline.info.started_utc,
                      timeline.info.duration_seconds.value_or(0)};
  std::string out = "\n" + DescribeRunEnd(timeline.info, timeline.samples.size());
  std::string table = RenderEpochTable(run.epochs);
  if (!table.empty()) out += "\n" + table;
  if (std::string time = RenderTimeTable(run.time); !time.empty()) out += "\n" + time;
  if (std::string rank_table = RenderRankTable(run.ranks); !rank_table.empty()) {
    out += "\n" + rank_table;
  }
  if (std::string node_table = RenderNodeTable(run.nodes); !node_table.empty()) {
    out += "\n" + node_table;
  }
  std::vector<LoaderInput> inputs = WhatTheLoaderReads(timeline);
  for (size_t i = 0; i < inputs.size() && i < kInputsShown; ++i) {
    out +=
        fmt::format("{} {}: {}\n", i == 0 ? "\nthe loader read" : "               ",
                    inputs[i].role == "rank" ? "(in the rank)" : "(workers)", inputs[i].Describe());
  }
  if (inputs.size() > kInputsShown) {
    out += fmt::format("                (and {} more: `report --json`)\n",
                       inputs.size() - kInputsShown);
  }
  out += "\n" + RenderReportText(header, report);
  if (run.nodes.empty()) {
    out += fmt::format("run file: {} (sqlite3 {} 'select * from samples')\n", run.path, run.path);
  } else {
    out += fmt::format("run files, one job: {}\n", run.path);
  }
  out +=
      fmt::format("written by: {}\n", timeline.written_by.empty()
                                          ? "stallscope of an unknown version (an older run file)"
                                          : "stallscope " + timeline.written_by);
  return out;
}

}  // namespace stallscope
