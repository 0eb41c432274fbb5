// The HTML report of `report RUN.db --html F` and `doctor --html F`: one
// self-contained page, readable offline. Charts of the run's timeline as
// inline SVG (render/svg_chart.h): memory and tree RSS with the leak
// projection, swap, disk %util and await, CPU, step time and data wait per
// rank, epochs marked on every chart; the layers, the findings with their
// evidence and next checks; the suspects-and-quick-checks table; the
// baseline. No request leaves the page: no external URL, font, script or
// style; a few lines of inline JavaScript only mark each chart as drawn
// (data-drawn) once the browser has laid it out, which the end-to-end test
// reads from headless Chromium.
//
// Pure: data in, a string out; every outside text is HTML-escaped. Thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analyze/run/analysis.h"
#include "render/svg_chart.h"
#include "sample/finding.h"
#include "sample/timeline.h"

namespace stallscope {

struct HostBaseline;

struct HtmlReportInput {
  std::string command;  // "report", "doctor"
  std::string host;
  std::string time_utc;
  const Report* report = nullptr;  // required
  // Why a layer was not checked, shown beside its status.
  std::vector<std::pair<Layer, std::string>> not_checked_why;
  const Timeline* timeline = nullptr;  // charts when given
  std::string run_file;                // named in the header when given
  // Facts shown first ("command", "exit"), in order.
  std::vector<std::pair<std::string, std::string>> facts;
  const HostBaseline* host_baseline = nullptr;  // doctor's figures of this host
  std::string snapshot_json;                    // the baseline snapshot, shown folded; "" for none
  // A job of several nodes: one row per node, shown after the layers.
  const std::vector<NodeRow>* nodes = nullptr;
  // Sections of the caller's, shown after the layers and nodes (HTML, its
  // text escaped by the caller): `report`'s time breakdown.
  std::string sections_html;
};

// The charts of a timeline, in page order. Charts with nothing to draw (no
// steps from the hook, no samples) are left out. `findings` supply the leak
// projection (memory.rss_growth's slope).
std::vector<Chart> TimelineCharts(const Timeline& timeline, const std::vector<Finding>& findings);

std::string RenderHtmlReport(const HtmlReportInput& input);

// The pages' one style sheet (also `diff --html`'s, render/run_diff.h).
std::string_view HtmlPageStyle();

}  // namespace stallscope
