// The runs of `stallscope history`: summaries, grouping, change points
// (analyze/run/history.h).
#include "analyze/run/history.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>
#include <set>
#include <tuple>

#include "analyze/run/job_analysis.h"
#include "analyze/run/rank_rules.h"
#include "core/stats.h"
#include "core/text.h"

namespace stallscope {
namespace {

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size()))) - 1;
  return v[std::min(i, v.size() - 1)];
}

std::optional<double> MetricOf(const HistoryRun& run, HistoryMetric metric) {
  switch (metric) {
    case HistoryMetric::kStep:
      return run.step_median_s;
    case HistoryMetric::kDataWait:
      return run.data_wait_s;
    case HistoryMetric::kStepsPerS:
      return run.steps_per_s;
  }
  return std::nullopt;
}

// The files of one run: same master, port, world size (and launcher job
// where both have one), overlapping in wall time.
bool SameRun(const HistoryRun& a, const HistoryRun& b) {
  if (a.master_addr.empty() || a.master_addr != b.master_addr) return false;
  if (a.master_port != b.master_port || a.world_size != b.world_size) return false;
  if (!a.launcher_job.empty() && !b.launcher_job.empty() && a.launcher_job != b.launcher_job) {
    return false;
  }
  return a.start_s <= b.end_s + kJobOverlapSlackSeconds &&
         b.start_s <= a.end_s + kJobOverlapSlackSeconds;
}

void Merge(HistoryRun& into, const HistoryRun& node) {
  into.files.insert(into.files.end(), node.files.begin(), node.files.end());
  for (const std::string& h : node.hosts) {
    if (std::find(into.hosts.begin(), into.hosts.end(), h) == into.hosts.end()) {
      into.hosts.push_back(h);
    }
  }
  for (const std::string& f : node.findings) {
    if (std::find(into.findings.begin(), into.findings.end(), f) == into.findings.end()) {
      into.findings.push_back(f);
    }
  }
  into.start_s = std::min(into.start_s, node.start_s);
  into.end_s = std::max(into.end_s, node.end_s);
  into.complete = into.complete && node.complete;
  if (!into.input && node.input) into.input = node.input, into.input_file = node.input_file;
  // The slowest node sets the job's pace.
  auto slower = [](std::optional<double>& x, const std::optional<double>& y) {
    if (y && (!x || *y > *x)) x = y;
  };
  slower(into.step_median_s, node.step_median_s);
  slower(into.step_p90_s, node.step_p90_s);
  slower(into.data_wait_s, node.data_wait_s);
  slower(into.sync_wait_s, node.sync_wait_s);
  if (node.steps_per_s && (!into.steps_per_s || *node.steps_per_s < *into.steps_per_s)) {
    into.steps_per_s = node.steps_per_s;
  }
}

// The L1 cost of a segment: the sum of absolute deviations from its median.
double Cost(const std::vector<double>& s, size_t lo, size_t hi) {
  double m = Median({s.begin() + lo, s.begin() + hi});
  double c = 0;
  for (size_t i = lo; i < hi; ++i) c += std::abs(s[i] - m);
  return c;
}

void SplitRange(const std::vector<double>& s, size_t lo, size_t hi, double noise,
                std::vector<size_t>& out) {
  size_t best = 0;
  double best_cost = Cost(s, lo, hi);
  for (size_t k = lo + kHistoryMinSegmentRuns; k + kHistoryMinSegmentRuns <= hi; ++k) {
    double left = Median({s.begin() + lo, s.begin() + k});
    double right = Median({s.begin() + k, s.begin() + hi});
    double gap = std::abs(right - left);
    if (gap <= kHistoryNoiseSigmas * noise) continue;
    if (gap <= kHistoryMinChangeFraction * std::abs(left)) continue;
    // The change begins at a run that shows it: the last run before is
    // nearer the left median, the first after nearer the right one (a
    // segment whose first run is still at the old level starts later).
    auto nearer_left = [&](double x) { return std::abs(x - left) < std::abs(x - right); };
    if (!nearer_left(s[k - 1]) || nearer_left(s[k])) continue;
    double cost = Cost(s, lo, k) + Cost(s, k, hi);
    if (cost < best_cost) best_cost = cost, best = k;
  }
  if (best == 0) return;
  out.push_back(best);
  SplitRange(s, lo, best, noise, out);
  SplitRange(s, best, hi, noise, out);
}

void FindChanges(HistoryJob& job, HistoryMetric metric) {
  std::vector<size_t> at;  // positions in runs of the complete runs with the metric
  std::vector<double> series;
  for (size_t i = 0; i < job.runs.size(); ++i) {
    std::optional<double> v = MetricOf(job.runs[i], metric);
    if (job.runs[i].complete && v) at.push_back(i), series.push_back(*v);
  }
  job.noise = SeriesNoise(series);
  std::vector<size_t> splits = SplitSeries(series, job.noise);
  std::vector<size_t> bounds = {0};
  bounds.insert(bounds.end(), splits.begin(), splits.end());
  bounds.push_back(series.size());
  for (size_t seg = 0; seg + 1 < bounds.size(); ++seg) {
    double m = Median({series.begin() + bounds[seg], series.begin() + bounds[seg + 1]});
    for (size_t k = bounds[seg]; k < bounds[seg + 1]; ++k) {
      double off = std::abs(series[k] - m);
      job.runs[at[k]].outlier =
          off > kHistoryNoiseSigmas * job.noise && off > kHistoryMinChangeFraction * std::abs(m);
    }
    if (seg == 0) continue;
    HistoryChange c;
    c.before = at[bounds[seg] - 1];
    c.after = at[bounds[seg]];
    c.before_value = Median({series.begin() + bounds[seg - 1], series.begin() + bounds[seg]});
    c.after_value = m;
    c.before_s_per_step = job.runs[c.before].step_median_s.value_or(0);
    c.after_s_per_step = job.runs[c.after].step_median_s.value_or(0);
    c.ratio = c.before_value > 0 ? c.after_value / c.before_value : 0;
    job.changes.push_back(std::move(c));
  }
}

// "2026-03-04T09:12:30Z" as run files write it; nullopt otherwise.
std::optional<double> UtcSeconds(const std::string& text) {
  struct tm tm {};
  if (strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm) == nullptr) return std::nullopt;
  return static_cast<double>(timegm(&tm));
}

// "7d": now less the age; nullopt when `text` is not an age.
std::optional<double> AgeBefore(const std::string& text, double now) {
  if (text.size() < 2 || text.size() > 8) return std::nullopt;
  double unit = 0;
  switch (text.back()) {
    case 'm':
      unit = 60;
      break;
    case 'h':
      unit = 3600;
      break;
    case 'd':
      unit = 86400;
      break;
    case 'w':
      unit = 7 * 86400;
      break;
    default:
      return std::nullopt;
  }
  double n = 0;
  for (size_t i = 0; i + 1 < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
    n = n * 10 + (text[i] - '0');
  }
  return now - n * unit;
}

// An ISO 8601 date or time (UTC, or with its offset); nullopt otherwise.
std::optional<double> IsoSeconds(const std::string& text) {
  struct tm tm {};
  const char* p = strptime(text.c_str(), "%Y-%m-%d", &tm);
  if (p == nullptr) return std::nullopt;
  if (*p == 'T' || *p == ' ') {
    const char* q = strptime(p + 1, "%H:%M:%S", &tm);
    if (q == nullptr) q = strptime(p + 1, "%H:%M", &tm);
    if (q == nullptr) return std::nullopt;
    p = q;
  }
  // strptime accepts out-of-range days of some months (Feb 31): timegm
  // then moves to the next month; such a date is refused.
  struct tm check = tm;
  double seconds = static_cast<double>(timegm(&check));
  if (check.tm_mday != tm.tm_mday || check.tm_mon != tm.tm_mon) return std::nullopt;
  if (*p == 'Z') {
    ++p;
  } else if (*p == '+' || *p == '-') {
    int sign = *p == '+' ? 1 : -1;
    struct tm off {};
    const char* q = strptime(p + 1, "%H:%M", &off);
    if (q == nullptr) return std::nullopt;
    seconds -= sign * (off.tm_hour * 3600.0 + off.tm_min * 60.0);
    p = q;
  }
  if (*p != '\0') return std::nullopt;
  return seconds;
}

}  // namespace

std::optional<InputElsewhere> InputNear(const HistoryJob& job, size_t change, bool after) {
  if (change >= job.changes.size()) return std::nullopt;
  const HistoryChange& c = job.changes[change];
  // The segment: from the previous change's first run to this one's last
  // before, or from this change's first run to the next one's last before.
  size_t lo = change > 0 ? job.changes[change - 1].after : 0;
  size_t hi = c.before;
  if (after) {
    lo = c.after;
    hi = change + 1 < job.changes.size() ? job.changes[change + 1].before : job.runs.size() - 1;
  }
  // Nearest the representative first (the segment's last run before the
  // change, its first after it), among the runs the series is made of: an
  // outlier is off its segment and an incomplete run outside the series, so
  // either may be of another setting.
  for (size_t k = 0; k <= hi - lo; ++k) {
    const HistoryRun& r = job.runs[after ? lo + k : hi - k];
    if (r.complete && !r.outlier && r.input) return InputElsewhere{*r.input, r.input_file};
  }
  return std::nullopt;
}

Result<double> ParseSince(const std::string& text, double now) {
  if (std::optional<double> s = AgeBefore(text, now)) return *s;
  if (std::optional<double> s = IsoSeconds(text)) return *s;
  return Status::InvalidArgument(
      "--since '" + text +
      "': not a date; give an ISO 8601 date or time in UTC (2026-03-04, 2026-03-04T09:12, "
      "2026-03-04T09:12:30+01:00) or an age (30m, 12h, 7d, 2w)");
}

std::optional<HistoryMetric> HistoryMetricNamed(const std::string& name) {
  if (name == "step") return HistoryMetric::kStep;
  if (name == "data_wait") return HistoryMetric::kDataWait;
  if (name == "steps_per_s") return HistoryMetric::kStepsPerS;
  return std::nullopt;
}

const char* HistoryMetricName(HistoryMetric metric) {
  switch (metric) {
    case HistoryMetric::kStep:
      return "step";
    case HistoryMetric::kDataWait:
      return "data_wait";
    case HistoryMetric::kStepsPerS:
      return "steps_per_s";
  }
  return "step";
}

JobIdentity JobIdentityOf(const RunInfo& info) {
  JobIdentity id;
  id.uid = info.uid;
  if (!info.identity_recorded) {
    id = {"command", info.command, std::nullopt};
  } else if (!info.job_name.empty()) {
    id.by = "name", id.name = info.job_name;
  } else if (!info.script.empty() && info.script != "-c") {
    id.by = "script", id.name = info.script;
  } else if (!info.program.empty()) {
    id.by = "program", id.name = info.program;
  } else {
    id.by = "command", id.name = info.command;
  }
  return id;
}

HistoryRun SummarizeRunFile(const RunAnalysis& run) {
  const Timeline& t = run.timeline;
  HistoryRun r;
  r.files = {run.path};
  r.started_utc = t.info.started_utc;
  r.command = t.info.command;
  r.job = JobIdentityOf(t.info);
  r.argv = t.info.argv;
  r.hosts = {t.info.hostname};
  r.data_device = t.info.data_device;
  if (std::vector<LoaderInput> inputs = WhatTheLoaderReads(t); !inputs.empty()) {
    r.input = std::move(inputs.front());
    r.input_file = run.path;
  }
  if (t.node) {
    r.start_s = t.node->start_realtime_seconds;
    r.world_size = t.node->world_size.value_or(0);
    r.master_addr = t.node->master_addr;
    r.master_port = t.node->master_port;
    r.launcher_job = t.node->launcher_job;
  }
  if (r.start_s <= 0) r.start_s = UtcSeconds(r.started_utc).value_or(0);
  if (r.world_size == 0) r.world_size = std::max<int>(1, static_cast<int>(run.ranks.size()));
  double duration = t.info.duration_seconds.value_or(t.samples.empty() ? 0 : t.samples.back().t);
  r.end_s = r.start_s + duration;
  r.complete = t.info.exit_code.value_or(-1) == 0 && !t.info.exit_signal && !t.info.oom_killed;
  std::vector<double> step, wait, sync;
  int lowest = -1;
  double first_t = 0, last_t = 0;
  int64_t lowest_steps = 0;
  for (const StepParts& p : CountedStepParts(t)) {
    step.push_back(p.step_s);
    wait.push_back(p.data_wait_s);
    if (p.sync_wait_s) sync.push_back(*p.sync_wait_s);
    if (lowest < 0 || p.rank < lowest) lowest = p.rank, lowest_steps = 0, first_t = p.t;
    if (p.rank == lowest) ++lowest_steps, last_t = p.t;
  }
  if (!step.empty()) {
    r.step_median_s = Median(step);
    r.step_p90_s = Quantile(step, 0.9);
    r.data_wait_s = Median(wait);
    if (sync.size() == step.size()) r.sync_wait_s = Median(sync);
    if (lowest_steps > 1 && last_t > first_t) {
      r.steps_per_s = static_cast<double>(lowest_steps - 1) / (last_t - first_t);
    }
  }
  std::set<std::string> loaders;
  for (const LoaderConfig& l : t.loaders) {
    loaders.insert(fmt::format("num_workers={} batch_size={} pin_memory={}", l.num_workers,
                               l.batch_size, l.pin_memory ? "true" : "false"));
  }
  r.loaders.assign(loaders.begin(), loaders.end());
  for (const Finding& f : run.findings) r.findings.push_back(f.id);
  return r;
}

double SeriesNoise(const std::vector<double>& series) {
  if (series.size() < 2) return 0;
  std::vector<double> d;
  for (size_t i = 1; i < series.size(); ++i) d.push_back(std::abs(series[i] - series[i - 1]));
  return 1.4826 * Median(d) / std::sqrt(2.0);
}

std::vector<size_t> SplitSeries(const std::vector<double>& series, double noise) {
  std::vector<size_t> out;
  SplitRange(series, 0, series.size(), noise, out);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<HistoryJob> BuildHistory(std::vector<HistoryRun> files, HistoryMetric metric) {
  std::sort(files.begin(), files.end(),
            [](const HistoryRun& a, const HistoryRun& b) { return a.start_s < b.start_s; });
  std::vector<HistoryRun> runs;
  for (HistoryRun& f : files) {
    auto same =
        std::find_if(runs.begin(), runs.end(), [&](const HistoryRun& r) { return SameRun(r, f); });
    if (same != runs.end()) {
      Merge(*same, f);
    } else {
      runs.push_back(std::move(f));
    }
  }
  std::map<std::pair<JobIdentity, int>, HistoryJob> by_key;
  for (HistoryRun& r : runs) {
    HistoryJob& job = by_key[{r.job, r.world_size}];
    if (job.runs.empty()) job.command = r.command;
    job.identity = r.job;
    job.world_size = r.world_size;
    r.index = static_cast<int>(job.runs.size()) + 1;
    job.runs.push_back(std::move(r));
  }
  std::vector<HistoryJob> jobs;
  for (auto& [key, job] : by_key) {
    FindChanges(job, metric);
    jobs.push_back(std::move(job));
  }
  std::stable_sort(jobs.begin(), jobs.end(), [](const HistoryJob& a, const HistoryJob& b) {
    return a.runs.size() > b.runs.size();
  });
  return jobs;
}

}  // namespace stallscope
