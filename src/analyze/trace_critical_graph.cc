// HTA's critical path graph: see trace_critical_graph.h.
#include "analyze/trace_critical_graph.h"

#include <algorithm>

namespace stallscope {
namespace {

constexpr uint32_t kNoNode = UINT32_MAX;

bool IsBlocking(std::string_view n) {
  static constexpr std::string_view kCalls[] = {"cudaDeviceSynchronize",
                                                "cudaStreamSynchronize",
                                                "cudaEventQuery",
                                                "cudaEventSynchronize",
                                                "cudaMemcpy",
                                                "cudaMemcpyAsync"};
  return std::find(std::begin(kCalls), std::end(kCalls), n) != std::end(kCalls);
}

bool TakesRuntimeLock(std::string_view n) {
  return n == "cudaHostAlloc" || n == "cudaLaunchKernel" || n == "cudaMemcpyAsync";
}

}  // namespace

CpGraph::CpGraph(const HtaRows& rows) : h_(rows) {
  start_.assign(h_.by_index.size(), kNoNode);
  end_.assign(h_.by_index.size(), kNoNode);
  loader_.assign(h_.trace->names.size(), 0);
  for (size_t n = 0; n < loader_.size(); ++n)
    loader_[n] = TraceCpuRoleOf(h_.trace->names[n]) == TraceCpuRole::kDataLoader;
  CreateNodes();
  succ_.resize(nodes_.size());
  pred_.resize(nodes_.size());
  seen_.assign(nodes_.size(), false);
  AddRuntimeLock();
  AddCallStacks();
  AddGpuRows();
}

bool CpGraph::IsDataLoading(uint32_t name) const { return name < loader_.size() && loader_[name]; }

bool CpGraph::HasNodes(int64_t ev) const {
  return ev >= 0 && ev < static_cast<int64_t>(start_.size()) && StartOf(ev) != kNoNode &&
         EndOf(ev) != kNoNode;
}

// HTA's _create_event_nodes: CPU ops, runtime calls, data loading and GPU
// rows with a launch, sorted by (time, index), a start before its end.
void CpGraph::CreateNodes() {
  for (uint32_t at : h_.window) {
    const HtaRow& r = h_.rows[at];
    const TraceEvent& e = *r.event;
    const bool op = e.cat == TraceCategory::kCpuOp || e.cat == TraceCategory::kRuntime;
    if (!op && !IsDataLoading(e.name) && !(e.stream != -1 && r.index_correlation >= 0)) continue;
    const std::string& name = h_.Name(r);
    const bool blocking = IsBlocking(name), lock = TakesRuntimeLock(name);
    nodes_.push_back({r.ts, r.index, true, blocking, lock});
    nodes_.push_back({r.End(), r.index, false, blocking, lock});
  }
  std::stable_sort(nodes_.begin(), nodes_.end(), [](const Node& a, const Node& b) {
    if (a.ts != b.ts) return a.ts < b.ts;
    if (a.ev != b.ev) return a.ev < b.ev;
    return a.start && !b.start;
  });
  for (uint32_t i = 0; i < nodes_.size(); ++i)
    (nodes_[i].start ? start_ : end_)[static_cast<size_t>(nodes_[i].ev)] = i;
}

void CpGraph::Touch(uint32_t node) {
  if (seen_[node]) return;
  seen_[node] = true;
  order_.push_back(node);
}

// networkx's add_edge: a second edge between the same nodes replaces the
// first one's data and keeps its place.
uint64_t CpGraph::AddEdge(uint32_t from, uint32_t to, CpEdgeType type, bool zero) {
  const bool no_time =
      zero || type == CpEdgeType::kDependency || type == CpEdgeType::kSyncDependency;
  const CpEdge e{from, to, type, no_time ? 0 : nodes_[to].ts - nodes_[from].ts};
  const uint64_t key = Key(from, to);
  auto [it, added] = edge_at_.try_emplace(key, static_cast<uint32_t>(edges_.size()));
  if (!added) {
    edges_[it->second] = e;
    return key;
  }
  edges_.push_back(e);
  Touch(from);
  Touch(to);
  succ_[from].push_back(to);
  pred_[to].push_back(from);
  return key;
}

// HTA's _attribute_edge: an op's own time to the op, the time between two
// children to their parent, a gap between GPU rows to the earlier one.
void CpGraph::Attribute(uint64_t key, int64_t src_parent) {
  const CpEdge& e = edges_[edge_at_.at(key)];
  if (e.type != CpEdgeType::kOperatorKernel && e.type != CpEdgeType::kKernelKernelDelay) return;
  const Node &src = nodes_[e.from], &dst = nodes_[e.to];
  int64_t ev = src_parent;
  if (e.type == CpEdgeType::kKernelKernelDelay || src.start)
    ev = src.ev;
  else if (!dst.start)
    ev = dst.ev;
  attributed_[key] = ev;
}

int64_t CpGraph::AttributedEvent(const CpEdge& e) const {
  auto it = attributed_.find(Key(e.from, e.to));
  return it == attributed_.end() ? -1 : it->second;
}

const CpEdge& CpGraph::EdgeBetween(uint32_t from, uint32_t to) const {
  return edges_[edge_at_.at(Key(from, to))];
}

// HTA's _construct_graph_from_cuda_runtime_events: the calls that take the
// runtime lock, ordered by which finished first.
void CpGraph::AddRuntimeLock() {
  std::vector<uint32_t> starts;
  int64_t last = -1;
  for (uint32_t v = 0; v < nodes_.size(); ++v) {
    const Node& n = nodes_[v];
    if (!n.lock) continue;
    if (n.start) {
      starts.push_back(v);
    } else {
      while (!starts.empty()) {
        const uint32_t p = starts.back();
        starts.pop_back();
        if (nodes_[p].ev == n.ev)
          Attribute(AddEdge(p, v, CpEdgeType::kOperatorKernel), n.ev);
        else
          AddEdge(p, v, CpEdgeType::kDependency);
      }
      if (last >= 0 && !nodes_[static_cast<size_t>(last)].start)
        AddEdge(static_cast<uint32_t>(last), v, CpEdgeType::kDependency);
    }
    last = v;
  }
}

}  // namespace stallscope

namespace stallscope {

// networkx's dag_longest_path over HTA's graph, after HTA's _validate_graph
// (an edge of -1 µs or less counts 0 in the search; the summary keeps its
// weight).
std::optional<std::vector<uint32_t>> CpGraph::LongestPath(std::string* why_not) const {
  auto fail = [&](std::string why) -> std::optional<std::vector<uint32_t>> {
    if (why_not) *why_not = std::move(why);
    return std::nullopt;
  };
  if (order_.empty()) return fail("no edges in the window: nothing ran in it");
  for (const CpEdge& e : edges_) {
    if (e.type != CpEdgeType::kSyncDependency) continue;
    const HtaRow *a = h_.At(nodes_[e.from].ev), *b = h_.At(nodes_[e.to].ev);
    if (a && b && a->event->stream != -1 && a->event->stream == b->event->stream)
      return fail("a sync between two GPU rows of one stream (HTA refuses this graph too)");
  }
  std::vector<size_t> indegree(nodes_.size(), 0);
  std::vector<uint32_t> topo, generation, next;
  for (uint32_t v : order_) {
    indegree[v] = pred_[v].size();
    if (indegree[v] == 0) generation.push_back(v);
  }
  while (!generation.empty()) {
    for (uint32_t v : generation) {
      topo.push_back(v);
      for (uint32_t c : succ_[v])
        if (--indegree[c] == 0) next.push_back(c);
    }
    generation.swap(next);
    next.clear();
  }
  if (topo.size() != order_.size()) return fail("the graph has a cycle (HTA refuses it too)");
  std::vector<double> dist(nodes_.size(), 0);
  std::vector<uint32_t> from(nodes_.size(), kNoNode);
  for (uint32_t v : topo) {
    double best = 0;
    uint32_t by = v;
    bool any = false;
    for (uint32_t u : pred_[v]) {
      const double w = EdgeBetween(u, v).weight;
      const double d = dist[u] + (w <= -1 ? 0 : w);
      if (!any || d > best) {
        best = d;
        by = u;
        any = true;
      }
    }
    if (!any || best < 0) best = 0, by = v;
    dist[v] = best;
    from[v] = by;
  }
  uint32_t v = topo.front();
  for (uint32_t t : topo)
    if (dist[t] > dist[v]) v = t;
  std::vector<uint32_t> path;
  for (uint32_t u = kNoNode; u != v; v = from[v]) {
    path.push_back(v);
    u = v;
  }
  std::reverse(path.begin(), path.end());
  return path;
}

}  // namespace stallscope
