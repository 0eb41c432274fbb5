// `stallscope diff`'s text and JSON (see run_diff.h).
#include "render/run_diff.h"

#include <fmt/format.h>

#include <cmath>

#include "core/units.h"

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

}  // namespace

std::string RenderDiffText(const RunDiff& d) {
  std::string out = "stallscope diff: ";
  if (!d.slowdown) {
    out += "step times not compared (a side has no steps)\n";
  } else if (!d.step_change_beyond_noise) {
    out += fmt::format("no change in step time beyond run-to-run noise ({:.2f}x: {} against {})\n",
                       *d.slowdown, Ms(*d.b.step_s), Ms(*d.a.step_s));
  } else if (*d.slowdown > 1) {
    out += fmt::format("B is {:.2f}x slower than A ({} a step against {})\n", *d.slowdown,
                       Ms(*d.b.step_s), Ms(*d.a.step_s));
  } else {
    out += fmt::format("B is {:.2f}x faster than A ({} a step against {})\n", 1 / *d.slowdown,
                       Ms(*d.b.step_s), Ms(*d.a.step_s));
  }
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
    for (const DiffComponent& c : d.components) {
      out += fmt::format("  {:<10} {:>10} -> {:>10}  {:>10}  {:>6}{}\n", c.what, Ms(c.a_s),
                         Ms(c.b_s), SignedMs(c.change_s()),
                         c.share ? fmt::format("{:.0f}%", 100 * *c.share) : "-",
                         !c.cause                  ? ""
                         : c.share && *c.share < 0 ? "  <- beyond noise, against the change"
                                                   : "  <- a cause");
    }
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
  Json components = Json::array();
  for (const DiffComponent& c : d.components) {
    components.push_back({{"what", c.what},
                          {"a", c.a_s},
                          {"b", c.b_s},
                          {"unit", "s/step"},
                          {"change", c.change_s()},
                          {"share_of_slowdown", c.share ? Json(*c.share) : Json()},
                          {"cause", c.cause}});
  }
  j["components"] = components;
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
  j["notes"] = d.notes;
  return j;
}

}  // namespace stallscope
