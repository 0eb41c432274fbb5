#include "render/html_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "analyze/host/baseline.h"
#include "analyze/host/triage_table.h"
#include "core/json_text.h"
#include "render/distributed.h"
#include "render/report.h"

namespace stallscope {
namespace {

constexpr const char* kStyle = R"css(
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1000px;color:#222;padding:0 12px}
h1{font-size:22px;margin-bottom:4px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f4}.critical{color:#fff;background:#c62828}.warning{background:#ffb300}
.info,.ok{background:#c8e6c9}.notchecked{background:#eee;color:#555}
.sev{padding:1px 6px;border-radius:3px;font-weight:600}
.finding{border:1px solid #ddd;border-left:6px solid #999;padding:6px 12px;margin:10px 0}
.finding.critical{border-left-color:#c62828;background:none;color:inherit}
.finding.warning{border-left-color:#ffb300;background:none}.finding.info{border-left-color:#43a047;background:none}
code,pre{font-family:ui-monospace,monospace;font-size:12.5px}pre{background:#f7f7f7;padding:8px;overflow:auto;max-height:420px}
svg.chart{display:block;margin:10px 0;background:#fff;border:1px solid #eee}
svg .title{font-weight:600;font-size:13px}svg text{font-size:11px;fill:#333}
svg .grid{stroke:#eee}svg .frame,svg .xtick{stroke:#888}
svg .marker line{stroke:#777;stroke-dasharray:3 3}svg .marker text{fill:#555}
svg .limit line{stroke:#c62828;stroke-dasharray:8 3}svg .limit text{fill:#c62828}
.verdict{font-size:16px;padding:8px 12px;border:2px solid #999;margin:12px 0}
)css";

// Marks each chart data-drawn="1" once the browser laid out a non-empty
// drawing, and the body with how many did: the end-to-end test reads these.
constexpr const char* kScript = R"js(
window.addEventListener('load', function () {
  var charts = document.querySelectorAll('svg.chart'), drawn = 0;
  charts.forEach(function (svg) {
    var box = svg.getBBox(), lines = svg.querySelectorAll('polyline');
    var ok = box.width > 0 && box.height > 0 && lines.length > 0;
    lines.forEach(function (l) { var b = l.getBBox(); if (!(b.width > 0)) ok = false; });
    svg.setAttribute('data-drawn', ok ? '1' : '0');
    if (ok) drawn++;
  });
  document.body.setAttribute('data-charts', String(charts.length));
  document.body.setAttribute('data-drawn', String(drawn));
});
)js";

std::string E(std::string_view text) { return HtmlEscape(text); }

}  // namespace

std::string_view HtmlPageStyle() { return kStyle; }

namespace {

std::string StatusClass(const LayerStatus& l) {
  if (!l.checked) return "notchecked";
  if (!l.worst || *l.worst == Severity::kInfo) return "ok";
  return std::string(SeverityName(*l.worst));
}

std::string StatusText(const LayerStatus& l) {
  if (!l.checked) return "not checked";
  if (!l.worst) return "ok";
  if (*l.worst == Severity::kInfo) return "ok (notes)";
  return std::string(SeverityName(*l.worst));
}

const Finding* FindFinding(const std::vector<Finding>& findings, std::string_view id) {
  for (const Finding& f : findings) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

std::optional<double> NumberEvidence(const Finding& f, std::string_view name) {
  for (const Evidence& e : f.evidence) {
    if (e.name != name) continue;
    if (const double* d = std::get_if<double>(&e.value)) return *d;
    if (const int64_t* i = std::get_if<int64_t>(&e.value)) return static_cast<double>(*i);
  }
  return std::nullopt;
}

std::vector<ChartMarker> EpochMarkers(const Timeline& timeline) {
  std::map<int, double> start;
  for (const EpochEvent& e : timeline.epochs) {
    auto [it, fresh] = start.emplace(e.epoch, e.t);
    if (!fresh) it->second = std::min(it->second, e.t);
  }
  std::vector<ChartMarker> out;
  for (const auto& [epoch, t] : start) out.push_back({t, fmt::format("epoch {}", epoch)});
  return out;
}

ChartSeries SampleSeries(const Timeline& t, std::string name,
                         double (*value)(const TimelineSample&)) {
  ChartSeries s{std::move(name), {}, false, std::nullopt};
  for (const TimelineSample& sample : t.samples) s.points.emplace_back(sample.t, value(sample));
  return s;
}

// The limit line is drawn on the tree's chart when it is at most this many
// times the chart's highest value.
constexpr double kLimitOnTreeChart = 2.0;
// Processes drawn one by one on the per-process CPU chart; the rest are one
// "other processes" line.
constexpr size_t kMaxProcessSeries = 8;

// CPU per process, the ranks against the loader workers: ranks are the
// processes that reported as ranks through the hook (else the job's root),
// workers everything else. Ranks first, then the busiest workers.
Chart ProcessCpuChart(const Timeline& t) {
  Chart chart{"chart-process-cpu",
              "CPU per process: ranks and loader workers (100% = one CPU)",
              ChartUnit::kPercent,
              {},
              {},
              std::nullopt,
              std::nullopt};
  std::set<int> ranks;
  std::map<int, int> rank_of;
  for (const RankInfo& r : t.ranks) {
    ranks.insert(r.pid);
    rank_of[r.pid] = r.rank;
  }
  if (ranks.empty() && t.info.root_pid > 0) ranks.insert(t.info.root_pid);
  std::map<int, ChartSeries> by_pid;
  std::map<int, double> total;
  for (const ProcessPoint& p : t.processes) {
    ChartSeries& s = by_pid[p.pid];
    if (s.name.empty()) {
      bool rank = ranks.count(p.pid) > 0;
      auto r = rank_of.find(p.pid);
      s.name = rank ? (r != rank_of.end() ? fmt::format("rank {} (pid {})", r->second, p.pid)
                                          : fmt::format("{} (pid {})", p.comm, p.pid))
                    : fmt::format("worker {} (pid {})", p.comm, p.pid);
    }
    s.points.emplace_back(p.t, p.cpu_percent);
    total[p.pid] += p.cpu_percent;
  }
  std::vector<int> order;
  for (const auto& [pid, series] : by_pid) order.push_back(pid);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    bool ra = ranks.count(a) > 0, rb = ranks.count(b) > 0;
    if (ra != rb) return ra;
    return total[a] > total[b];
  });
  std::map<double, double> other;
  for (size_t i = 0; i < order.size(); ++i) {
    ChartSeries& s = by_pid[order[i]];
    if (i < kMaxProcessSeries) {
      chart.series.push_back(std::move(s));
    } else {
      for (const auto& [x, y] : s.points) other[x] += y;
    }
  }
  if (!other.empty()) {
    ChartSeries rest{"other processes", {}, false, std::nullopt};
    for (const auto& [x, y] : other) rest.points.emplace_back(x, y);
    chart.series.push_back(std::move(rest));
  }
  return chart;
}

void RenderFinding(const Finding& f, std::string& out) {
  std::string sev(SeverityName(f.severity));
  out += fmt::format(
      "<div class=\"finding {0}\" data-id=\"{1}\"><p><span class=\"sev {0}\">{0}</span> "
      "<code>{1}</code> {2}</p>\n",
      sev, E(f.id), E(f.summary));
  if (!f.evidence.empty()) {
    out += "<table class=\"evidence\"><tr><th>evidence</th><th>value</th></tr>\n";
    for (const Evidence& e : f.evidence) {
      out += fmt::format("<tr><td><code>{}</code></td><td>{}</td></tr>\n", E(e.name),
                         E(EvidenceText(e.value)));
    }
    out += "</table>\n";
  }
  if (f.impact) {
    out += fmt::format("<p>impact: {:.1f}% of wall time ({})</p>\n", f.impact->wall_fraction * 100,
                       E(f.impact->basis));
  }
  out += fmt::format("<p>next: <code>{}</code></p></div>\n", E(f.next));
}

}  // namespace

std::vector<Chart> TimelineCharts(const Timeline& t, const std::vector<Finding>& findings) {
  std::vector<Chart> charts;
  std::vector<ChartMarker> epochs = EpochMarkers(t);
  auto add = [&](Chart c) {
    bool any = false;
    for (const ChartSeries& s : c.series) any = any || !s.points.empty();
    if (!any) return;
    c.markers = epochs;
    charts.push_back(std::move(c));
  };
  if (!t.samples.empty()) {
    // The job's tree on its own axis: on the host's (24 GiB here) a 0.5 GiB
    // job is a flat line at zero.
    Chart memory{"chart-memory",
                 "Memory: the job's process tree (RSS summed over its processes)",
                 ChartUnit::kBytes,
                 {},
                 {},
                 std::nullopt,
                 std::nullopt};
    memory.series.push_back(SampleSeries(t, "tree RSS", [](const TimelineSample& s) {
      return static_cast<double>(s.tree_rss_bytes);
    }));
    double tree_peak = 0;
    for (const TimelineSample& s : t.samples) {
      tree_peak = std::max(tree_peak, static_cast<double>(s.tree_rss_bytes));
    }
    uint64_t limit = t.info.cgroup_limit_bytes.value_or(t.info.mem_total_bytes);
    // The leak projection: the fitted slope carried on from the last sample
    // to the projected OOM (or as long again as the run, if sooner).
    if (const Finding* leak = FindFinding(findings, "memory.rss_growth")) {
      std::optional<double> slope = NumberEvidence(*leak, "slope_bytes_per_s");
      if (slope && *slope > 0) {
        const TimelineSample& last = t.samples.back();
        double span = std::max(1.0, last.t - t.samples.front().t);
        double horizon = span;
        if (std::optional<double> oom = NumberEvidence(*leak, "projected_oom_s")) {
          horizon = std::clamp(*oom, 1.0, 4 * span);
        }
        double start = static_cast<double>(last.tree_rss_bytes);
        memory.series.push_back(
            ChartSeries{"leak projection",
                        {{last.t, start}, {last.t + horizon, start + *slope * horizon}},
                        true,
                        std::nullopt});
        tree_peak = std::max(tree_peak, start + *slope * horizon);
      }
    }
    // The limit joins the tree's chart only where it is near enough to read
    // against it (a job close to its cgroup limit, a leak heading there).
    if (limit > 0 && static_cast<double>(limit) <= kLimitOnTreeChart * tree_peak) {
      memory.limit = {static_cast<double>(limit),
                      t.info.cgroup_limit_bytes ? "cgroup limit" : "MemTotal"};
    }
    add(std::move(memory));

    Chart host{"chart-host-memory",
               "Memory: the host's available memory (the cgroup's, when limited)",
               ChartUnit::kBytes,
               {},
               {},
               std::nullopt,
               std::nullopt};
    host.series.push_back(SampleSeries(t, "host available", [](const TimelineSample& s) {
      return static_cast<double>(s.mem_available_bytes);
    }));
    if (limit > 0) {
      host.limit = {static_cast<double>(limit),
                    t.info.cgroup_limit_bytes ? "cgroup limit" : "MemTotal"};
    }
    add(std::move(host));

    Chart swap{"chart-swap", "Swap: used", ChartUnit::kBytes, {}, {}, std::nullopt, std::nullopt};
    swap.series.push_back(SampleSeries(t, "swap used", [](const TimelineSample& s) {
      return static_cast<double>(s.swap_used_bytes);
    }));
    add(std::move(swap));
    Chart swap_io{"chart-swap-traffic",
                  "Swap traffic: pages in and out per second",
                  ChartUnit::kPerSecond,
                  {},
                  {},
                  std::nullopt,
                  std::nullopt};
    swap_io.series.push_back(
        SampleSeries(t, "swap in", [](const TimelineSample& s) { return s.swap_in_pages_per_s; }));
    swap_io.series.push_back(SampleSeries(
        t, "swap out", [](const TimelineSample& s) { return s.swap_out_pages_per_s; }));
    add(std::move(swap_io));

    std::string disk = t.info.data_device.empty() ? "the data disk" : t.info.data_device;
    Chart util{"chart-disk-util",
               fmt::format("Disk {}: %util", disk),
               ChartUnit::kPercent,
               {},
               {},
               std::nullopt,
               100.0};
    util.series.push_back(
        SampleSeries(t, "%util", [](const TimelineSample& s) { return s.disk_util_percent; }));
    add(std::move(util));
    Chart await{"chart-disk-await",
                fmt::format("Disk {}: await", disk),
                ChartUnit::kMilliseconds,
                {},
                {},
                std::nullopt,
                std::nullopt};
    await.series.push_back(
        SampleSeries(t, "await", [](const TimelineSample& s) { return s.disk_await_ms; }));
    add(std::move(await));

    Chart cpu{"chart-cpu", "CPU: host busy and iowait", ChartUnit::kPercent, {}, {}, std::nullopt,
              100.0};
    cpu.series.push_back(
        SampleSeries(t, "host busy", [](const TimelineSample& s) { return s.cpu_busy_percent; }));
    cpu.series.push_back(
        SampleSeries(t, "iowait", [](const TimelineSample& s) { return s.cpu_iowait_percent; }));
    add(std::move(cpu));
    add(ProcessCpuChart(t));
  }
  // GPUs, when the run sampled any (NVML): utilization, and SM activity
  // where GPM measured it (utilization alone can mislead: code.util_misleading).
  std::map<unsigned, ChartSeries> gpu_util, gpu_sm;
  for (const GpuPoint& p : t.gpus) {
    ChartSeries& u = gpu_util[p.gpu.index];
    if (u.name.empty()) u.name = fmt::format("GPU {} utilization", p.gpu.index);
    u.points.emplace_back(p.t, p.gpu.utilization_gpu_percent);
    if (p.gpu.gpm && p.gpu.gpm->sm_active_percent) {
      ChartSeries& sm = gpu_sm[p.gpu.index];
      if (sm.name.empty()) sm.name = fmt::format("GPU {} SM active", p.gpu.index);
      sm.points.emplace_back(p.t, *p.gpu.gpm->sm_active_percent);
    }
  }
  if (!gpu_util.empty()) {
    Chart gpu{
        "chart-gpu", "GPU: utilization and SM activity", ChartUnit::kPercent, {}, {}, std::nullopt,
        100.0};
    for (auto& [index, s] : gpu_util) gpu.series.push_back(std::move(s));
    for (auto& [index, s] : gpu_sm) gpu.series.push_back(std::move(s));
    add(std::move(gpu));
  }
  // Per rank from the hook's steps; else the sampler's per-interval figures.
  // A job of several nodes: each rank named by its host, a node's ranks in
  // one colour (the lanes of a node read together).
  std::map<int, std::string> host_of;
  std::map<std::string, size_t> host_colour;
  for (const RankInfo& r : t.ranks) {
    if (r.hostname.empty()) continue;
    host_of.emplace(r.rank, r.hostname);
    host_colour.emplace(r.hostname, host_colour.size());
  }
  const bool several_hosts = host_colour.size() > 1;
  std::map<int, ChartSeries> step_time, wait;
  for (const StepEvent& s : t.steps) {
    ChartSeries& st = step_time[s.rank];
    ChartSeries& w = wait[s.rank];
    if (st.name.empty()) {
      auto host = host_of.find(s.rank);
      if (several_hosts && host != host_of.end()) {
        st.name = fmt::format("rank {} on {} step", s.rank, host->second);
        w.name = fmt::format("rank {} on {} data wait", s.rank, host->second);
        st.colour = w.colour = host_colour[host->second];
      } else {
        st.name = fmt::format("rank {} step", s.rank);
        w.name = fmt::format("rank {} data wait", s.rank);
      }
    }
    st.points.emplace_back(s.t, s.step_seconds);
    w.points.emplace_back(s.t, s.wait_seconds);
  }
  if (!step_time.empty()) {
    Chart steps{"chart-step-time", "Step time per rank", ChartUnit::kSeconds, {}, {},
                std::nullopt,      std::nullopt};
    Chart waits{"chart-data-wait",
                "Data wait per rank (time each step waited for its batch)",
                ChartUnit::kSeconds,
                {},
                {},
                std::nullopt,
                std::nullopt};
    for (auto& [rank, s] : step_time) steps.series.push_back(std::move(s));
    for (auto& [rank, s] : wait) waits.series.push_back(std::move(s));
    add(std::move(steps));
    add(std::move(waits));
  } else if (!t.samples.empty()) {
    bool any = std::any_of(t.samples.begin(), t.samples.end(),
                           [](const TimelineSample& s) { return s.steps_per_s > 0; });
    if (any) {
      Chart rate{"chart-steps", "Steps per second", ChartUnit::kPerSecond, {}, {},
                 std::nullopt,  std::nullopt};
      rate.series.push_back(
          SampleSeries(t, "steps/s", [](const TimelineSample& s) { return s.steps_per_s; }));
      add(std::move(rate));
    }
  }
  return charts;
}

std::string RenderHtmlReport(const HtmlReportInput& in) {
  static const Report kEmpty;
  const Report& report = in.report ? *in.report : kEmpty;
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\n";
  out += fmt::format("<title>stallscope {} on {}</title>\n<style>{}</style>\n</head>\n<body>\n",
                     E(in.command), E(in.host), kStyle);
  out += fmt::format(
      "<h1>stallscope {} on {}</h1>\n<p>{}{}</p>\n", E(in.command), E(in.host), E(in.time_utc),
      in.run_file.empty() ? "" : " &middot; run file <code>" + E(in.run_file) + "</code>");
  if (!in.facts.empty()) {
    out += "<table class=\"facts\">\n";
    for (const auto& [k, v] : in.facts) {
      out += fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", E(k), E(v));
    }
    out += "</table>\n";
  }
  // The verdict, then the layers in triage order.
  if (report.verdict.layer) {
    out += fmt::format(
        "<div class=\"verdict critical-verdict\">verdict: <b>{}</b> &mdash; <code>{}</code>: {}"
        "</div>\n",
        E(LayerName(*report.verdict.layer)), E(report.verdict.finding), E(report.verdict.summary));
  } else {
    out +=
        "<div class=\"verdict\">verdict: none &mdash; no critical finding in the layers "
        "checked</div>\n";
  }
  out +=
      "<h2>Layers, in triage order</h2>\n<table class=\"layers\"><tr><th>layer</th>"
      "<th>status</th><th>findings</th></tr>\n";
  for (const LayerStatus& l : report.layers) {
    std::string why;
    for (const auto& [layer, text] : in.not_checked_why) {
      if (layer == l.layer && !l.checked) why = " (" + text + ")";
    }
    size_t n = std::count_if(report.findings.begin(), report.findings.end(),
                             [&](const Finding& f) { return f.layer == l.layer; });
    out += fmt::format(
        "<tr data-layer=\"{0}\"><td>{0}</td><td><span class=\"sev {1}\">{2}</span>{3}</td>"
        "<td>{4}</td></tr>\n",
        E(LayerName(l.layer)), StatusClass(l), E(StatusText(l)), E(why), n);
  }
  out += "</table>\n";

  if (in.nodes && !in.nodes->empty()) {
    out +=
        "<h2>Nodes</h2>\n<table class=\"nodes\"><tr><th>node</th><th>host</th><th>ranks</th>"
        "<th>steps/s</th><th>data wait</th><th>sync wait</th><th>peak RSS</th><th>swap p/s</th>"
        "<th>data disk util / await</th><th>CPU</th><th>net rx while syncing</th><th>file</th>"
        "</tr>\n";
    auto share = [](const std::optional<double>& f) {
      return f ? fmt::format("{:.1f}%", 100 * *f) : std::string("-");
    };
    for (const NodeRow& n : *in.nodes) {
      out += fmt::format(
          "<tr data-host=\"{1}\"><td>{0}</td><td>{1}</td><td>{2}</td><td>{3}</td><td>{4}</td>"
          "<td>{5}</td><td>{6:.1f} MiB</td><td>{7:.0f}</td><td>{8}</td><td>{9:.0f}%</td>"
          "<td>{12}</td><td><code>{10}</code>{11}</td></tr>\n",
          n.node_rank ? std::to_string(*n.node_rank) : "-", E(n.host), E(RankRangeText(n.ranks)),
          n.steps_per_s ? fmt::format("{:.2f}", *n.steps_per_s) : "-", share(n.data_wait_fraction),
          share(n.sync_wait_fraction), static_cast<double>(n.peak_tree_rss_bytes) / (1 << 20),
          n.swap_pages_per_s,
          n.data_device.empty() ? "-"
                                : E(fmt::format("{} {:.0f}% / {:.1f} ms", n.data_device,
                                                n.disk_util_pct, n.disk_await_ms)),
          n.cpu_pct, E(n.path), n.truncated ? " (cut short)" : "", E(ReceiveText(n)));
    }
    out += "</table>\n";
  }

  out += in.sections_html;

  if (in.timeline) {
    std::vector<Chart> charts = TimelineCharts(*in.timeline, report.findings);
    out += fmt::format("<h2>Timeline</h2>\n<p>{} samples over {:.1f} s{}.</p>\n",
                       in.timeline->samples.size(),
                       in.timeline->info.duration_seconds.value_or(
                           in.timeline->samples.empty() ? 0 : in.timeline->samples.back().t),
                       in.timeline->epochs.empty() ? "" : "; dashed vertical lines mark epochs");
    if (charts.empty()) out += "<p>nothing to chart: the run has no samples.</p>\n";
    for (const Chart& c : charts) out += RenderSvgChart(c);
  }

  out += "<h2>Findings</h2>\n";
  if (report.findings.empty()) out += "<p>none.</p>\n";
  for (const Finding& f : report.findings) RenderFinding(f, out);
  if (!report.notes.empty()) {
    out += "<h2>Notes</h2>\n<ul class=\"notes\">\n";
    for (const std::string& n : report.notes) out += "<li>" + E(n) + "</li>\n";
    out += "</ul>\n";
  }

  out +=
      "<h2>Suspects and quick checks, per layer</h2>\n<table class=\"triage\"><tr>"
      "<th>layer</th><th>suspect</th><th>quick check</th><th>stallscope</th>"
      "<th>finding ids</th></tr>\n";
  for (const Suspect& s : TriageTable()) {
    out += fmt::format(
        "<tr><td>{}</td><td>{}</td><td><code>{}</code></td><td><code>{}</code></td>"
        "<td><code>{}</code></td></tr>\n",
        E(LayerName(s.layer)), E(s.suspect), E(s.quick_check), E(s.stallscope), E(s.findings));
  }
  out += "</table>\n";

  if (in.host_baseline || !in.snapshot_json.empty()) out += "<h2>Baseline</h2>\n";
  if (in.host_baseline) {
    out += "<table class=\"baseline\"><tr><th>metric</th><th>value</th><th>unit</th></tr>\n";
    for (const BaselineMetric& m : in.host_baseline->metrics) {
      out += fmt::format("<tr><td><code>{}</code></td><td>{:.6g}</td><td>{}</td></tr>\n", E(m.name),
                         m.value, E(m.unit));
    }
    out += "</table>\n";
  }
  if (!in.snapshot_json.empty()) {
    std::string pretty = in.snapshot_json;
    nlohmann::json j = nlohmann::json::parse(in.snapshot_json, nullptr, false);
    if (!j.is_discarded()) pretty = JsonText(j, 1);
    out += "<details><summary>the baseline snapshot (stallscope.snapshot/1)</summary><pre>" +
           E(pretty) + "</pre></details>\n";
  }
  out += fmt::format("<script>{}</script>\n</body></html>\n", kScript);
  return out;
}

}  // namespace stallscope
