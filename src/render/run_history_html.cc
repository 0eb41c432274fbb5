// `stallscope history --html` (render/run_history_html.h).
#include "render/run_history_html.h"

#include <fmt/format.h>

#include <cmath>
#include <functional>

#include "render/html_report.h"
#include "render/run_history.h"
#include "render/svg_chart.h"

namespace stallscope {
namespace {

std::string E(std::string_view text) { return HtmlEscape(text); }

std::string Ms(const std::optional<double>& s) {
  return s ? fmt::format("{:.1f} ms", *s * 1e3) : std::string("-");
}

// The change at run N, as its marker and its line say it.
std::string ChangeLabel(const HistoryJob& job, const HistoryChange& c, HistoryMetric metric) {
  return fmt::format("run {}: {} {:+.0f}%", job.runs[c.after].index, HistoryMetricName(metric),
                     (c.ratio - 1) * 100);
}

// One figure over the runs (the complete ones, as the change points see
// them), every change marked at its first run.
std::string FigureChart(
    const HistoryJob& job, size_t job_no, HistoryMetric metric, const std::string& id,
    const std::string& title, ChartUnit unit,
    const std::vector<
        std::pair<std::string, std::function<std::optional<double>(const HistoryRun&)>>>& figures) {
  Chart chart;
  chart.id = fmt::format("chart-job{}-{}", job_no, id);
  chart.title = title;
  chart.unit = unit;
  chart.x_dates = true;
  for (const auto& [name, value_of] : figures) {
    ChartSeries s{name, {}, false, std::nullopt};
    for (const HistoryRun& r : job.runs) {
      std::optional<double> v = value_of(r);
      if (r.complete && v) s.points.emplace_back(r.start_s, *v);
    }
    if (!s.points.empty()) chart.series.push_back(std::move(s));
  }
  if (chart.series.empty()) return "";
  // The axis shows times alone when the runs span less than a day: the
  // title says which day, and that times are UTC.
  const double first = job.runs.front().start_s, last = job.runs.back().start_s;
  if (last - first < 86400) {
    std::string day = job.runs.front().started_utc.substr(0, 10);
    chart.title += ", " + (day.empty() ? std::string("UTC") : day + " UTC");
  } else {
    chart.title += ", dates UTC";
  }
  for (const HistoryChange& c : job.changes) {
    chart.markers.push_back({job.runs[c.after].start_s, ChangeLabel(job, c, metric)});
  }
  return RenderSvgChart(chart);
}

std::string JobCharts(const HistoryJob& job, size_t job_no, HistoryMetric metric) {
  auto ms = [](std::optional<double> HistoryRun::*field) {
    return [field](const HistoryRun& r) -> std::optional<double> {
      if (!(r.*field)) return std::nullopt;
      return *(r.*field) * 1e3;
    };
  };
  std::string out;
  out += FigureChart(
      job, job_no, metric, "step", "step time, ms (median and p90 of each run)",
      ChartUnit::kMilliseconds,
      {{"median", ms(&HistoryRun::step_median_s)}, {"p90", ms(&HistoryRun::step_p90_s)}});
  out += FigureChart(job, job_no, metric, "data-wait", "data wait, ms a step (median of each run)",
                     ChartUnit::kMilliseconds, {{"data wait", ms(&HistoryRun::data_wait_s)}});
  out += FigureChart(job, job_no, metric, "sync-wait", "sync wait, ms a step (median of each run)",
                     ChartUnit::kMilliseconds, {{"sync wait", ms(&HistoryRun::sync_wait_s)}});
  out += FigureChart(job, job_no, metric, "steps-per-s", "steps/s (lowest rank)",
                     ChartUnit::kPerSecond,
                     {{"steps/s", [](const HistoryRun& r) { return r.steps_per_s; }}});
  return out;
}

std::string RunTable(const HistoryJob& job) {
  std::string out =
      "<table class=\"runs\"><tr><th>run</th><th>started (UTC)</th><th>step median</th>"
      "<th>step p90</th><th>data wait</th><th>sync wait</th><th>steps/s</th><th>hosts</th>"
      "<th>data device</th><th>loader</th><th>findings</th><th>files</th><th></th></tr>\n";
  for (const HistoryRun& r : job.runs) {
    std::string mark = r.complete ? "" : "incomplete";
    if (r.outlier) mark += mark.empty() ? "outlier" : ", outlier";
    out += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td><td>{}</td></tr>\n",
        r.index, E(r.started_utc), Ms(r.step_median_s), Ms(r.step_p90_s), Ms(r.data_wait_s),
        Ms(r.sync_wait_s), r.steps_per_s ? fmt::format("{:.2f}", *r.steps_per_s) : "-",
        E(fmt::format("{}", fmt::join(r.hosts, " "))), E(r.data_device),
        E(fmt::format("{}", fmt::join(r.loaders, "; "))),
        E(fmt::format("{}", fmt::join(r.findings, " "))),
        E(fmt::format("{}", fmt::join(r.files, " "))), mark);
  }
  return out + "</table>\n";
}

std::string JobSection(const HistoryJob& job, size_t job_no, HistoryMetric metric) {
  std::string out = fmt::format(
      "<h2>job {}: <code>{}</code></h2>\n<p>world size {}, {} runs; run-to-run noise of the {} "
      "series: {:.4g}</p>\n",
      job_no,
      E(job.identity.by == "command" || job.identity.name.empty() ? job.command
                                                                  : job.identity.name),
      job.world_size, job.runs.size(), HistoryMetricName(metric), job.noise);
  if (job.changes.empty()) {
    out += "<div class=\"verdict\">no change beyond the run-to-run noise</div>\n";
  } else {
    const HistoryChange* most = &job.changes.front();
    for (const HistoryChange& c : job.changes) {
      if (std::abs(std::log(std::max(c.ratio, 1e-9))) >
          std::abs(std::log(std::max(most->ratio, 1e-9)))) {
        most = &c;
      }
    }
    out += fmt::format(
        "<div class=\"verdict\">the change at run {} matters most ({:.2f}x): {}</div>\n",
        job.runs[most->after].index, most->ratio, E(ChangeCauses(*most)));
    out += "<ul class=\"changes\">\n";
    for (const HistoryChange& c : job.changes) {
      const HistoryRun& r = job.runs[c.after];
      out +=
          fmt::format("<li><b>{}</b> ({}): {} {:.4g} -&gt; {:.4g}; {}</li>\n",
                      E(ChangeLabel(job, c, metric)), E(r.started_utc), HistoryMetricName(metric),
                      c.before_value, c.after_value, E(ChangeCauses(c)));
    }
    out += "</ul>\n";
  }
  out += JobCharts(job, job_no, metric);
  out += RunTable(job);
  return out;
}

}  // namespace

std::string RenderHistoryHtml(const std::vector<HistoryJob>& jobs, HistoryMetric metric,
                              const std::vector<std::string>& notes) {
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<title>stallscope history</title>\n<style>";
  out += HtmlPageStyle();
  out += "</style>\n</head>\n<body>\n<h1>stallscope history</h1>\n";
  for (size_t i = 0; i < jobs.size(); ++i) out += JobSection(jobs[i], i + 1, metric);
  if (!notes.empty()) {
    out += "<h2>Notes</h2>\n<ul>\n";
    for (const std::string& n : notes) out += "<li>" + E(n) + "</li>\n";
    out += "</ul>\n";
  }
  return out + "</body>\n</html>\n";
}

}  // namespace stallscope
