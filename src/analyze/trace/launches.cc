// Kernel launch statistics: see launches.h.
#include "analyze/trace/launches.h"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <vector>

#include "analyze/trace/queue.h"

namespace stallscope {
namespace {

// HTA's launch calls for these statistics (get_cuda_kernel_launch_stats'
// own list): its symbol table's launch calls, less the driver's cuLaunchKernel
// and cuLaunchKernelEx and every HIP call. What is left: cudaLaunchKernel,
// cudaLaunchKernelExC, cudaMemcpyAsync, cudaMemsetAsync and runFunction.
bool IsLaunchCall(std::string_view name) {
  return IsHtaLaunch(name) && (name.starts_with("cuda") || name.starts_with("runFunction"));
}

struct Row {
  int64_t correlation = 0;
  double start = 0, dur = 0;
  uint32_t name = 0;
  bool launch_call = false;
};

// The kept rows with a correlation, each side, by correlation (a sort and a
// merge: far cheaper than a map of lists on a trace of a million rows).
void RowsByCorrelation(const TraceFile& trace, const LaunchRowFilter& filter, std::vector<Row>& cpu,
                       std::vector<Row>& gpu) {
  const bool round = trace.fractional_times;
  std::vector<char> launch_name(trace.names.size());
  for (size_t i = 0; i < trace.names.size(); ++i) launch_name[i] = IsLaunchCall(trace.names[i]);
  for (const TraceEvent& e : trace.events) {
    if (e.correlation < 0) continue;
    Row r{e.correlation, e.ts, e.dur, e.name, false};
    if (round) {
      r.start = std::ceil(e.ts);
      r.dur = std::floor(e.ts + e.dur) - r.start;
    }
    if (e.stream != -1) {
      gpu.push_back(r);
    } else if (filter.cpu_kept(r.start)) {
      r.launch_call = launch_name[e.name] != 0;
      cpu.push_back(r);
    }
  }
  auto by_correlation = [](const Row& a, const Row& b) { return a.correlation < b.correlation; };
  std::stable_sort(cpu.begin(), cpu.end(), by_correlation);
  std::stable_sort(gpu.begin(), gpu.end(), by_correlation);
}

}  // namespace

LaunchStats SummarizeLaunches(const TraceFile& trace, const LaunchRowFilter& filter) {
  LaunchStats out;
  std::vector<Row> cpu, gpu;
  RowsByCorrelation(trace, filter, cpu, gpu);
  std::vector<std::vector<double>> delays(trace.names.size());  // by the GPU row's name
  size_t g = 0;
  for (size_t c = 0; c < cpu.size();) {
    const int64_t correlation = cpu[c].correlation;
    size_t c_end = c;
    bool launched = false;
    while (c_end < cpu.size() && cpu[c_end].correlation == correlation) {
      launched = launched || cpu[c_end].launch_call;
      ++c_end;
    }
    while (g < gpu.size() && gpu[g].correlation < correlation) ++g;
    size_t g_end = g;
    while (g_end < gpu.size() && gpu[g_end].correlation == correlation) ++g_end;
    // HTA's joins: every CPU row of a launch call's correlation with every
    // GPU row, each GPU row once per kept CPU row when HTA cut the trace.
    const size_t copies = filter.duplicate_by_launch ? c_end - c : 1;
    for (size_t i = c; launched && i < c_end; ++i) {
      const Row& call = cpu[i];
      for (size_t j = g; j < g_end; ++j) {
        const Row& row = gpu[j];
        const double delay = std::max(0.0, row.start - call.start - call.dur);
        out.launches += copies;
        out.cpu_us += call.dur * static_cast<double>(copies);
        out.gpu_us += row.dur * static_cast<double>(copies);
        if (call.dur <= kLaunchRuntimeCutoffUs && row.dur < call.dur) out.short_gpu += copies;
        if (call.dur > kLaunchRuntimeCutoffUs) out.runtime_outliers += copies;
        if (delay > kLaunchDelayCutoffUs) out.delay_outliers += copies;
        delays[row.name].insert(delays[row.name].end(), copies, delay);
      }
    }
    c = c_end;
  }
  for (uint32_t name = 0; name < delays.size(); ++name) {
    std::vector<double>& list = delays[name];
    if (list.empty()) continue;
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
