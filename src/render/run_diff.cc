// `stallscope diff`'s text and JSON (see run_diff.h).
#include "render/run_diff.h"

#include <fmt/format.h>

#include <cmath>

#include "core/units.h"
#include "core/version.h"
#include "render/html_report.h"
#include "render/svg_chart.h"
#include "render/time_breakdown.h"
#include "render/trace_diff.h"

namespace stallscope {
namespace {

using Json = nlohmann::ordered_json;

std::string Ms(double seconds) { return fmt::format("{:.1f} ms", seconds * 1e3); }

std::string SignedMs(double seconds) { return fmt::format("{:+.1f} ms", seconds * 1e3); }

// A change's value as the text shows it, by its unit.
std::string Value(const Json& v, const std::string& unit) {
  if (v.is_null()) return "(none)";
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  if (v.is_string()) return v.get<std::string>();
  if (!v.is_number()) return v.dump();
  const double x = v.get<double>();
  if (unit == "s/step") return Ms(x);
  if (unit == "bytes") return FormatBytes(static_cast<uint64_t>(std::max(0.0, x)));
  if (unit == "%") return fmt::format("{:.0f}%", x);
  if (unit.empty()) return v.is_number_integer() ? v.dump() : fmt::format("{:g}", x);
  return fmt::format("{:.1f} {}", x, unit);
}

std::string SideLine(const char* name, const DiffSide& s) {
  std::string files = fmt::format("{}", fmt::join(s.files, " "));
  std::string line = fmt::format("  {}: {}", name, files);
  if (!s.started.empty()) line += fmt::format(", started {}", s.started);
  if (s.step_s) {
    line += fmt::format(", {} steps, {} a step", s.steps, Ms(*s.step_s));
  } else {
    line += ", no steps";
  }
  if (s.steps_per_s) line += fmt::format(", {:.2f} steps/s", *s.steps_per_s);
  if (s.epoch_s) line += fmt::format(", epoch {:.1f} s", *s.epoch_s);
  return line + "\n";
}

Json SideJson(const DiffSide& s) {
  Json j;
  j["files"] = s.files;
  j["hosts"] = s.hosts;
  j["command"] = s.command;
  j["world_size"] = s.world_size;
  j["steps"] = s.steps;
  j["step_s"] = s.step_s ? Json(*s.step_s) : Json();
  j["steps_per_s"] = s.steps_per_s ? Json(*s.steps_per_s) : Json();
  j["epoch_s"] = s.epoch_s ? Json(*s.epoch_s) : Json();
  j["epochs_per_s"] = s.epoch_s && *s.epoch_s > 0 ? Json(1 / *s.epoch_s) : Json();
  j["started"] = s.started;
  return j;
}

// "B is 1.75x slower than A (139.7 ms a step against 79.9 ms)".
std::string Headline(const RunDiff& d) {
  if (!d.slowdown) return "step times not compared (a side has no steps)";
  if (!d.step_change_beyond_noise) {
    return fmt::format("no change in step time beyond run-to-run noise ({:.2f}x: {} against {})",
                       *d.slowdown, Ms(*d.b.step_s), Ms(*d.a.step_s));
  }
  if (*d.slowdown > 1) {
    return fmt::format("B is {:.2f}x slower than A ({} a step against {})", *d.slowdown,
                       Ms(*d.b.step_s), Ms(*d.a.step_s));
  }
  return fmt::format("B is {:.2f}x faster than A ({} a step against {})", 1 / *d.slowdown,
                     Ms(*d.b.step_s), Ms(*d.a.step_s));
}

std::string CauseMark(const DiffComponent& c) {
  if (!c.cause) return "";
  return c.share && *c.share < 0 ? "beyond noise, against the change" : "a cause";
}

std::string ShareText(const DiffComponent& c) {
  return c.share ? fmt::format("{:.0f}%", 100 * *c.share) : "-";
}

// One line a part: A -> B, the change, its share; `width`: the names' column.
std::string ComponentLines(const std::vector<DiffComponent>& parts, int width) {
  std::string out;
  for (const DiffComponent& c : parts) {
    out += fmt::format("  {:<{}} {:>10} -> {:>10}  {:>10}  {:>6}{}\n", c.what, width, Ms(c.a_s),
                       Ms(c.b_s), SignedMs(c.change_s()), ShareText(c),
                       c.cause ? "  <- " + CauseMark(c) : "");
  }
  return out;
}

Json ComponentsJson(const std::vector<DiffComponent>& parts) {
  Json out = Json::array();
  for (const DiffComponent& c : parts) {
    out.push_back({{"what", c.what},
                   {"a", c.a_s},
                   {"b", c.b_s},
                   {"unit", "s/step"},
                   {"change", c.change_s()},
                   {"share_of_slowdown", c.share ? Json(*c.share) : Json()},
                   {"cause", c.cause}});
  }
  return out;
}

// A table of the parts under `title`; "" without parts.
std::string ComponentsHtml(std::string_view title, const std::vector<DiffComponent>& parts) {
  if (parts.empty()) return "";
  std::string out = fmt::format(
      "<h2>{}</h2>\n<table class=\"components\"><tr><th>part</th><th>A</th>"
      "<th>B</th><th>change</th><th>share of the change</th><th></th></tr>\n",
      HtmlEscape(title));
  for (const DiffComponent& c : parts) {
    out +=
        fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                    HtmlEscape(c.what), Ms(c.a_s), Ms(c.b_s), SignedMs(c.change_s()), ShareText(c),
                    HtmlEscape(CauseMark(c)));
  }
  return out + "</table>\n";
}

}  // namespace

std::string RenderDiffText(const RunDiff& d) {
  std::string out = "stallscope diff: " + Headline(d) + "\n";
  out += SideLine("A", d.a);
  out += SideLine("B", d.b);
  out += fmt::format("  {}; {}; {}\n", d.same_command ? "same command" : "the command differs",
                     d.same_hosts ? "same hosts" : "the hosts differ",
                     d.same_world_size
                         ? fmt::format("world size {} on both", d.a.world_size)
                         : fmt::format("world size {} -> {}", d.a.world_size, d.b.world_size));
  if (d.ranks.size() > 1) {
    out += "  by rank:";
    for (const DiffRank& r : d.ranks) out += fmt::format(" {} {:.2f}x", r.rank, r.slowdown);
    out += "\n";
  }
  if (!d.components.empty()) {
    out += "\nthe step, a step (A -> B, the change, its share of the change in step time):\n";
    out += ComponentLines(d.components, 10);
  }
  if (!d.gpu_components.empty()) {
    out += fmt::format(
        "\nthe step on the GPU, from the profiler traces ({} and {} rank(s); the same change, "
        "seen from the GPU):\n",
        d.gpu_a->ranks, d.gpu_b->ranks);
    out += ComponentLines(d.gpu_components, 28);
  }
  if (!d.gpu_top_ops.empty()) {
    out +=
        "\nthe ops and kernels that changed most, by the time they explain (trace diff of the "
        "first rank's first profiled step, B - A):\n";
    for (const TraceOpDiff& op : d.gpu_top_ops) out += "  " + TraceOpDiffLine(op) + "\n";
  }
  if (std::string time = RenderTimeChanges(d.time_a, d.time_b); !time.empty()) {
    out += "\n" + time;
  }
  bool others = false;
  for (const DiffChange& c : d.changes) {
    if (c.share) continue;
    if (!others) out += "\nwhat else changed (A -> B):\n";
    others = true;
    out += fmt::format("  {:<28} {} -> {}\n", c.what, Value(c.a, c.unit), Value(c.b, c.unit));
  }
  if (!others) out += "\nnothing else changed that the run files show\n";
  if (!d.notes.empty()) {
    out += "\nnotes:\n";
    for (const std::string& n : d.notes) out += "  " + n + "\n";
  }
  return out;
}

Json DiffJson(const RunDiff& d) {
  Json j;
  j["schema"] = "stallscope.diff/1";
  j["version"] = Version();
  j["a"] = SideJson(d.a);
  j["b"] = SideJson(d.b);
  j["slowdown"] = d.slowdown ? Json(*d.slowdown) : Json();
  j["step_change_beyond_noise"] = d.step_change_beyond_noise;
  j["same_command"] = d.same_command;
  j["same_hosts"] = d.same_hosts;
  j["same_world_size"] = d.same_world_size;
  Json ranks = Json::array();
  for (const DiffRank& r : d.ranks) {
    ranks.push_back({{"rank", r.rank},
                     {"a_step_s", r.a_step_s},
                     {"b_step_s", r.b_step_s},
                     {"slowdown", r.slowdown}});
  }
  j["ranks"] = ranks;
  j["components"] = ComponentsJson(d.components);
  if (d.gpu_a && d.gpu_b) {
    j["gpu_components"] = ComponentsJson(d.gpu_components);
    j["gpu_ranks"] = {{"a", d.gpu_a->ranks}, {"b", d.gpu_b->ranks}};
    j["gpu_steps"] = {{"a", d.gpu_a->steps}, {"b", d.gpu_b->steps}};
  }
  if (!d.gpu_top_ops.empty()) {
    Json ops = Json::array();
    for (const TraceOpDiff& op : d.gpu_top_ops) {
      ops.push_back({{"name", op.name},
                     {"device", op.gpu ? "gpu" : "cpu"},
                     {"change", TraceOpChangeName(op.change)},
                     {"a_count", op.control_count},
                     {"b_count", op.test_count},
                     {"a_us", op.control_us},
                     {"b_us", op.test_us},
                     {"diff_us", op.diff_us()}});
    }
    j["gpu_top_ops"] = ops;
  }
  Json changes = Json::array();
  for (const DiffChange& c : d.changes) {
    Json e;
    e["what"] = c.what;
    e["a"] = c.a;
    e["b"] = c.b;
    if (!c.unit.empty()) e["unit"] = c.unit;
    e["share_of_slowdown"] = c.share ? Json(*c.share) : Json();
    changes.push_back(e);
  }
  j["changes"] = changes;
  j["time_breakdown"] = TimeChangesToJson(d.time_a, d.time_b);
  j["notes"] = d.notes;
  return j;
}

std::string RenderDiffHtml(const RunDiff& d) {
  auto e = [](std::string_view text) { return HtmlEscape(text); };
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<title>stallscope diff</title>\n<style>";
  out += HtmlPageStyle();
  out += "</style>\n</head>\n<body>\n<h1>stallscope diff</h1>\n";
  out += fmt::format("<div class=\"verdict\">{}</div>\n", e(Headline(d)));
  out +=
      "<table class=\"sides\"><tr><th></th><th>files</th><th>started</th><th>steps</th>"
      "<th>a step</th><th>steps/s</th><th>epoch</th><th>world size</th></tr>\n";
  for (const auto& [name, s] : {std::pair{"A", &d.a}, std::pair{"B", &d.b}}) {
    out += fmt::format(
        "<tr><th>{}</th><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td><td>{}</td></tr>\n",
        name, e(fmt::format("{}", fmt::join(s->files, " "))), e(s->started), s->steps,
        s->step_s ? Ms(*s->step_s) : "-",
        s->steps_per_s ? fmt::format("{:.2f}", *s->steps_per_s) : "-",
        s->epoch_s ? fmt::format("{:.1f} s", *s->epoch_s) : "-", s->world_size);
  }
  out += "</table>\n";
  out += fmt::format("<p>{}; {}; {}</p>\n", d.same_command ? "same command" : "the command differs",
                     d.same_hosts ? "same hosts" : "the hosts differ",
                     d.same_world_size ? "same world size" : "the world size differs");
  auto chart = [&](const char* id, const char* title, auto series_of) {
    Chart c;
    c.id = id;
    c.title = title;
    c.unit = ChartUnit::kMilliseconds;
    for (const auto& [name, s] : {std::pair{"A", &d.a}, std::pair{"B", &d.b}}) {
      ChartSeries series{name, {}, false, std::nullopt};
      for (const auto& [t, v] : series_of(*s)) series.points.emplace_back(t, v * 1e3);
      if (!series.points.empty()) c.series.push_back(std::move(series));
    }
    if (!c.series.empty()) out += RenderSvgChart(c);
  };
  chart("chart-step", "step time of the lowest rank, ms (x: seconds since its first counted step)",
        [](const DiffSide& s) { return s.step_series; });
  chart("chart-data-wait", "data wait of the lowest rank, ms",
        [](const DiffSide& s) { return s.data_wait_series; });
  out += ComponentsHtml("The step, a step", d.components);
  out += ComponentsHtml("The step on the GPU (profiler traces)", d.gpu_components);
  if (!d.gpu_top_ops.empty()) {
    out +=
        "<h2>The ops and kernels that changed most (trace diff, B - A)</h2>\n"
        "<table class=\"changes\"><tr><th>op</th><th>A</th><th>B</th><th>change</th></tr>\n";
    for (const TraceOpDiff& op : d.gpu_top_ops) {
      out += fmt::format(
          "<tr><td><code>{}</code> ({})</td><td>{} x {:.1f} µs</td><td>{} x {:.1f} µs</td>"
          "<td>{:+.1f} µs</td></tr>\n",
          e(op.name), op.gpu ? "kernel" : "op", op.control_count, op.control_us, op.test_count,
          op.test_us, op.diff_us());
    }
    out += "</table>\n";
  }
  out += "<h2>What else changed</h2>\n";
  bool others = false;
  for (const DiffChange& c : d.changes) {
    if (c.share) continue;
    if (!others) out += "<table class=\"changes\"><tr><th>what</th><th>A</th><th>B</th></tr>\n";
    others = true;
    out += fmt::format("<tr><td><code>{}</code></td><td>{}</td><td>{}</td></tr>\n", e(c.what),
                       e(Value(c.a, c.unit)), e(Value(c.b, c.unit)));
  }
  out += others ? "</table>\n" : "<p>nothing else that the run files show</p>\n";
  if (!d.notes.empty()) {
    out += "<h2>Notes</h2>\n<ul>\n";
    for (const std::string& n : d.notes) out += "<li>" + e(n) + "</li>\n";
    out += "</ul>\n";
  }
  return out + "</body>\n</html>\n";
}

}  // namespace stallscope
