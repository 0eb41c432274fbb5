// HTA's critical path graph, its call stack and GPU edges: see
// critical_graph.h.
#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <unordered_map>

#include "analyze/trace/critical_graph.h"

namespace stallscope {
namespace {

constexpr uint32_t kNone = UINT32_MAX;
constexpr double kKernelKernelDelayThresholdUs = 1500;  // HTA's

// A pid or tid as pandas groups it: numbers by value, before any text.
struct IdKey {
  bool text = false;
  int64_t number = 0;
  std::string_view raw;
  bool operator<(const IdKey& o) const {
    if (text != o.text) return !text;
    if (number != o.number) return number < o.number;
    return raw < o.raw;
  }
};

IdKey KeyOf(std::string_view s) {
  IdKey k;
  k.raw = s;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), k.number);
  k.text = ec != std::errc() || p != s.data() + s.size();
  if (k.text) k.number = 0;
  return k;
}

// HTA's call stack order (call_stack.py's compare_events) for rows that last.
struct StackEvent {
  int64_t idx;
  double time, dur;
  bool start;
};
bool Before(const StackEvent& x, const StackEvent& y) {
  if (x.idx == y.idx) return x.start && !y.start;
  if (x.time != y.time) return x.time < y.time;
  if (x.start != y.start) return !x.start;  // both last: an end goes first
  if (x.dur != y.dur) return x.start ? x.dur > y.dur : x.dur < y.dur;
  return x.start ? x.idx < y.idx : x.idx > y.idx;
}

// The one thread (tid) that has CPU ops or annotations named with `text`.
std::optional<std::string_view> OnlyThreadWith(const HtaRows& h, std::string_view text) {
  std::optional<std::string_view> tid;
  for (uint32_t at : h.window) {
    const HtaRow& r = h.rows[at];
    const TraceCategory c = r.event->cat;
    if (c != TraceCategory::kCpuOp && c != TraceCategory::kUserAnnotation) continue;
    if (h.Name(r).find(text) == std::string::npos) continue;
    const std::string& t = h.ThreadOf(r).tid;
    if (tid && *tid != t) return std::nullopt;
    tid = t;
  }
  return tid;
}

}  // namespace

// HTA's _construct_graph_from_call_stacks: one call stack per (pid, tid),
// the backward pass's thread read as the forward pass's.
void CpGraph::AddCallStacks() {
  const std::optional<std::string_view> fwd = OnlyThreadWith(h_, "forward");
  const std::optional<std::string_view> bwd = OnlyThreadWith(h_, "autograd");
  const bool merge = fwd && bwd && *fwd != *bwd;
  std::map<std::pair<IdKey, IdKey>, std::vector<const HtaRow*>> threads;
  for (uint32_t at : h_.window) {
    const HtaRow& r = h_.rows[at];
    const TraceThread& t = h_.ThreadOf(r);
    std::string_view tid = t.tid;
    if (merge && tid == *bwd) tid = *fwd;
    threads[{KeyOf(t.pid), KeyOf(tid)}].push_back(&r);
  }
  for (const auto& [key, rows] : threads) {
    // a stream: the GPU's; a CPU thread has none
    if (std::all_of(rows.begin(), rows.end(), [](const HtaRow* r) { return r->event->stream < 0; }))
      AddCallStack(rows);
  }
}

// One thread's stack walked in time order (a row's end pops the top of the
// stack, as HTA's does), edges as HTA's _construct_graph_from_call_stack.
void CpGraph::AddCallStack(const std::vector<const HtaRow*>& thread) {
  std::vector<StackEvent> events;
  events.reserve(2 * thread.size());
  for (const HtaRow* r : thread) {
    const double dur = std::max(0.0, r->dur);
    events.push_back({r->index, r->ts, dur, true});
    events.push_back({r->index, r->ts + dur, dur, false});
  }
  std::stable_sort(events.begin(), events.end(), Before);
  struct Open {
    int64_t idx, parent;
  };
  std::vector<Open> stack;
  uint32_t last = kNone;
  int64_t last_parent = -1;
  int depth = 0;
  for (const StackEvent& ev : events) {
    Open o{ev.idx, stack.empty() ? -1 : stack.back().idx};
    if (ev.start) {
      stack.push_back(o);
    } else {
      if (stack.empty()) continue;  // cannot happen: every end follows its start
      o = stack.back();
      stack.pop_back();
    }
    if (!HasNodes(o.idx)) continue;
    const uint32_t node = ev.start ? StartOf(o.idx) : EndOf(o.idx);
    if (last != kNone && !SharesLock(nodes_[last], nodes_[node])) {
      const CpEdgeType type =
          ev.start && depth == 0 ? CpEdgeType::kDependency : CpEdgeType::kOperatorKernel;
      const bool zero = !ev.start && nodes_[StartOf(o.idx)].blocking;
      Attribute(AddEdge(last, node, type, zero), last_parent);
    }
    last = node;
    last_parent = o.parent;
    depth += ev.start ? 1 : -1;
  }
}

// HTA's _construct_graph_from_kernels: GPU rows by start (syncs by end).
void CpGraph::AddGpuRows() {
  std::vector<const HtaRow*> rows;
  for (uint32_t at : h_.window) {
    const HtaRow& r = h_.rows[at];
    const std::string& n = h_.Name(r);
    if ((r.event->stream != -1 || n == "Event Sync" || n == "Context Sync") &&
        r.index_correlation >= 0)
      rows.push_back(&r);
  }
  auto sort_by = [](const HtaRow* r) {
    return r->event->cat == TraceCategory::kCudaSync ? r->End() : r->ts;
  };
  std::stable_sort(rows.begin(), rows.end(),
                   [&](const HtaRow* a, const HtaRow* b) { return sort_by(a) < sort_by(b); });
  std::vector<std::pair<int, uint32_t>> last_node;  // per stream, in first-seen order
  auto last_on = [&](int stream) -> uint32_t {
    for (const auto& [s, n] : last_node)
      if (s == stream) return n;
    return kNone;
  };
  std::unordered_map<int64_t, int64_t> kernel_sync;  // GPU row -> the GPU row it waits for
  auto queue = [&](int64_t index) {
    auto it = h_.queue_length.find(index);
    return it == h_.queue_length.end() ? std::optional<double>() : it->second;
  };
  for (const HtaRow* r : rows) {
    if (r->event->cat == TraceCategory::kCudaSync) {
      HandleSync(*r, last_node, kernel_sync);
      continue;
    }
    if (!HasNodes(r->index)) continue;
    const uint32_t s = StartOf(r->index), e = EndOf(r->index);
    Attribute(AddEdge(s, e, CpEdgeType::kOperatorKernel), -1);
    uint32_t sync_end = kNone;
    if (auto it = kernel_sync.find(r->index); it != kernel_sync.end() && it->second >= 0) {
      if (HasNodes(it->second)) {
        sync_end = EndOf(it->second);
        AddEdge(sync_end, s, CpEdgeType::kSyncDependency);
      }
      it->second = -1;
    }
    const HtaRow* launch = h_.At(r->index_correlation);
    const uint32_t last = last_on(r->event->stream);
    const std::optional<double> q_launch = queue(r->index_correlation), q_row = queue(r->index);
    if (launch != nullptr && q_launch == 1.0 && q_row == 0.0 &&
        (last == kNone || nodes_[last].ts < launch->ts) &&
        (sync_end == kNone || nodes_[sync_end].ts < launch->ts)) {
      if (HasNodes(launch->index))
        AddEdge(StartOf(launch->index), s, CpEdgeType::kKernelLaunchDelay);
    } else if (last != kNone && nodes_[s].ts - nodes_[last].ts < kKernelKernelDelayThresholdUs &&
               (sync_end == kNone || nodes_[sync_end].ts < nodes_[last].ts)) {
      Attribute(AddEdge(last, s, CpEdgeType::kKernelKernelDelay), -1);
    }
    bool found = false;
    for (auto& [stream, n] : last_node)
      if (stream == r->event->stream) n = e, found = true;
    if (!found) last_node.emplace_back(r->event->stream, e);
  }
}

// A cuda_sync row: a stream or device sync waits for the stream's (every
// stream's) last GPU row; an event sync for the GPU row launched last
// before its cudaEventRecord; a stream wait makes the next GPU row launched
// on its stream wait for that one.
void CpGraph::HandleSync(const HtaRow& r, const std::vector<std::pair<int, uint32_t>>& last_node,
                         std::unordered_map<int64_t, int64_t>& kernel_sync) {
  const std::string& name = h_.Name(r);
  auto sync_edge = [&](uint32_t gpu_node) {
    if (gpu_node != kNone && HasNodes(r.index_correlation))
      AddEdge(gpu_node, EndOf(r.index_correlation), CpEdgeType::kSyncDependency);
  };
  if (name == "Stream Wait Event" || name == "Event Sync") {
    if (!h_.has_event_records) return;
    auto w = h_.waits.find(static_cast<uint32_t>(r.index));
    if (w == h_.waits.end()) return;
    auto prev = h_.previous_launch.find(w->second->record_correlation);
    if (prev == h_.previous_launch.end()) return;
    const int64_t src_kernel = h_.At(prev->second)->index_correlation;
    if (name == "Stream Wait Event") {
      auto next = h_.next_launch.find(r.index_correlation);
      if (next == h_.next_launch.end()) return;
      kernel_sync[h_.At(next->second)->index_correlation] = src_kernel;
    } else if (HasNodes(src_kernel)) {
      sync_edge(EndOf(src_kernel));
    }
    return;
  }
  if (name == "Context Sync") {
    for (const auto& [stream, node] : last_node) sync_edge(node);
  } else if (name == "Stream Sync") {
    for (const auto& [stream, node] : last_node)
      if (stream == r.event->stream) sync_edge(node);
  }
}

}  // namespace stallscope
