// The CUDA launch queue of each stream of one rank's profiler trace, as
// Holistic Trace Analysis (HTA) defines it (get_queue_length_summary,
// get_time_spent_blocked_on_full_queue): a launch call on the CPU
// (cudaLaunchKernel, cudaMemcpyAsync, ... with a GPU row of the same
// correlation) adds one to its GPU row's stream; the GPU row's start takes one
// off. The queue length is that running count, one value per change; its
// summary is pandas' describe() of those values per stream. Blocked on a full
// queue: the time the length is at or above the CUDA limit (1024). Pure;
// thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "sample/trace.h"

namespace stallscope {

// CUDA's launch queue per stream (HTA's CUDA_MAX_LAUNCH_QUEUE_PER_STREAM).
inline constexpr int64_t kCudaMaxLaunchQueue = 1024;

struct StreamQueueLength {
  int stream = 0;
  uint64_t count = 0;  // changes of the length
  double mean = 0;
  std::optional<double> std;  // sample standard deviation; nullopt with one value
  double min = 0, p25 = 0, p50 = 0, p75 = 0, max = 0;  // linear interpolation
};

struct QueueBlocked {
  int stream = 0;
  double us = 0;     // time at the CUDA limit or above
  double share = 0;  // of the trace's span (first to last start of any row)
};

struct QueueLengthSummary {
  std::vector<StreamQueueLength> streams;  // by stream number
  // HTA reports one stream per rank: the highest-numbered stream that
  // reached the limit. nullopt: no stream did.
  std::optional<QueueBlocked> blocked;
};

// HTA's runtime launch calls, its symbol table's launch mask
// (cudaLaunchKernel, cuLaunchKernel, cudaMemcpyAsync, their HIP forms, ...):
// what the queue length and the critical path count as a launch. The launch
// statistics use a shorter list (see launches.cc).
bool IsHtaLaunch(std::string_view name);

// pandas' quantile (linear interpolation) of sorted values; 0 when empty.
double LinearQuantile(const std::vector<double>& sorted, double q);

// `cpu_kept(start)`: whether a CPU-side row starting then is kept (HTA's
// trace without its last step); a GPU row is kept with its launch.
QueueLengthSummary SummarizeQueueLength(const TraceFile& trace,
                                        const std::function<bool(double)>& cpu_kept);

}  // namespace stallscope
