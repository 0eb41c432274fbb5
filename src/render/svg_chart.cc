#include "render/svg_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <ctime>

#include "core/units.h"

namespace stallscope {
namespace {

constexpr double kWidth = 760, kHeight = 240;
constexpr double kLeft = 78, kRight = 16, kTop = 28, kBottom = 44;
// Marker labels are 11 px text: no glyph of the page's fonts is wider than
// 7 px at that size, so a label takes at most this much per character.
constexpr double kLabelCharWidth = 7, kLabelGap = 6;
constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                   "#9467bd", "#8c564b", "#e377c2", "#17becf"};

// 1, 2 or 5 times a power of ten, at least `raw`.
double NiceStep(double raw) {
  if (!(raw > 0) || !std::isfinite(raw)) return 1;
  double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * p >= raw) return m * p;
  }
  return 10 * p;
}

std::vector<std::pair<double, double>> Reduce(const std::vector<std::pair<double, double>>& in) {
  if (in.size() <= kMaxChartPoints) return in;
  std::vector<std::pair<double, double>> out;
  size_t per = (in.size() + kMaxChartPoints - 1) / kMaxChartPoints;
  for (size_t i = 0; i < in.size(); i += per) {
    size_t end = std::min(in.size(), i + per);
    double x = 0, y = 0;
    for (size_t k = i; k < end; ++k) {
      x += in[k].first;
      y += in[k].second;
    }
    out.emplace_back(x / static_cast<double>(end - i), y / static_cast<double>(end - i));
  }
  return out;
}

std::string FormatSeconds(double s) {
  if (s >= 3600) return fmt::format("{:.1f} h", s / 3600);
  if (s >= 120) return fmt::format("{:.0f} min", s / 60);
  return fmt::format("{:.0f} s", s);
}

// A date axis: the smallest round step whose labels keep `gap` px apart on
// a plot `plot_w` px wide, and the label format that step needs.
struct DateTicks {
  double step = 86400;
  const char* format = "%Y-%m-%d";
};

DateTicks DateTicksFor(double span, double plot_w) {
  static constexpr double kSteps[] = {
      1,    2,    5,     10,    15,    30,    60,     120,    300,     600,     900,     1800,
      3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800, 1209600, 2592000, 7776000, 31536000};
  for (double step : kSteps) {
    DateTicks t{step, step < 60 ? "%H:%M:%S" : step < 86400 ? "%m-%d %H:%M" : "%Y-%m-%d"};
    double label = kLabelCharWidth * static_cast<double>(std::strlen(t.format) + 2) + kLabelGap;
    if (span / step * label <= plot_w) return t;
  }
  return {std::max(span, 1.0), "%Y-%m-%d"};
}

std::string FormatUtc(double epoch_seconds, const char* format) {
  std::time_t t = static_cast<std::time_t>(std::floor(epoch_seconds));
  struct tm tm {};
  gmtime_r(&t, &tm);
  char text[40];
  size_t n = std::strftime(text, sizeof(text), format, &tm);
  return std::string(text, n);
}

}  // namespace

std::string HtmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string FormatChartValue(double value, ChartUnit unit) {
  switch (unit) {
    case ChartUnit::kBytes:
      return FormatBytes(value > 0 ? static_cast<uint64_t>(value) : 0);
    case ChartUnit::kPercent:
      return fmt::format("{:.3g}%", value);
    case ChartUnit::kMilliseconds:
      return fmt::format("{:.3g} ms", value);
    case ChartUnit::kSeconds:
      return value < 1 ? fmt::format("{:.3g} ms", value * 1000) : fmt::format("{:.3g} s", value);
    case ChartUnit::kPerSecond:
      return fmt::format("{:.3g}/s", value);
    case ChartUnit::kPlain:
      return fmt::format("{:.3g}", value);
  }
  return fmt::format("{:.3g}", value);
}

std::string RenderSvgChart(const Chart& chart) {
  double x_min = INFINITY, x_max = -INFINITY, y_max = 0;
  for (const ChartSeries& s : chart.series) {
    for (const auto& [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      x_min = std::min(x_min, x);
      x_max = std::max(x_max, x);
      y_max = std::max(y_max, y);
    }
  }
  if (!std::isfinite(x_min)) x_min = 0, x_max = 1;
  for (const ChartMarker& m : chart.markers) {
    x_min = std::min(x_min, m.x);
    x_max = std::max(x_max, m.x);
  }
  if (x_max <= x_min) x_max = x_min + 1;
  if (chart.limit) y_max = std::max(y_max, chart.limit->first);
  if (chart.y_max) y_max = std::max(y_max, *chart.y_max);
  double y_step = NiceStep(y_max / 4);
  if (y_max <= 0) y_max = y_step;
  double y_top = std::ceil(y_max / y_step) * y_step;
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  auto px = [&](double x) { return kLeft + (x - x_min) / (x_max - x_min) * plot_w; };
  auto py = [&](double y) { return kTop + plot_h - std::clamp(y / y_top, 0.0, 1.05) * plot_h; };

  const size_t legend_rows = std::max<size_t>(1, (chart.series.size() + 3) / 4);
  const double height = kHeight + 16 * static_cast<double>(legend_rows - 1);
  std::string out = fmt::format(
      "<svg id=\"{}\" class=\"chart\" viewBox=\"0 0 {} {}\" "
      "width=\"{}\" height=\"{}\" role=\"img\" aria-label=\"{}\">\n",
      HtmlEscape(chart.id), kWidth, height, kWidth, height, HtmlEscape(chart.title));
  out += fmt::format("<text class=\"title\" x=\"{}\" y=\"18\">{}</text>\n", kLeft,
                     HtmlEscape(chart.title));
  // Axes and grid.
  out += "<g class=\"axis\">\n";
  for (double y = 0; y <= y_top + y_step / 2; y += y_step) {
    out += fmt::format(
        "<line class=\"grid\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>"
        "<text class=\"ytick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n",
        kLeft, py(y), kLeft + plot_w, py(y), kLeft - 6, py(y) + 4,
        HtmlEscape(FormatChartValue(y, chart.unit)));
  }
  DateTicks dates = DateTicksFor(x_max - x_min, plot_w);
  double x_step = chart.x_dates ? dates.step : NiceStep((x_max - x_min) / 6);
  for (double x = std::ceil(x_min / x_step) * x_step; x <= x_max + 1e-9; x += x_step) {
    out += fmt::format(
        "<line class=\"xtick\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\"/>"
        "<text class=\"xlabel\" x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\">{4}</text>\n",
        px(x), kTop + plot_h, kTop + plot_h + 5, kTop + plot_h + 18,
        chart.x_dates ? FormatUtc(x, dates.format) : FormatSeconds(x));
  }
  out += fmt::format(
      "<line class=\"frame\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>"
      "<line class=\"frame\" x1=\"{0}\" y1=\"{2}\" x2=\"{3}\" y2=\"{2}\"/>\n",
      kLeft, kTop, kTop + plot_h, kLeft + plot_w);
  out += "</g>\n";
  // Epoch markers, every one a line; labelled only where the label clears
  // the one before it (a 40-epoch run would print an unreadable band), and
  // kept inside the plot. The markers come in time order.
  double label_free_from = -INFINITY;
  for (const ChartMarker& m : chart.markers) {
    const double x = px(m.x);
    const double width = kLabelCharWidth * static_cast<double>(m.label.size());
    double text_x = x + 3;
    if (text_x + width > kLeft + plot_w) text_x = x - 3 - width;  // the last ones: left of the line
    std::string text;
    if (text_x >= label_free_from && text_x >= kLeft) {
      text = fmt::format("<text x=\"{:.1f}\" y=\"{}\">{}</text>", text_x, kTop + 10,
                         HtmlEscape(m.label));
      label_free_from = text_x + width + kLabelGap;
    }
    out += fmt::format(
        "<g class=\"marker\"><title>{3}</title><line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" "
        "y2=\"{2}\"/>{4}</g>\n",
        x, kTop, kTop + plot_h, HtmlEscape(m.label), text);
  }
  if (chart.limit) {
    out += fmt::format(
        "<g class=\"limit\"><line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\"/>"
        "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text></g>\n",
        kLeft, py(chart.limit->first), kLeft + plot_w, kLeft + plot_w - 4,
        py(chart.limit->first) - 4,
        HtmlEscape(chart.limit->second + " " + FormatChartValue(chart.limit->first, chart.unit)));
  }
  // Series.
  size_t index = 0;
  for (const ChartSeries& s : chart.series) {
    const char* color = kColors[s.colour.value_or(index) % std::size(kColors)];
    std::vector<std::pair<double, double>> points = Reduce(s.points);
    std::string coords;
    size_t drawn_points = 0;
    for (const auto& [x, y] : points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      coords += fmt::format("{}{:.1f},{:.1f}", coords.empty() ? "" : " ", px(x), py(y));
      ++drawn_points;
    }
    out += fmt::format("<g class=\"series\" data-series=\"{}\">\n", HtmlEscape(s.name));
    // A line needs two points: a series seen once (a DataLoader worker that
    // lived one interval) is its dot below, not a polyline of no length.
    if (drawn_points >= 2) {
      out += fmt::format(
          "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.8\"{} points=\"{}\"/>\n", color,
          s.dashed ? " stroke-dasharray=\"6 4\"" : "", coords);
    }
    // Tooltips: a hit circle with a <title> per point, on short series only
    // (a few hundred circles are cheap; thousands make the page heavy).
    if (!s.dashed && points.size() <= 200) {
      for (const auto& [x, y] : points) {
        if (!std::isfinite(x) || !std::isfinite(y)) continue;
        out += fmt::format(
            "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2.2\" fill=\"{}\"><title>{}</title></circle>",
            px(x), py(y), color,
            HtmlEscape(fmt::format(
                "{} at {}: {}", s.name,
                chart.x_dates ? FormatUtc(x, "%Y-%m-%d %H:%M:%S UTC") : fmt::format("{:.1f} s", x),
                FormatChartValue(y, chart.unit))));
      }
      out += "\n";
    }
    out += "</g>\n";
    // Legend entry.
    double lx = kLeft + 8 + static_cast<double>(index % 4) * 170;
    double ly = kTop + plot_h + 36 + 16 * static_cast<double>(index / 4);
    out += fmt::format(
        "<g class=\"legend\"><line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" "
        "stroke=\"{3}\" stroke-width=\"3\"{4}/><text x=\"{5:.1f}\" y=\"{6:.1f}\">{7}</text></g>\n",
        lx, ly - 4, lx + 18, color, s.dashed ? " stroke-dasharray=\"6 4\"" : "", lx + 22, ly,
        HtmlEscape(s.name));
    ++index;
  }
  out += "</svg>\n";
  return out;
}

}  // namespace stallscope
