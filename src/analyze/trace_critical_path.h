// The critical path of one rank's profiler trace, after Holistic Trace
// Analysis' critical_path_analysis (HTA): every CPU op and GPU row is a start
// and an end node; edges run through each op's call stack (a child's time is
// its own, the time between children its parent's), from a launch call to
// its GPU row (launch overhead), from one GPU row to the next on its stream
// (kernel-to-kernel overhead), from a GPU row's end to the blocking sync that
// waited for it. The longest path through that graph, over one instance of an
// annotation (by default the second ProfilerStep), is the critical path; each
// of its edges is bound by one of HTA's six kinds. Work is linear in the
// events after one sort. Differences from HTA: the trace's CPU rows are read
// as one call stack (the reader keeps no thread id), and a sync edge comes
// from the last GPU row that ended before the sync did. Pure; thread-safe.
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
