// Rendering `stallscope history` (render/run_history.h).
#include "render/run_history.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "core/version.h"
#include "render/run_diff.h"

namespace stallscope {
namespace {

std::string Seconds(const std::optional<double>& s) {
  return s ? fmt::format("{:.4f}", *s) : std::string("-");
}

std::string ValueText(const nlohmann::ordered_json& v) {
  if (v.is_null()) return "none";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) return fmt::format("{:.4g}", v.get<double>());
  return v.dump();
}

nlohmann::ordered_json Opt(const std::optional<double>& v) {
  return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}

nlohmann::ordered_json RunJson(const HistoryRun& r) {
  nlohmann::ordered_json j;
  j["index"] = r.index;
  j["files"] = r.files;
  j["started_utc"] = r.started_utc;
  j["step_median_s"] = Opt(r.step_median_s);
  j["step_p90_s"] = Opt(r.step_p90_s);
  j["data_wait_s"] = Opt(r.data_wait_s);
  j["sync_wait_s"] = Opt(r.sync_wait_s);
  j["steps_per_s"] = Opt(r.steps_per_s);
  j["hosts"] = r.hosts;
  j["data_device"] = r.data_device;
  j["loaders"] = r.loaders;
  j["world_size"] = r.world_size;
  j["command"] = r.command;
  j["findings"] = r.findings;
  j["outlier"] = r.outlier;
  j["complete"] = r.complete;
  return j;
}

// What names a job: its name or script where runs group by it, else the
// command line (files that predate job_identity).
std::string JobTitle(const HistoryJob& job) {
  return job.identity.by == "command" || job.identity.name.empty() ? job.command
                                                                   : job.identity.name;
}

nlohmann::ordered_json At(const HistoryRun& r) {
  return {{"index", r.index}, {"files", r.files}, {"started_utc", r.started_utc}};
}

}  // namespace

std::string ChangeCauses(const HistoryChange& change) {
  if (!change.diff) return "no comparison";
  std::vector<std::string> parts;
  for (const DiffComponent& c : change.diff->components) {
    if (c.cause && c.share && *c.share > 0) {
      parts.push_back(fmt::format("{} explains {:.2f} of it", c.what, *c.share));
    }
  }
  for (const DiffChange& c : change.diff->changes) {
    if (c.share) continue;  // a step component, said above
    parts.push_back(fmt::format("{} {} -> {}", c.what, ValueText(c.a), ValueText(c.b)));
    if (parts.size() >= 6) break;
  }
  // Where the time went: the row that moved most, where it moved a tenth
  // of the wall time and a second at least.
  if (!change.diff->time_a.ranks.empty() && !change.diff->time_b.ranks.empty()) {
    const RankTime& a = change.diff->time_a.ranks.front();
    const RankTime& b = change.diff->time_b.ranks.front();
    std::optional<TimeRowChange> most;
    for (const TimeRowChange& c : CompareTime(a, b)) {
      if (!most || std::abs(c.after_s - c.before_s) > std::abs(most->after_s - most->before_s)) {
        most = c;
      }
    }
    const double moved = most ? std::abs(most->after_s - most->before_s) : 0.0;
    if (most && moved >= 1.0 && moved >= 0.1 * std::max(a.wall_s, b.wall_s)) {
      parts.push_back(fmt::format("time in {} {:.1f} -> {:.1f} s", NameOf(most->row).text,
                                  most->before_s, most->after_s));
    }
  }
  if (parts.empty()) return "no cause beyond noise";
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

std::string RenderHistoryText(const std::vector<HistoryJob>& jobs, HistoryMetric metric,
                              const std::vector<std::string>& notes) {
  std::string out;
  if (jobs.size() > 1) {
    out += fmt::format("{} jobs (--job N reports one):\n", jobs.size());
    for (size_t i = 0; i < jobs.size(); ++i) {
      out += fmt::format("  {}. {} runs, world size {}: {}\n", i + 1, jobs[i].runs.size(),
                         jobs[i].world_size, JobTitle(jobs[i]));
    }
    out += "\n";
  }
  for (const HistoryJob& job : jobs) {
    out += fmt::format("job: {} ({}world size {}), {} runs\n", JobTitle(job),
                       job.identity.by == "command" || job.identity.by.empty()
                           ? ""
                           : "by its " + job.identity.by + "; ",
                       job.world_size, job.runs.size());
    out += fmt::format("  {:>4}  {:<20}  {:>9}  {:>9}  {:>9}  {:>9}  {:>8}  {}\n", "run",
                       "started (UTC)", "step med", "step p90", "data wait", "sync wait", "steps/s",
                       "");
    for (const HistoryRun& r : job.runs) {
      std::string mark = r.complete ? "" : "incomplete";
      if (r.outlier) mark += mark.empty() ? "outlier" : ", outlier";
      out += fmt::format("  {:>4}  {:<20}  {:>9}  {:>9}  {:>9}  {:>9}  {:>8}  {}\n", r.index,
                         r.started_utc.substr(0, 19), Seconds(r.step_median_s),
                         Seconds(r.step_p90_s), Seconds(r.data_wait_s), Seconds(r.sync_wait_s),
                         r.steps_per_s ? fmt::format("{:.2f}", *r.steps_per_s) : "-", mark);
    }
    out += fmt::format("  noise ({}, run to run): {:.4g}\n", HistoryMetricName(metric), job.noise);
    if (job.changes.empty()) out += "  no change beyond the run-to-run noise\n";
    const HistoryChange* most = nullptr;
    for (const HistoryChange& c : job.changes) {
      const HistoryRun& r = job.runs[c.after];
      out += fmt::format("  run {} ({}): {} {:.4g} -> {:.4g} ({:+.0f}%): {}\n", r.index,
                         r.started_utc.substr(0, 16), HistoryMetricName(metric), c.before_value,
                         c.after_value, (c.ratio - 1) * 100, ChangeCauses(c));
      if (!most || std::abs(std::log(std::max(c.ratio, 1e-9))) >
                       std::abs(std::log(std::max(most->ratio, 1e-9)))) {
        most = &c;
      }
    }
    if (most) {
      out += fmt::format("  verdict: the change at run {} matters most ({:.2f}x): {}\n",
                         job.runs[most->after].index, most->ratio, ChangeCauses(*most));
    }
    out += "\n";
  }
  for (const std::string& n : notes) out += "note: " + n + "\n";
  return out;
}

nlohmann::ordered_json HistoryJson(const std::vector<HistoryJob>& jobs, HistoryMetric metric,
                                   const std::vector<std::string>& notes) {
  nlohmann::ordered_json j;
  j["schema"] = "stallscope.history/1";
  j["version"] = Version();
  j["metric"] = HistoryMetricName(metric);
  j["jobs"] = nlohmann::ordered_json::array();
  for (const HistoryJob& job : jobs) {
    nlohmann::ordered_json jj;
    jj["command"] = job.command;
    jj["name"] = job.identity.name;
    jj["grouped_by"] = job.identity.by;
    jj["world_size"] = job.world_size;
    jj["noise"] = job.noise;
    jj["runs"] = nlohmann::ordered_json::array();
    for (const HistoryRun& r : job.runs) jj["runs"].push_back(RunJson(r));
    jj["change_points"] = nlohmann::ordered_json::array();
    for (const HistoryChange& c : job.changes) {
      nlohmann::ordered_json cj;
      cj["at"] = At(job.runs[c.after]);
      cj["before"] = At(job.runs[c.before]);
      cj["before_value"] = c.before_value;
      cj["after_value"] = c.after_value;
      cj["before_s_per_step"] = c.before_s_per_step;
      cj["after_s_per_step"] = c.after_s_per_step;
      cj["ratio"] = c.ratio;
      cj["causes"] = ChangeCauses(c);
      cj["diff"] = c.diff ? DiffJson(*c.diff) : nlohmann::ordered_json(nullptr);
      jj["change_points"].push_back(std::move(cj));
    }
    j["jobs"].push_back(std::move(jj));
  }
  j["notes"] = notes;
  return j;
}

}  // namespace stallscope
