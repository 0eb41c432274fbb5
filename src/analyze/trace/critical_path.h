// The critical path of one rank's profiler trace, as Holistic Trace
// Analysis' critical_path_analysis (HTA) finds it, built the same way so the
// figures match: HTA's rows and window (critical_rows.h), HTA's graph
// of op, runtime call and GPU row starts and ends with its call stack,
// runtime lock, launch, kernel-to-kernel and sync edges
// (critical_graph.h), the longest path as networkx finds it over one
// instance of an annotation (by default the second ProfilerStep), each edge
// bound by one of HTA's six kinds. One difference, where HTA is wrong: the
// data loader's steps are `data_loading` by their full name (HTA matches the
// shortened name and never finds them). Work is linear in the events after
// sorts by time. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sample/trace.h"

namespace stallscope {

// HTA's BoundType, in its order.
enum class CriticalBound : uint8_t {
  kCpu,
  kGpuCompute,
  kGpuCommunication,
  kKernelKernelOverhead,
  kKernelLaunchOverhead,
  kDataLoading,
  kNone,  // dependency and sync edges: HTA's "" bound
};
inline constexpr int kCriticalBounds = 6;
std::string_view CriticalBoundName(CriticalBound b);  // "cpu_bound", ...

struct CriticalPathRequest {
  std::string annotation;                 // "" with no instance: ProfilerStep, or the whole trace
  std::optional<int64_t> first_instance;  // 0-based, as HTA's instance_id
  std::optional<int64_t> last_instance;   // inclusive
  bool include_last_step = false;         // as HTA's include_last_profiler_step
};

struct CriticalOp {
  std::string name;
  double us = 0;  // cpu_bound time on the path
};

struct CriticalPath {
  std::string annotation;  // "" : the whole trace
  int64_t first_instance = 0, last_instance = 0;
  double start_us = 0, end_us = 0;  // the instance's window
  uint64_t nodes = 0;               // on the path
  double total_us = 0;              // summed edge weights on the path
  double by_bound_us[kCriticalBounds] = {};
  double summary_pct[kCriticalBounds] = {};  // of total_us, as HTA's summary()
  std::vector<CriticalOp> top_cpu_ops;       // largest first, at most 5
};

// The path. nullopt: no instance of the annotation (the text says which).
std::optional<CriticalPath> FindCriticalPath(const TraceFile& trace,
                                             const CriticalPathRequest& request,
                                             std::string* why_not);

}  // namespace stallscope
