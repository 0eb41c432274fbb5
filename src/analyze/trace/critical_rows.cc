// HTA's rows of a trace for its critical path: see critical_rows.h.
#include "analyze/trace/critical_rows.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_set>
#include <utility>

#include "analyze/trace/queue.h"

namespace stallscope {

namespace {

bool IsStep(std::string_view n) {
  return n.starts_with("ProfilerStep#") && n.size() > 13 && n[13] >= '0' && n[13] <= '9';
}

std::vector<uint8_t> NameFlags(const TraceFile& t) {
  std::vector<uint8_t> flags(t.names.size(), 0);
  for (size_t i = 0; i < t.names.size(); ++i) {
    const std::string& n = t.names[i];
    uint8_t f = 0;
    if (n == "Event Sync" || n == "Context Sync") f |= kDeviceSync;
    if (IsStep(n)) f |= kStepName;
    if (n.starts_with("ProfilerStep#")) f |= kStepPrefix;
    if (IsHtaLaunch(n)) f |= kLaunchCall;
    if (n == "Stream Wait Event") f |= kStreamWaitRow;
    if (n == "cudaEventRecord") f |= kEventRecord;
    if (n == "cudaStreamWaitEvent") f |= kStreamWaitCall;
    flags[i] = f;
  }
  return flags;
}

// HTA's GPUKernelFilter: a row with a stream and a correlation, or a device sync.
bool GpuSide(const std::vector<uint8_t>& flags, const TraceEvent& e) {
  return (e.stream >= 0 && e.correlation >= 0) || (flags[e.name] & kDeviceSync);
}

// Every row in file order, rounded, linked by correlation.
std::vector<HtaRow> AllRows(const TraceFile& t, const std::vector<uint8_t>& flags) {
  std::vector<HtaRow> rows;
  rows.reserve(t.events.size() + t.cpu_rows.size());
  size_t a = 0, b = 0;
  while (a < t.events.size() || b < t.cpu_rows.size()) {
    const bool take_a =
        b >= t.cpu_rows.size() || (a < t.events.size() && t.events[a].index < t.cpu_rows[b].index);
    const TraceEvent& e = take_a ? t.events[a++] : t.cpu_rows[b++];
    HtaRow r;
    r.event = &e;
    r.index = e.index;
    r.ts = e.ts;
    r.dur = e.dur;
    if (t.fractional_times) {  // HTA: the start up, the end down
      const double end = e.ts + e.dur;
      r.ts = std::ceil(e.ts);
      r.dur = std::floor(end) - r.ts;
    }
    r.index_correlation = e.correlation < 0 ? -1 : 0;  // HTA: min(correlation, 0)
    rows.push_back(r);
  }
  // GPU-side rows by correlation, each correlation's in file order (a chain)
  std::unordered_map<int64_t, std::pair<uint32_t, uint32_t>> gpu;  // first, last
  std::vector<uint32_t> next(rows.size(), UINT32_MAX);
  gpu.reserve(rows.size() / 4);
  for (uint32_t i = 0; i < rows.size(); ++i) {
    const TraceEvent& e = *rows[i].event;
    if (e.correlation == -1 || !GpuSide(flags, e)) continue;
    auto [it, added] = gpu.try_emplace(e.correlation, i, i);
    if (!added) next[std::exchange(it->second.second, i)] = i;
  }
  for (HtaRow& c : rows) {
    const TraceEvent& e = *c.event;
    if (e.correlation == -1 || GpuSide(flags, e)) continue;
    auto it = gpu.find(e.correlation);
    if (it == gpu.end()) continue;
    for (uint32_t g = it->second.first; g != UINT32_MAX; g = next[g]) {
      c.index_correlation = static_cast<int32_t>(rows[g].index);
      rows[g].index_correlation = static_cast<int32_t>(c.index);
    }
  }
  return rows;
}

// TraceAnalysis' cut with two or more ProfilerSteps: the CPU rows before the
// last step's start (up to its end with `include_last`), then the GPU rows of
// their correlations (GPU rows first).
std::vector<HtaRow> CutAtLastStep(const std::vector<uint8_t>& flags, std::vector<HtaRow> rows,
                                  bool include_last) {
  std::unordered_set<uint32_t> steps;  // the step names rows have (HTA's symbols)
  for (const HtaRow& r : rows)
    if (flags[r.event->name] & kStepName) steps.insert(r.event->name);
  if (steps.size() < 2) return rows;
  double last = -INFINITY, last_end = -INFINITY;
  bool any = false;
  for (const HtaRow& r : rows)
    if (!GpuSide(flags, *r.event) && steps.contains(r.event->name)) {
      last = std::max(last, r.ts);
      last_end = std::max(last_end, r.End());
      any = true;
    }
  if (!any)  // steps only in GPU rows: as HTA, the CPU rows' first start and last end
    for (const HtaRow& r : rows)
      if (!GpuSide(flags, *r.event)) {
        last = any ? std::min(last, r.ts) : r.ts;
        last_end = std::max(last_end, r.End());
        any = true;
      }
  auto kept_cpu = [&](const HtaRow& r) {
    return !GpuSide(flags, *r.event) && (include_last ? r.ts <= last_end : r.ts < last);
  };
  std::unordered_set<int64_t> correlations;
  size_t kept = 0;
  for (const HtaRow& r : rows)
    if (kept_cpu(r)) correlations.insert(r.event->correlation), ++kept;
  auto kept_gpu = [&](const HtaRow& r) {
    return GpuSide(flags, *r.event) && correlations.contains(r.event->correlation);
  };
  for (const HtaRow& r : rows) kept += kept_gpu(r);
  std::vector<HtaRow> out;
  out.reserve(kept);
  for (const HtaRow& r : rows)
    if (kept_gpu(r)) out.push_back(r);
  for (const HtaRow& r : rows)
    if (kept_cpu(r)) out.push_back(r);
  return out;
}

bool ChooseWindow(const HtaRows& h, const CriticalPathRequest& req, CriticalPath& path,
                  std::string* why_not) {
  std::string annotation = req.annotation;
  int64_t first = req.first_instance.value_or(0);
  if (annotation.empty()) {  // ProfilerStep where there is one, as the reference does
    int64_t steps = 0;
    for (const HtaRow& r : h.rows) steps += h.Is(r, kStepPrefix);
    if (steps > 0) annotation = "ProfilerStep";
    if (!req.first_instance) first = steps >= 2 ? 1 : 0;
  }
  const int64_t last = req.last_instance.value_or(first);
  path.annotation = annotation;
  path.first_instance = first;
  path.last_instance = last;
  if (h.rows.empty()) {
    if (why_not) *why_not = "no events in the trace";
    return false;
  }
  if (annotation.empty()) {  // the whole trace
    path.start_us = INFINITY;
    path.end_us = -INFINITY;
    for (const HtaRow& r : h.rows) {
      path.start_us = std::min(path.start_us, r.ts);
      path.end_us = std::max(path.end_us, r.End());
    }
    return true;
  }
  std::vector<const HtaRow*> rows;  // as HTA: any row whose name holds the text, in its order
  std::vector<uint8_t> match(h.trace->names.size());  // each name looked at once
  for (size_t n = 0; n < match.size(); ++n)
    match[n] = h.trace->names[n].find(annotation) != std::string::npos;
  for (const HtaRow& r : h.rows)
    if (match[r.event->name]) rows.push_back(&r);
  if (rows.empty() || first < 0 || last < first || first >= static_cast<int64_t>(rows.size())) {
    if (why_not)
      *why_not = rows.empty() ? "no instance of the annotation \"" + annotation + "\""
                              : "instance " + std::to_string(first) + ":" + std::to_string(last) +
                                    " of \"" + annotation +
                                    "\" out of range (0:" + std::to_string(rows.size() - 1) + ")";
    return false;
  }
  path.start_us = INFINITY;
  path.end_us = -INFINITY;
  for (int64_t i = first; i <= last && i < static_cast<int64_t>(rows.size()); ++i) {
    path.start_us = std::min(path.start_us, rows[static_cast<size_t>(i)]->ts);
    path.end_us = std::max(path.end_us, rows[static_cast<size_t>(i)]->End());
  }
  return true;
}

// The rows in the window: CPU rows starting in it, the GPU rows they
// launched, and every Stream Wait Event.
void ClipToWindow(HtaRows& h, const CriticalPath& path) {
  std::unordered_set<int64_t> launched;
  for (size_t i = 0; i < h.rows.size(); ++i) {
    const HtaRow& r = h.rows[i];
    if (!r.OnCpu() || r.ts < path.start_us || r.ts > path.end_us || !(r.dur > 0)) continue;
    h.window.push_back(static_cast<uint32_t>(i));
    launched.insert(r.index_correlation);
  }
  for (size_t i = 0; i < h.rows.size(); ++i) {
    const HtaRow& r = h.rows[i];
    if (r.OnCpu()) continue;
    if (launched.contains(r.index) || h.Is(r, kStreamWaitRow))
      h.window.push_back(static_cast<uint32_t>(i));
  }
  std::sort(h.window.begin(), h.window.end(),
            [&](uint32_t a, uint32_t b) { return h.rows[a].index < h.rows[b].index; });
}

// TraceCounters' queue length: per stream, +1 at each launch, -1 at each of
// its GPU rows, in time order.
void QueueLengths(HtaRows& h) {
  std::unordered_map<int64_t, const HtaRow*> gpu_of;  // correlation -> GPU row
  for (const HtaRow& r : h.rows)
    if (!r.OnCpu()) gpu_of[r.event->correlation] = &r;
  struct Change {
    const HtaRow* row;
    int stream, delta;
  };
  std::vector<Change> changes;
  std::unordered_set<int64_t> launched;
  for (const HtaRow& r : h.rows) {
    if (!r.OnCpu() || r.index_correlation <= 0 || !h.Is(r, kLaunchCall)) continue;
    launched.insert(r.event->correlation);
    auto it = gpu_of.find(r.event->correlation);
    if (it != gpu_of.end()) changes.push_back({&r, it->second->event->stream, +1});
  }
  for (const HtaRow& r : h.rows)
    if (!r.OnCpu() && launched.contains(r.event->correlation))
      changes.push_back({&r, r.event->stream, -1});
  std::stable_sort(changes.begin(), changes.end(),
                   [](const Change& a, const Change& b) { return a.row->ts < b.row->ts; });
  std::unordered_map<int, double> length;
  for (const Change& c : changes) h.queue_length[c.row->index] = length[c.stream] += c.delta;
}

struct Launch {
  const HtaRow* row;
  const HtaRow* gpu;
  int64_t id;
};

// HTA's runtime calls: launches with their GPU row, numbered in time order.
std::vector<Launch> Launches(const HtaRows& h) {
  std::vector<Launch> out;
  for (const HtaRow& r : h.rows) {
    if (!r.OnCpu() || r.index_correlation <= 0 || !h.Is(r, kLaunchCall)) continue;
    const HtaRow* g = h.At(r.index_correlation);
    if (g != nullptr && !g->OnCpu()) out.push_back({&r, g, 0});
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Launch& a, const Launch& b) { return a.row->ts < b.row->ts; });
  for (size_t i = 0; i < out.size(); ++i) out[i].id = static_cast<int64_t>(i);
  return out;
}

// cudaEventRecord -> the last launch on its GPU and stream before it, and
// cudaStreamWaitEvent -> the next launch on its thread and stream after it.
void EventLaunches(HtaRows& h) {
  const TraceFile& t = *h.trace;
  for (const TraceSyncWait& w : t.sync_waits) h.waits[w.index] = &w;
  bool records = false, waits = false, wait_rows = false;
  for (const std::string& n : t.names) {
    records = records || n == "cudaEventRecord";
    waits = waits || n == "cudaStreamWaitEvent";
    wait_rows = wait_rows || n == "Stream Wait Event";
  }
  h.has_event_records = records;
  if (!records && !(waits && wait_rows)) return;
  const std::vector<Launch> launches = Launches(h);
  auto thread = [&](const HtaRow& r) { return &h.ThreadOf(r); };
  if (records) {
    // the stream and GPU each recorded event was recorded on, from the syncs that wait on it
    std::map<int64_t, std::pair<int64_t, std::string>> recorded;
    for (const HtaRow& r : h.rows) {
      auto w = h.waits.find(static_cast<uint32_t>(r.index));
      if (w == h.waits.end() || w->second->stream <= -1) continue;
      recorded.try_emplace(w->second->record_correlation, w->second->stream, thread(r)->pid);
    }
    std::map<std::pair<int64_t, std::string>, std::vector<const HtaRow*>> by_stream;
    for (const HtaRow& r : h.rows) {
      if (!h.Is(r, kEventRecord)) continue;
      auto it = recorded.find(r.event->correlation);
      if (it != recorded.end()) by_stream[{it->second.first, it->second.second}].push_back(&r);
    }
    for (auto& [key, recs] : by_stream) {
      std::stable_sort(recs.begin(), recs.end(),
                       [](const HtaRow* a, const HtaRow* b) { return a->ts < b->ts; });
      size_t li = 0;
      const Launch* prev = nullptr;
      for (const HtaRow* rec : recs) {
        for (; li < launches.size() && launches[li].row->ts <= rec->ts; ++li)
          if (launches[li].gpu->event->stream == key.first &&
              thread(*launches[li].gpu)->pid == key.second)
            prev = &launches[li];
        if (prev != nullptr) h.previous_launch[rec->event->correlation] = prev->row->index;
      }
    }
  }
  if (!(waits && wait_rows)) return;
  std::vector<const HtaRow*> wait_calls;
  for (const HtaRow& r : h.rows) {
    if (!h.Is(r, kStreamWaitCall) || r.index_correlation <= 0) continue;
    const HtaRow* g = h.At(r.index_correlation);
    if (g != nullptr && !g->OnCpu()) wait_calls.push_back(&r);
  }
  // per (thread, stream), the first launch after each wait (one at the same
  // time sorts before it, as in HTA's concatenation)
  std::map<std::pair<uint32_t, int>, std::vector<const Launch*>> by_thread;
  for (const Launch& l : launches)
    by_thread[{l.row->event->thread, l.gpu->event->stream}].push_back(&l);
  for (const HtaRow* w : wait_calls) {
    auto it = by_thread.find({w->event->thread, h.At(w->index_correlation)->event->stream});
    if (it == by_thread.end()) continue;
    auto next = std::upper_bound(it->second.begin(), it->second.end(), w->ts,
                                 [](double ts, const Launch* l) { return ts < l->row->ts; });
    if (next != it->second.end()) h.next_launch[w->index] = (*next)->row->index;
  }
}

}  // namespace

std::optional<HtaRows> HtaRowsFor(const TraceFile& trace, const CriticalPathRequest& request,
                                  CriticalPath& path, std::string* why_not) {
  HtaRows h;
  h.trace = &trace;
  h.name_flags = NameFlags(trace);
  h.rows = CutAtLastStep(h.name_flags, AllRows(trace, h.name_flags), request.include_last_step);
  uint32_t top = 0;
  for (const HtaRow& r : h.rows) top = std::max(top, r.index);
  h.by_index.assign(static_cast<size_t>(top) + 1, -1);
  for (size_t i = 0; i < h.rows.size(); ++i)
    h.by_index[static_cast<size_t>(h.rows[i].index)] = static_cast<int32_t>(i);
  if (!ChooseWindow(h, request, path, why_not)) return std::nullopt;
  ClipToWindow(h, path);
  QueueLengths(h);
  EventLaunches(h);
  return h;
}

}  // namespace stallscope
