// HTA's critical path graph: see critical_graph.h.
#include "analyze/trace/critical_graph.h"

#include <algorithm>

namespace stallscope {
namespace {

constexpr uint32_t kNoNode = UINT32_MAX;

// HTA's list of the runtime calls that wait for the GPU, kept as HTA has it
// so the path is HTA's: not the sync list of TraceCpuRoleOf (trace.h), which
// says which CPU ops a user's step waits in and so also holds the driver's
// and HIP's calls and aten::item, and leaves out cudaEventQuery (a poll) and
// cudaMemcpyAsync, which HTA counts here.
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
  first_out_.assign(nodes_.size(), kNoNode);
  last_out_.assign(nodes_.size(), kNoNode);
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

uint32_t CpGraph::FindEdge(uint32_t from, uint32_t to) const {
  for (uint32_t e = first_out_[from]; e != kNoNode; e = edges_[e].next_out)
    if (edges_[e].to == to) return e;
  return kNoNode;
}

// networkx's add_edge: a second edge between the same nodes replaces the
// first one's data and keeps its place (and HTA's charge for it).
uint32_t CpGraph::AddEdge(uint32_t from, uint32_t to, CpEdgeType type, bool zero) {
  const bool no_time =
      zero || type == CpEdgeType::kDependency || type == CpEdgeType::kSyncDependency;
  const double weight = no_time ? 0 : nodes_[to].ts - nodes_[from].ts;
  if (const uint32_t e = FindEdge(from, to); e != kNoNode) {
    edges_[e].type = type;
    edges_[e].weight = weight;
    return e;
  }
  const auto e = static_cast<uint32_t>(edges_.size());
  edges_.push_back({from, to, type, weight});
  (last_out_[from] == kNoNode ? first_out_[from] : edges_[last_out_[from]].next_out) = e;
  last_out_[from] = e;
  Touch(from);
  Touch(to);
  return e;
}

// HTA's _attribute_edge: an op's own time to the op, the time between two
// children to their parent, a gap between GPU rows to the earlier one.
void CpGraph::Attribute(uint32_t edge, int64_t src_parent) {
  CpEdge& e = edges_[edge];
  if (e.type != CpEdgeType::kOperatorKernel && e.type != CpEdgeType::kKernelKernelDelay) return;
  const Node &src = nodes_[e.from], &dst = nodes_[e.to];
  int64_t ev = src_parent;
  if (e.type == CpEdgeType::kKernelKernelDelay || src.start)
    ev = src.ev;
  else if (!dst.start)
    ev = dst.ev;
  e.charged = ev;
}

int64_t CpGraph::AttributedEvent(const CpEdge& e) const { return e.charged; }

const CpEdge& CpGraph::EdgeBetween(uint32_t from, uint32_t to) const {
  return edges_[FindEdge(from, to)];
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
  // the edges into each node, in the order added (networkx's predecessors)
  std::vector<uint32_t> in_start(nodes_.size() + 1, 0), in_edges(edges_.size());
  for (const CpEdge& e : edges_) ++in_start[e.to + 1];
  for (size_t v = 0; v < nodes_.size(); ++v) in_start[v + 1] += in_start[v];
  {
    std::vector<uint32_t> fill(in_start.begin(), in_start.end() - 1);
    for (uint32_t i = 0; i < edges_.size(); ++i) in_edges[fill[edges_[i].to]++] = i;
  }
  std::vector<uint32_t> indegree(nodes_.size(), 0);
  std::vector<uint32_t> topo, generation, next;
  topo.reserve(order_.size());
  for (uint32_t v : order_) {
    indegree[v] = in_start[v + 1] - in_start[v];
    if (indegree[v] == 0) generation.push_back(v);
  }
  while (!generation.empty()) {
    for (uint32_t v : generation) {
      topo.push_back(v);
      for (uint32_t e = first_out_[v]; e != kNoNode; e = edges_[e].next_out)
        if (--indegree[edges_[e].to] == 0) next.push_back(edges_[e].to);
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
    for (uint32_t i = in_start[v]; i < in_start[v + 1]; ++i) {
      const uint32_t u = edges_[in_edges[i]].from;
      const double w = edges_[in_edges[i]].weight;
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
