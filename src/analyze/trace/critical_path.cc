// The critical path of one rank: see critical_path.h. The graph is
// built in HTA's order (its nodes sorted by time, its edges added runtime
// lock first, then each thread's call stack, then the GPU rows) because
// networkx breaks ties between equally long paths by that order.
#include "analyze/trace/critical_path.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "analyze/trace/critical_graph.h"
#include "analyze/trace/critical_rows.h"

namespace stallscope {

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

// HTA's CommunicateKernelGroupingPattern.
bool IsCommunication(std::string_view n) {
  return n.starts_with("nccl") || n.starts_with("hip") || n.starts_with("hccl") ||
         n.find("ncclKernel") != std::string_view::npos;
}

CriticalBound BoundOf(const HtaRows& h, const CpGraph& g, const CpEdge& e) {
  switch (e.type) {
    case CpEdgeType::kKernelKernelDelay:
      return CriticalBound::kKernelKernelOverhead;
    case CpEdgeType::kKernelLaunchDelay:
      return CriticalBound::kKernelLaunchOverhead;
    case CpEdgeType::kDependency:
    case CpEdgeType::kSyncDependency:
      return CriticalBound::kNone;
    case CpEdgeType::kOperatorKernel:
      break;
  }
  const HtaRow* r = h.At(g.AttributedEvent(e));
  if (r == nullptr) return CriticalBound::kCpu;
  if (r->OnCpu())
    return g.IsDataLoading(r->event->name) ? CriticalBound::kDataLoading : CriticalBound::kCpu;
  return IsCommunication(h.Name(*r)) ? CriticalBound::kGpuCommunication
                                     : CriticalBound::kGpuCompute;
}

void Summarise(const HtaRows& h, const CpGraph& g, const std::vector<uint32_t>& nodes,
               CriticalPath& path) {
  path.nodes = nodes.size();
  std::unordered_map<std::string, double> cpu_ops;
  for (size_t i = 1; i < nodes.size(); ++i) {
    const CpEdge& e = g.EdgeBetween(nodes[i - 1], nodes[i]);
    path.total_us += e.weight;
    const CriticalBound b = BoundOf(h, g, e);
    if (b == CriticalBound::kNone) continue;
    path.by_bound_us[static_cast<int>(b)] += e.weight;
    if (b != CriticalBound::kCpu || e.weight <= 0) continue;
    const HtaRow* r = h.At(g.AttributedEvent(e));
    if (r == nullptr) continue;
    const std::string& name = h.Name(*r);
    // the step's own time between its ops names no op to make cheaper
    if (!name.starts_with("ProfilerStep#")) cpu_ops[name] += e.weight;
  }
  for (int b = 0; b < kCriticalBounds; ++b)
    path.summary_pct[b] = path.total_us != 0 ? 100 * path.by_bound_us[b] / path.total_us : 0;
  for (auto& [name, us] : cpu_ops) path.top_cpu_ops.push_back({name, us});
  std::sort(path.top_cpu_ops.begin(), path.top_cpu_ops.end(),
            [](const CriticalOp& a, const CriticalOp& b) {
              return a.us != b.us ? a.us > b.us : a.name < b.name;
            });
  if (path.top_cpu_ops.size() > 5) path.top_cpu_ops.resize(5);
}

}  // namespace

std::optional<CriticalPath> FindCriticalPath(const TraceFile& trace,
                                             const CriticalPathRequest& request,
                                             std::string* why_not) {
  CriticalPath path;
  std::optional<HtaRows> rows = HtaRowsFor(trace, request, path, why_not);
  if (!rows) return std::nullopt;
  CpGraph g(*rows);
  std::optional<std::vector<uint32_t>> nodes = g.LongestPath(why_not);
  if (!nodes) return std::nullopt;
  Summarise(*rows, g, *nodes, path);
  return path;
}

}  // namespace stallscope
