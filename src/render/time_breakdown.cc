// The time breakdown's text, HTML and JSON (see time_breakdown.h).
#include "render/time_breakdown.h"

#include <fmt/format.h>

#include <algorithm>

#include "render/svg_chart.h"

namespace stallscope {
namespace {

constexpr size_t kRanksShown = 4;
// Rows under this in every rank shown are left out of the text and HTML
// (the microseconds between two loops): JSON keeps every row.
constexpr double kRowShownSeconds = 0.005;

std::vector<const RankTime*> Shown(const TimeBreakdown& time) {
  std::vector<const RankTime*> shown;
  for (size_t i = 0; i < time.ranks.size() && i < kRanksShown; ++i) {
    shown.push_back(&time.ranks[i]);
  }
  return shown;
}

bool RowShown(const std::vector<const RankTime*>& ranks, TimeRow row) {
  return std::any_of(ranks.begin(), ranks.end(),
                     [&](const RankTime* r) { return r->at(row) >= kRowShownSeconds; });
}

double Share(double seconds, double wall) { return wall > 0 ? seconds / wall : 0.0; }

std::string Cell(double seconds, double wall) {
  return fmt::format("{:>9.1f} s {:>4.0f}%", seconds, 100 * Share(seconds, wall));
}

}  // namespace

std::string RenderTimeTable(const TimeBreakdown& time) {
  if (time.ranks.empty()) return "";
  const std::vector<const RankTime*> shown = Shown(time);
  std::string out = fmt::format("{:<24}", "where the time went");
  for (const RankTime* r : shown) out += fmt::format("{:>17}", fmt::format("rank {}", r->rank));
  out += "\n";
  for (const TimeRowName& row : kTimeRows) {
    if (!RowShown(shown, row.row)) continue;
    out += fmt::format("  {:<22}", row.text);
    for (const RankTime* r : shown) out += Cell(r->at(row.row), r->wall_s);
    out += "\n";
  }
  out += fmt::format("  {:<22}", "wall time");
  for (const RankTime* r : shown) out += Cell(r->wall_s, r->wall_s);
  out += "\n";
  if (time.ranks.size() > shown.size()) {
    out += fmt::format("  ({} more ranks: `report --json`, time_breakdown)\n",
                       time.ranks.size() - shown.size());
  }
  for (const std::string& note : time.notes) out += "  note: " + note + "\n";
  return out;
}

std::string RenderTimeHtml(const TimeBreakdown& time) {
  if (time.ranks.empty()) return "";
  const std::vector<const RankTime*> shown = Shown(time);
  std::string out = "<h2>Where the time went</h2>\n<table class=\"time\"><tr><th>row</th>";
  for (const RankTime* r : shown) out += fmt::format("<th>rank {}</th>", r->rank);
  out += "</tr>\n";
  auto row_html = [&](std::string_view name, auto seconds_of) {
    out += fmt::format("<tr><td>{}</td>", HtmlEscape(name));
    for (const RankTime* r : shown) {
      const double s = seconds_of(*r);
      out += fmt::format("<td>{:.1f} s ({:.0f}%)</td>", s, 100 * Share(s, r->wall_s));
    }
    out += "</tr>\n";
  };
  for (const TimeRowName& row : kTimeRows) {
    if (!RowShown(shown, row.row)) continue;
    row_html(row.text, [&](const RankTime& r) { return r.at(row.row); });
  }
  row_html("wall time", [](const RankTime& r) { return r.wall_s; });
  out += "</table>\n";
  for (const std::string& note : time.notes) out += "<p>" + HtmlEscape(note) + "</p>\n";
  return out;
}

nlohmann::ordered_json TimeBreakdownToJson(const TimeBreakdown& time) {
  nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
  for (const RankTime& r : time.ranks) {
    nlohmann::ordered_json seconds = nlohmann::ordered_json::object();
    for (const TimeRowName& row : kTimeRows) seconds[std::string(row.key)] = r.at(row.row);
    ranks.push_back({{"rank", r.rank},
                     {"host", r.host},
                     {"wall_seconds", r.wall_s},
                     {"steps", r.steps},
                     {"checkpoints", r.checkpoints},
                     {"checkpoints_by_writes", r.checkpoints_by_writes},
                     {"host_sync_calls", r.host_sync_calls},
                     {"eval_loops", r.eval_loops},
                     {"seconds", std::move(seconds)}});
  }
  return {{"ranks", std::move(ranks)}, {"notes", time.notes}};
}

std::string RenderTimeChanges(const TimeBreakdown& before, const TimeBreakdown& after) {
  if (before.ranks.empty() || after.ranks.empty()) return "";
  const RankTime& a = before.ranks.front();
  const RankTime& b = after.ranks.front();
  std::string out =
      fmt::format("{:<24}{:>17}{:>17}{:>11}\n",
                  fmt::format("where the time went (rank {})", b.rank), "A", "B", "change");
  for (const TimeRowChange& c : CompareTime(a, b)) {
    if (c.before_s < kRowShownSeconds && c.after_s < kRowShownSeconds) continue;
    out += fmt::format("  {:<22}{}{}{:>+9.1f} s\n", NameOf(c.row).text, Cell(c.before_s, a.wall_s),
                       Cell(c.after_s, b.wall_s), c.after_s - c.before_s);
  }
  out += fmt::format("  {:<22}{}{}{:>+9.1f} s\n", "wall time", Cell(a.wall_s, a.wall_s),
                     Cell(b.wall_s, b.wall_s), b.wall_s - a.wall_s);
  return out;
}

nlohmann::ordered_json TimeChangesToJson(const TimeBreakdown& before, const TimeBreakdown& after) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  if (before.ranks.empty() || after.ranks.empty()) return rows;
  for (const TimeRowChange& c : CompareTime(before.ranks.front(), after.ranks.front())) {
    rows.push_back({{"row", std::string(NameOf(c.row).key)},
                    {"a_seconds", c.before_s},
                    {"b_seconds", c.after_s},
                    {"change_seconds", c.after_s - c.before_s}});
  }
  return rows;
}

}  // namespace stallscope
