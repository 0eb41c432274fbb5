// Line charts as inline SVG, drawn by our own code so that the HTML report
// needs no charting library and no request leaves the page: axes with a few
// round ticks, one polyline per series (dashed for projections), vertical
// markers (epochs), an optional horizontal limit line, a legend, and a
// <title> on every point for tooltips without JavaScript.
//
// Pure: a Chart in, SVG text out. Every text it writes is HTML-escaped.
// Thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace stallscope {

enum class ChartUnit { kBytes, kPercent, kMilliseconds, kSeconds, kPerSecond, kPlain };

struct ChartSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (seconds since start, value), by x
  bool dashed = false;                            // a projection, not a measurement
  std::optional<size_t> colour;  // a palette index shared by a group (a node's ranks); else its own
};

struct ChartMarker {
  double x = 0;
  std::string label;  // "epoch 2"
};

struct Chart {
  std::string id;  // unique in the page: "chart-memory"
  std::string title;
  ChartUnit unit = ChartUnit::kPlain;
  std::vector<ChartSeries> series;
  std::vector<ChartMarker> markers;
  std::optional<std::pair<double, std::string>> limit;  // a horizontal line: value, label
  std::optional<double> y_max;                          // e.g. 100 for percentages
  // x is seconds since the epoch: the axis and tooltips in UTC dates, ticks
  // spaced so that their labels never touch.
  bool x_dates = false;
};

// At most this many points per series are drawn; longer series are reduced
// by averaging neighbours (a 10 h run at 1 s is 36000 samples).
inline constexpr size_t kMaxChartPoints = 600;

std::string RenderSvgChart(const Chart& chart);

// &, <, >, " and ' as entities: safe in text and in quoted attributes.
std::string HtmlEscape(std::string_view text);

// A value as the axis and tooltips print it in `unit`.
std::string FormatChartValue(double value, ChartUnit unit);

}  // namespace stallscope
