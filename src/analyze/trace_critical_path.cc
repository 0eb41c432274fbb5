// The critical path of one rank: see trace_critical_path.h.
#include "analyze/trace_critical_path.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include "analyze/trace_breakdown.h"

namespace stallscope {
namespace {

struct Edge {
  uint32_t to = 0;
  double weight = 0;
  CriticalBound bound = CriticalBound::kNone;
  int64_t op = -1;  // the event its time is charged to
};

struct Graph {
  std::vector<double> time;
  std::vector<std::vector<Edge>> out;
  uint32_t Add(double t) {
    time.push_back(t);
    out.emplace_back();
    return static_cast<uint32_t>(time.size() - 1);
  }
  void Link(uint32_t from, uint32_t to, CriticalBound bound, int64_t op, bool zero = false) {
    const double w = zero ? 0 : std::max(0.0, time[to] - time[from]);
    out[from].push_back({to, w, bound, op});
  }
};

bool IsLaunch(std::string_view n) {
  return n.find("LaunchKernel") != std::string_view::npos || n == "cudaMemcpyAsync" ||
         n == "cudaMemsetAsync" || n == "hipMemcpyAsync" || n == "hipMemsetAsync";
}

CriticalBound CpuBound(const TraceEvent& e) {
  return e.role == TraceCpuRole::kDataLoader ? CriticalBound::kDataLoading : CriticalBound::kCpu;
}

// The instance window: [start, end] of the chosen annotation rows.
bool ChooseWindow(const TraceFile& trace, const CriticalPathRequest& req, CriticalPath& path,
                  std::string* why_not) {
  std::vector<const TraceEvent*> rows;
  const bool steps = req.annotation.empty();
  for (const TraceEvent& e : trace.events) {
    if (e.stream != -1) continue;
    const std::string& n = trace.names[e.name];
    const bool match = steps ? n.starts_with("ProfilerStep#")
                             : n.find(req.annotation) != std::string::npos;  // as HTA: a substring
    if (match) rows.push_back(&e);
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const TraceEvent* a, const TraceEvent* b) { return a->ts < b->ts; });
  path.annotation = steps && !rows.empty() ? "ProfilerStep" : req.annotation;
  if (rows.empty()) {
    if (!steps) {
      if (why_not) *why_not = "no instance of the annotation \"" + req.annotation + "\"";
      return false;
    }
    path.start_us = -INFINITY;
    path.end_us = INFINITY;
    return true;
  }
  const int64_t first = req.first_instance.value_or(steps && rows.size() >= 2 ? 1 : 0);
  const int64_t last = req.last_instance.value_or(first);
  if (first < 0 || last < first || last >= static_cast<int64_t>(rows.size())) {
    if (why_not)
      *why_not = "instance " + std::to_string(first) + ":" + std::to_string(last) + " of \"" +
                 path.annotation + "\" out of range (0:" + std::to_string(rows.size() - 1) + ")";
    return false;
  }
  path.first_instance = first;
  path.last_instance = last;
  path.start_us = rows[static_cast<size_t>(first)]->ts;
  const TraceEvent& l = *rows[static_cast<size_t>(last)];
  path.end_us = l.ts + l.dur;
  return true;
}

}  // namespace

std::string_view CriticalBoundName(CriticalBound b) {
  static constexpr std::string_view kNames[] = {"cpu_bound",
                                                "gpu_compute_bound",
                                                "gpu_communication_bound",
                                                "gpu_kernel_kernel_overhead",
                                                "gpu_kernel_launch_overhead",
                                                "data_loading",
                                                ""};
  return kNames[static_cast<int>(b)];
}

namespace {

// The CPU rows of the window as one call stack: enter and exit edges as HTA's
// _construct_graph_from_call_stack. Fills the nodes of each kept event.
void AddCallStack(const TraceFile& trace, const std::vector<uint32_t>& cpu, Graph& g,
                  std::vector<uint32_t>& start, std::vector<uint32_t>& end) {
  struct Open {
    uint32_t ev;
    double end;
  };
  std::vector<Open> stack;
  int64_t last = -1;  // last node
  auto Exit = [&]() {
    const uint32_t ev = stack.back().ev;
    const TraceEvent& e = trace.events[ev];
    g.Link(static_cast<uint32_t>(last), end[ev], CpuBound(e), ev, e.role == TraceCpuRole::kSync);
    last = end[ev];
    stack.pop_back();
  };
  for (uint32_t ev : cpu) {
    const TraceEvent& e = trace.events[ev];
    while (!stack.empty() && stack.back().end <= e.ts) Exit();
    if (last >= 0) {
      if (stack.empty()) {
        g.Link(static_cast<uint32_t>(last), start[ev], CriticalBound::kNone, -1);
      } else {
        const TraceEvent& parent = trace.events[stack.back().ev];
        g.Link(static_cast<uint32_t>(last), start[ev], CpuBound(parent), stack.back().ev);
      }
    }
    last = start[ev];
    stack.push_back({ev, e.ts + e.dur});
  }
  while (!stack.empty()) Exit();
}

// The longest path by Kahn's order (the graph is a DAG: every edge runs
// forward in time), then the edges on it summed by bound. As every weight is
// the time between its nodes, most paths between two nodes tie: which one is
// taken decides the bounds, so ties are broken as networkx breaks them.
CriticalPath LongestPath(const TraceFile& trace, const Graph& g, CriticalPath path) {
  const size_t n = g.time.size();
  std::vector<uint32_t> indegree(n, 0);
  for (const auto& edges : g.out)
    for (const Edge& e : edges) ++indegree[e.to];
  std::vector<double> dist(n, 0);
  std::vector<const Edge*> via(n, nullptr);
  std::vector<uint32_t> from(n, UINT32_MAX), ready;
  for (uint32_t v = 0; v < n; ++v)
    if (indegree[v] == 0) ready.push_back(v);
  while (!ready.empty()) {
    const uint32_t v = ready.back();
    ready.pop_back();
    for (const Edge& e : g.out[v]) {
      // networkx's dag_longest_path: a tie goes to the later-made predecessor
      const double d = dist[v] + e.weight;
      if (via[e.to] == nullptr || d > dist[e.to] || (d == dist[e.to] && v > from[e.to])) {
        dist[e.to] = d;
        via[e.to] = &e;
        from[e.to] = v;
      }
      if (--indegree[e.to] == 0) ready.push_back(e.to);
    }
  }
  if (n == 0) return path;
  uint32_t v = static_cast<uint32_t>(std::max_element(dist.begin(), dist.end()) - dist.begin());
  path.nodes = 1;
  std::unordered_map<std::string, double> cpu_ops;
  for (; via[v] != nullptr; v = from[v]) {
    const Edge& e = *via[v];
    ++path.nodes;
    path.total_us += e.weight;
    if (e.bound == CriticalBound::kNone) continue;
    path.by_bound_us[static_cast<int>(e.bound)] += e.weight;
    if (e.bound != CriticalBound::kCpu || e.op < 0 || e.weight <= 0) continue;
    const std::string& name = trace.names[trace.events[static_cast<size_t>(e.op)].name];
    // the step's own time between its ops names no op to make cheaper
    if (!name.starts_with("ProfilerStep#")) cpu_ops[name] += e.weight;
  }
  for (int b = 0; b < kCriticalBounds; ++b)
    path.summary_pct[b] = path.total_us > 0 ? 100 * path.by_bound_us[b] / path.total_us : 0;
  for (auto& [name, us] : cpu_ops) path.top_cpu_ops.push_back({name, us});
  std::sort(path.top_cpu_ops.begin(), path.top_cpu_ops.end(),
            [](const CriticalOp& a, const CriticalOp& b) {
              return a.us != b.us ? a.us > b.us : a.name < b.name;
            });
  if (path.top_cpu_ops.size() > 5) path.top_cpu_ops.resize(5);
  return path;
}

}  // namespace

std::optional<CriticalPath> FindCriticalPath(const TraceFile& trace,
                                             const CriticalPathRequest& request,
                                             std::string* why_not) {
  CriticalPath path;
  if (!ChooseWindow(trace, request, path, why_not)) return std::nullopt;
  const auto n = static_cast<uint32_t>(trace.events.size());
  std::vector<uint32_t> start(n, UINT32_MAX), end(n, UINT32_MAX), cpu;
  std::unordered_map<int64_t, uint32_t> launch_of;  // correlation -> launch event
  Graph g;
  for (uint32_t i = 0; i < n; ++i) {
    const TraceEvent& e = trace.events[i];
    // as HTA: CPU rows with a duration starting in the window, the annotation's own included
    if (e.stream != -1 || e.dur <= 0 || e.ts < path.start_us || e.ts > path.end_us) continue;
    const std::string& name = trace.names[e.name];
    cpu.push_back(i);
    if (e.correlation >= 0 && IsLaunch(name)) launch_of.emplace(e.correlation, i);
  }
  std::stable_sort(cpu.begin(), cpu.end(), [&](uint32_t a, uint32_t b) {
    const TraceEvent &x = trace.events[a], &y = trace.events[b];
    return x.ts != y.ts ? x.ts < y.ts : x.dur > y.dur;
  });
  for (uint32_t i : cpu) {
    start[i] = g.Add(trace.events[i].ts);
    end[i] = g.Add(trace.events[i].ts + trace.events[i].dur);
  }
  AddCallStack(trace, cpu, g, start, end);
  // GPU rows launched in the window, per stream in time order.
  std::map<int, std::vector<uint32_t>> streams;
  for (uint32_t i = 0; i < n; ++i) {
    const TraceEvent& e = trace.events[i];
    if (e.stream == -1 || e.correlation < 0 || !launch_of.contains(e.correlation)) continue;
    streams[e.stream].push_back(i);
  }
  std::vector<uint32_t> gpu_ends;  // (node) of every GPU row, for sync edges
  for (auto& [stream, rows] : streams) {
    std::stable_sort(rows.begin(), rows.end(), [&](uint32_t a, uint32_t b) {
      return trace.events[a].ts < trace.events[b].ts;
    });
    int64_t prev = -1;
    for (uint32_t i : rows) {
      const TraceEvent& e = trace.events[i];
      start[i] = g.Add(e.ts);
      end[i] = g.Add(e.ts + e.dur);
      const bool comm = KernelTypeOf(trace.names[e.name]) == KernelType::kCommunication;
      g.Link(start[i], end[i], comm ? CriticalBound::kGpuCommunication : CriticalBound::kGpuCompute,
             i);
      const uint32_t launch = launch_of.at(e.correlation);
      g.Link(start[launch], start[i], CriticalBound::kKernelLaunchOverhead, launch);
      if (prev >= 0) g.Link(end[prev], start[i], CriticalBound::kKernelKernelOverhead, i);
      prev = i;
      gpu_ends.push_back(end[i]);
    }
  }
  // A blocking sync waits for the last GPU row that ended before it did.
  std::sort(gpu_ends.begin(), gpu_ends.end(),
            [&](uint32_t a, uint32_t b) { return g.time[a] < g.time[b]; });
  for (uint32_t i : cpu) {
    if (trace.events[i].role != TraceCpuRole::kSync) continue;
    const double t = g.time[end[i]];
    auto it = std::upper_bound(gpu_ends.begin(), gpu_ends.end(), t,
                               [&](double v, uint32_t node) { return v < g.time[node]; });
    if (it != gpu_ends.begin() && g.time[*std::prev(it)] >= trace.events[i].ts)
      g.Link(*std::prev(it), end[i], CriticalBound::kNone, -1);
  }
  return LongestPath(trace, g, std::move(path));
}

}  // namespace stallscope
