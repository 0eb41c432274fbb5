// HTA's trace diff over one rank of each side (diff.h says which rows
// count and where each belongs). The step of a CPU row is found by binary
// search over the steps sorted by start, so the work is the rows times the
// log of the steps, not their product as in HTA.
#include "analyze/trace/diff.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>

namespace stallscope {
namespace {

constexpr int64_t kNoStep = INT64_MIN;

// A row as HTA holds it: times rounded (starts up, ends down) when any ts of
// the file is fractional.
struct Row {
  double ts = 0;
  double dur = 0;
};

Row RowOf(const TraceEvent& e, bool round) {
  if (!round) return {e.ts, e.dur};
  double ts = std::ceil(e.ts);
  return {ts, std::floor(e.ts + e.dur) - ts};
}

// HTA's GPU side (_filter_gpu_kernels_with_cuda_sync): a row with a stream
// and a correlation, or a device-wide sync; everything else is the CPU side.
bool GpuSide(const TraceFile& t, const TraceEvent& e) {
  if (e.stream >= 0 && e.correlation >= 0) return true;
  const std::string& name = t.names[e.name];
  return name == "Event Sync" || name == "Context Sync";
}

struct Step {
  double ts = 0, end = 0;
  int64_t number = 0;
  size_t order = 0;  // in the file: the last step that holds a time wins, as in HTA
};

class StepFinder {
 public:
  explicit StepFinder(std::vector<Step> steps) : steps_(std::move(steps)) {
    std::sort(steps_.begin(), steps_.end(),
              [](const Step& a, const Step& b) { return a.ts < b.ts; });
    for (const Step& s : steps_) longest_ = std::max(longest_, s.end - s.ts);
  }
  int64_t At(double ts) const {
    auto it = std::upper_bound(steps_.begin(), steps_.end(), ts,
                               [](double t, const Step& s) { return t < s.ts; });
    const Step* best = nullptr;
    while (it != steps_.begin()) {
      --it;
      if (it->ts < ts - longest_) break;
      if (ts < it->end && (best == nullptr || it->order > best->order)) best = &*it;
    }
    return best == nullptr ? kNoStep : best->number;
  }

 private:
  std::vector<Step> steps_;
  double longest_ = 0;
};

// The step of every row (kNoStep: none), as HTA's add_iteration.
std::vector<int64_t> StepOfRows(const TraceFile& t, const std::vector<Row>& rows) {
  std::vector<Step> steps;
  for (size_t i = 0; i < t.events.size(); ++i) {
    if (std::optional<int64_t> n = ProfilerStepNumber(t.names[t.events[i].name])) {
      steps.push_back({rows[i].ts, rows[i].ts + rows[i].dur, *n, i});
    }
  }
  StepFinder finder(std::move(steps));
  std::vector<int64_t> out(t.events.size(), kNoStep);
  std::unordered_map<int64_t, size_t> launch;  // correlation -> the last CPU-side row
  for (size_t i = 0; i < t.events.size(); ++i) {
    const TraceEvent& e = t.events[i];
    if (e.stream < 0 || (e.stream == 0 && e.cat == TraceCategory::kCpuOp)) {
      out[i] = finder.At(rows[i].ts);
    }
    if (e.correlation != -1 && !GpuSide(t, e)) launch[e.correlation] = i;
  }
  for (size_t i = 0; i < t.events.size(); ++i) {
    const TraceEvent& e = t.events[i];
    if (e.stream <= 0 || !GpuSide(t, e)) continue;
    auto it = launch.find(e.correlation);
    if (it != launch.end() && it->second > 0) out[i] = out[it->second];
  }
  return out;
}

// How many times HTA's loaded trace holds each row: 0 (dropped with the last
// step), 1, or more for a GPU row whose correlation several kept CPU rows
// share (HTA's inner merge repeats it).
std::vector<uint32_t> KeptRows(const TraceFile& t, const std::vector<Row>& rows) {
  std::vector<uint32_t> kept(t.events.size(), 1);
  std::set<std::string_view> step_names;
  double last_start = -INFINITY, cpu_first = INFINITY;
  bool cpu_step = false;
  for (size_t i = 0; i < t.events.size(); ++i) {
    const TraceEvent& e = t.events[i];
    const std::string& name = t.names[e.name];
    bool step = ProfilerStepNumber(name).has_value();
    if (step) step_names.insert(name);
    if (GpuSide(t, e)) continue;
    cpu_first = std::min(cpu_first, rows[i].ts);
    if (step) {
      cpu_step = true;
      last_start = std::max(last_start, rows[i].ts);
    }
  }
  if (step_names.size() < 2) return kept;
  if (!cpu_step) last_start = cpu_first;
  std::unordered_map<int64_t, uint32_t> launches;
  for (size_t i = 0; i < t.events.size(); ++i) {
    if (GpuSide(t, t.events[i])) continue;
    kept[i] = rows[i].ts < last_start ? 1 : 0;
    if (kept[i] != 0) ++launches[t.events[i].correlation];
  }
  for (size_t i = 0; i < t.events.size(); ++i) {
    if (!GpuSide(t, t.events[i])) continue;
    auto it = launches.find(t.events[i].correlation);
    kept[i] = it == launches.end() ? 0 : it->second;
  }
  return kept;
}

}  // namespace

std::string_view TraceOpChangeName(TraceOpChange change) {
  switch (change) {
    case TraceOpChange::kAdded:
      return "added";
    case TraceOpChange::kRemoved:
      return "removed";
    case TraceOpChange::kIncreased:
      return "increased";
    case TraceOpChange::kDecreased:
      return "decreased";
    case TraceOpChange::kUnchanged:
      break;
  }
  return "unchanged";
}

Result<TraceDiffSide> SummarizeTraceOps(const TraceFile& trace, const TraceDiffOptions& options) {
  TraceDiffSide side;
  side.path = trace.path;
  side.rank = trace.rank.value_or(0);
  std::vector<Row> rows;
  rows.reserve(trace.events.size());
  for (const TraceEvent& e : trace.events) rows.push_back(RowOf(e, trace.fractional_times));

  std::set<int64_t> numbers;
  for (const TraceEvent& e : trace.events) {
    if (std::optional<int64_t> n = ProfilerStepNumber(trace.names[e.name])) numbers.insert(*n);
  }
  if (options.steps) {
    for (int64_t n : numbers) {
      if (n >= options.steps->first && n <= options.steps->last) side.steps.push_back(n);
    }
    if (side.steps.empty()) {
      return Status::InvalidArgument(trace.path + ": no ProfilerStep#" +
                                     std::to_string(options.steps->first) + " to #" +
                                     std::to_string(options.steps->last) + " in the trace");
    }
  } else if (!numbers.empty()) {
    side.steps.push_back(*numbers.begin());
  }

  const std::vector<int64_t> step = StepOfRows(trace, rows);
  const std::vector<uint32_t> kept = KeptRows(trace, rows);
  const std::set<int64_t> wanted(side.steps.begin(), side.steps.end());
  std::map<std::string_view, TraceOpTotal> by_name;
  for (size_t i = 0; i < trace.events.size(); ++i) {
    if (kept[i] == 0 || (!wanted.empty() && wanted.count(step[i]) == 0)) continue;
    const TraceEvent& e = trace.events[i];
    TraceOpTotal& op = by_name[trace.names[e.name]];
    op.gpu = op.gpu || e.stream >= 0;
    op.count += kept[i];
    op.total_us += rows[i].dur * kept[i];
  }
  for (auto& [name, op] : by_name) {
    op.name = std::string(name);
    side.ops.push_back(std::move(op));
  }
  Result<TraceRankBreakdown> breakdown = BreakDownTrace(trace, TraceOptions{});
  if (breakdown.ok()) side.temporal = breakdown->temporal;
  return side;
}

TraceDiff DiffTraceOps(TraceDiffSide control, TraceDiffSide test) {
  TraceDiff out;
  std::map<std::string, TraceOpDiff> by_name;
  for (const TraceOpTotal& op : control.ops) {
    TraceOpDiff& d = by_name[op.name];
    d.gpu = op.gpu;
    d.control_count = op.count;
    d.control_us = op.total_us;
  }
  for (const TraceOpTotal& op : test.ops) {
    TraceOpDiff& d = by_name[op.name];
    d.gpu = d.gpu || op.gpu;
    d.test_count = op.count;
    d.test_us = op.total_us;
  }
  for (auto& [name, d] : by_name) {
    d.name = name;
    if (d.control_count == 0) {
      d.change = TraceOpChange::kAdded;
    } else if (d.test_count == 0) {
      d.change = TraceOpChange::kRemoved;
    } else if (d.test_count != d.control_count) {
      d.change =
          d.test_count > d.control_count ? TraceOpChange::kIncreased : TraceOpChange::kDecreased;
    }
    out.ops.push_back(std::move(d));
  }
  std::stable_sort(out.ops.begin(), out.ops.end(), [](const TraceOpDiff& a, const TraceOpDiff& b) {
    return std::fabs(a.diff_us()) > std::fabs(b.diff_us());
  });
  for (const TraceDiffSide* side : {&control, &test}) {
    const char* which = side == &control ? "control" : "test";
    if (side->steps.empty()) {
      out.notes.push_back(std::string(which) + " (" + side->path +
                          "): no ProfilerStep, the whole trace is compared (HTA refuses it)");
    }
    if (!side->temporal) {
      out.notes.push_back(std::string(which) + " (" + side->path +
                          "): no GPU rows, no temporal breakdown");
    }
  }
  out.control = std::move(control);
  out.test = std::move(test);
  return out;
}

}  // namespace stallscope
