// Kernel launch statistics: see trace_launches.h.
#include "analyze/trace_launches.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string_view>
#include <unordered_map>

#include "analyze/trace_queue.h"

namespace stallscope {
namespace {

// HTA's launch calls for these statistics (not cuLaunchKernel nor HIP's).
bool IsLaunchCall(std::string_view name) {
  return name == "cudaLaunchKernel" || name == "cudaLaunchKernelExC" || name == "cudaMemcpyAsync" ||
         name == "cudaMemsetAsync" || name == "runFunction - job_prep_and_submit_for_execution";
}

struct Row {
  double start = 0, dur = 0;
  uint32_t name = 0;
};

struct Rows {
  std::unordered_map<int64_t, std::vector<Row>> cpu, gpu;  // by correlation
};

// The kept rows of the launch calls' correlations, each side.
Rows RowsByCorrelation(const TraceFile& trace, const LaunchRowFilter& filter) {
  const bool round = trace.fractional_times;
  auto row = [round](const TraceEvent& e) {
    if (!round) return Row{e.ts, e.dur, e.name};
    const double start = std::ceil(e.ts);
    return Row{start, std::floor(e.ts + e.dur) - start, e.name};
  };
  std::unordered_map<int64_t, uint32_t> launch_calls;  // kept calls; CPU rows per correlation
  std::unordered_map<int64_t, uint32_t> cpu_rows;
  for (const TraceEvent& e : trace.events) {
    if (e.stream != -1 || e.correlation < 0 || !filter.cpu_kept(row(e).start)) continue;
    ++cpu_rows[e.correlation];
    if (IsLaunchCall(trace.names[e.name])) ++launch_calls[e.correlation];
  }
  Rows out;
  for (const TraceEvent& e : trace.events) {
    if (e.correlation < 0 || !launch_calls.contains(e.correlation)) continue;
    if (e.stream == -1) {
      if (filter.cpu_kept(row(e).start)) out.cpu[e.correlation].push_back(row(e));
      continue;
    }
    const uint32_t copies = filter.duplicate_by_launch ? cpu_rows[e.correlation] : 1;
    for (uint32_t k = 0; k < copies; ++k) out.gpu[e.correlation].push_back(row(e));
  }
  return out;
}

}  // namespace

LaunchStats SummarizeLaunches(const TraceFile& trace, const LaunchRowFilter& filter) {
  LaunchStats out;
  const Rows rows = RowsByCorrelation(trace, filter);
  std::map<uint32_t, std::vector<double>> delays;  // by the GPU row's name
  for (const auto& [correlation, cpu] : rows.cpu) {
    auto gpu = rows.gpu.find(correlation);
    if (gpu == rows.gpu.end()) continue;
    for (const Row& c : cpu) {
      for (const Row& g : gpu->second) {
        const double delay = std::max(0.0, g.start - c.start - c.dur);
        ++out.launches;
        out.cpu_us += c.dur;
        out.gpu_us += g.dur;
        if (c.dur <= kLaunchRuntimeCutoffUs && g.dur < c.dur) ++out.short_gpu;
        if (c.dur > kLaunchRuntimeCutoffUs) ++out.runtime_outliers;
        if (delay > kLaunchDelayCutoffUs) ++out.delay_outliers;
        delays[g.name].push_back(delay);
      }
    }
  }
  for (auto& [name, list] : delays) {
    std::sort(list.begin(), list.end());
    KernelLaunchDelay k;
    k.name = trace.names[name];
    k.launches = list.size();
    k.p50_us = LinearQuantile(list, 0.5);
    k.p99_us = LinearQuantile(list, 0.99);
    for (double d : list) k.sum_us += d;
    out.kernels.push_back(std::move(k));
  }
  std::sort(out.kernels.begin(), out.kernels.end(),
            [](const KernelLaunchDelay& a, const KernelLaunchDelay& b) { return a.name < b.name; });
  return out;
}

std::vector<KernelLaunchDelay> TopLaunchDelays(const LaunchStats& stats, size_t n) {
  std::vector<KernelLaunchDelay> top = stats.kernels;
  std::sort(top.begin(), top.end(), [](const KernelLaunchDelay& a, const KernelLaunchDelay& b) {
    return a.sum_us != b.sum_us ? a.sum_us > b.sum_us : a.name < b.name;
  });
  if (top.size() > n) top.resize(n);
  return top;
}

}  // namespace stallscope
