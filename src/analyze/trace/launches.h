// Kernel launch statistics of one rank's profiler trace, as Holistic Trace
// Analysis (HTA) defines them (get_cuda_kernel_launch_stats): each CPU launch
// call (cudaLaunchKernel, cudaLaunchKernelExC, cudaMemcpyAsync,
// cudaMemsetAsync) paired with its GPU row by correlation. The launch delay
// is the GPU row's start less the call's end, at least 0. Counted: GPU rows
// shorter than their call where the call is at most the runtime cut-off
// (50 µs), calls over that cut-off, and delays over the delay cut-off
// (100 µs). Per kernel name, the delay's p50 and p99. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sample/trace.h"

namespace stallscope {

inline constexpr double kLaunchRuntimeCutoffUs = 50;
inline constexpr double kLaunchDelayCutoffUs = 100;

struct KernelLaunchDelay {
  std::string name;  // the GPU row's name
  uint64_t launches = 0;
  double p50_us = 0, p99_us = 0;  // linear interpolation, as pandas
  double sum_us = 0;              // of the delays
};

struct LaunchStats {
  uint64_t launches = 0;          // call/GPU row pairs
  uint64_t short_gpu = 0;         // GPU row shorter than a call of at most the runtime cut-off
  uint64_t runtime_outliers = 0;  // calls over the runtime cut-off
  uint64_t delay_outliers = 0;    // launch delays over the delay cut-off
  double cpu_us = 0;              // summed call durations
  double gpu_us = 0;              // summed GPU row durations
  std::vector<KernelLaunchDelay> kernels;  // by name
};

// The rows HTA keeps: `cpu_kept(start)` for CPU-side rows; a GPU row is kept
// with its launch, once per kept CPU row of its correlation when
// `duplicate_by_launch` (HTA's join when it cuts the last step).
struct LaunchRowFilter {
  std::function<bool(double)> cpu_kept;
  bool duplicate_by_launch = false;
};

LaunchStats SummarizeLaunches(const TraceFile& trace, const LaunchRowFilter& filter);

// The `n` kernel names with the largest summed launch delay, largest first.
std::vector<KernelLaunchDelay> TopLaunchDelays(const LaunchStats& stats, size_t n);

}  // namespace stallscope
