// The trace diff as text and JSON. Names over 70 characters are cut in the
// text (JSON keeps them whole).
#include "render/trace_diff.h"

#include <fmt/format.h>

#include <cmath>

#include "core/version.h"

namespace stallscope {
namespace {

using Json = nlohmann::ordered_json;

std::string Us(double us) {
  if (std::fabs(us) >= 1e6) return fmt::format("{:.2f} s", us / 1e6);
  if (std::fabs(us) >= 1e3) return fmt::format("{:.1f} ms", us / 1e3);
  return fmt::format("{:.1f} µs", us);
}

std::string Short(const std::string& name, size_t most = 70) {
  return name.size() > most ? name.substr(0, most - 1) + "~" : name;
}

std::string StepsText(const TraceDiffSide& s) {
  if (s.steps.empty()) return "whole trace";
  if (s.steps.size() == 1) return fmt::format("ProfilerStep#{}", s.steps.front());
  return fmt::format("ProfilerStep#{} to #{}", s.steps.front(), s.steps.back());
}

Json TemporalJson(const std::optional<TemporalBreakdown>& t) {
  if (!t) return nullptr;
  return {{"idle_us", t->idle_us},
          {"compute_us", t->compute_us},
          {"non_compute_us", t->non_compute_us},
          {"kernel_time_us", t->kernel_time_us},
          {"idle_pct", t->idle_pct},
          {"compute_pct", t->compute_pct},
          {"non_compute_pct", t->non_compute_pct}};
}

Json SideJson(const TraceDiffSide& s) {
  return {{"path", s.path},
          {"rank", s.rank},
          {"steps", s.steps},
          {"ops", s.ops.size()},
          {"temporal", TemporalJson(s.temporal)}};
}

std::string TemporalText(const TraceDiff& d) {
  const std::optional<TemporalBreakdown>&a = d.control.temporal, &b = d.test.temporal;
  if (!a && !b) return "";
  std::string out = fmt::format("temporal breakdown (HTA's, all but the last step)\n");
  out += fmt::format("  {:<14} {:>22} {:>22}\n", "", "control", "test");
  auto row = [&](const char* label, double TemporalBreakdown::*us, double TemporalBreakdown::*pct) {
    auto cell = [&](const std::optional<TemporalBreakdown>& t) {
      return t ? fmt::format("{} ({:.2f}%)", Us((*t).*us), (*t).*pct) : std::string("-");
    };
    out += fmt::format("  {:<14} {:>22} {:>22}\n", label, cell(a), cell(b));
  };
  row("idle", &TemporalBreakdown::idle_us, &TemporalBreakdown::idle_pct);
  row("compute", &TemporalBreakdown::compute_us, &TemporalBreakdown::compute_pct);
  row("non-compute", &TemporalBreakdown::non_compute_us, &TemporalBreakdown::non_compute_pct);
  auto window = [](const std::optional<TemporalBreakdown>& t) {
    return t ? Us(t->kernel_time_us) : std::string("-");
  };
  out += fmt::format("  {:<14} {:>22} {:>22}\n\n", "GPU window", window(a), window(b));
  return out;
}

}  // namespace

std::string TraceOpDiffLine(const TraceOpDiff& op) {
  return fmt::format("{:>12}  {} ({}): {} x {} -> {} x {}",
                     (op.diff_us() >= 0 ? "+" : "-") + Us(std::fabs(op.diff_us())), Short(op.name),
                     op.gpu ? "kernel" : "op", op.control_count, Us(op.control_us), op.test_count,
                     Us(op.test_us));
}

std::string RenderTraceDiffText(const TraceDiff& d, size_t top) {
  std::string out = fmt::format("stallscope trace --diff\n  control: {} (rank {}, {})\n",
                                d.control.path, d.control.rank, StepsText(d.control));
  out +=
      fmt::format("  test:    {} (rank {}, {})\n\n", d.test.path, d.test.rank, StepsText(d.test));
  out += TemporalText(d);
  size_t counts[5] = {0, 0, 0, 0, 0};
  size_t timed = 0;
  for (const TraceOpDiff& op : d.ops) {
    ++counts[static_cast<int>(op.change)];
    if (op.change == TraceOpChange::kUnchanged && op.diff_us() != 0) ++timed;
  }
  out += fmt::format(
      "ops and kernels: {} added, {} removed, {} run more often, {} less often, {} as often "
      "({} of them with another total time)\n",
      counts[0], counts[1], counts[2], counts[3], counts[4], timed);
  size_t shown = 0;
  for (const TraceOpDiff& op : d.ops) {
    if (shown == top || (op.diff_count() == 0 && op.diff_us() == 0)) break;
    if (shown++ == 0) out += "changed, by the time they explain (test - control):\n";
    out += "  " + TraceOpDiffLine(op) + "\n";
  }
  for (TraceOpChange change : {TraceOpChange::kAdded, TraceOpChange::kRemoved}) {
    std::string names;
    size_t n = 0;
    for (const TraceOpDiff& op : d.ops) {
      if (op.change != change) continue;
      if (n++ < 10) names += "\n  " + Short(op.name);
    }
    if (n == 0) continue;
    out += fmt::format("{} ({}{}):{}\n", TraceOpChangeName(change), n,
                       n > 10 ? ", the 10 of most time shown" : "", names);
  }
  for (const std::string& note : d.notes) out += fmt::format("note: {}\n", note);
  return out;
}

Json TraceDiffToJson(const TraceDiff& d) {
  Json out;
  out["schema"] = "stallscope.trace_diff/1";
  out["version"] = Version();
  out["control"] = SideJson(d.control);
  out["test"] = SideJson(d.test);
  Json lists = Json::object();
  for (TraceOpChange change :
       {TraceOpChange::kAdded, TraceOpChange::kRemoved, TraceOpChange::kIncreased,
        TraceOpChange::kDecreased, TraceOpChange::kUnchanged}) {
    Json names = Json::array();
    for (const TraceOpDiff& op : d.ops) {
      if (op.change == change) names.push_back(op.name);
    }
    lists[std::string(TraceOpChangeName(change))] = names;
  }
  out["ops_diff"] = lists;
  Json ops = Json::array();
  for (const TraceOpDiff& op : d.ops) {
    ops.push_back({{"name", op.name},
                   {"device", op.gpu ? "gpu" : "cpu"},
                   {"change", TraceOpChangeName(op.change)},
                   {"control_count", op.control_count},
                   {"test_count", op.test_count},
                   {"diff_count", op.diff_count()},
                   {"control_us", op.control_us},
                   {"test_us", op.test_us},
                   {"diff_us", op.diff_us()}});
  }
  out["ops"] = ops;
  out["notes"] = d.notes;
  return out;
}

}  // namespace stallscope
