// The launch queue per stream: see queue.h.
#include "analyze/trace/queue.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string_view>
#include <unordered_map>

namespace stallscope {

bool IsHtaLaunch(std::string_view name) {
  static constexpr std::string_view kNames[] = {
      "cudaLaunchKernel",    "cudaLaunchKernelExC",
      "cuLaunchKernel",      "cuLaunchKernelEx",
      "cudaMemcpyAsync",     "cudaMemsetAsync",
      "hipLaunchKernel",     "hipExtModuleLaunchKernel",
      "hipMemcpyAsync",      "hipMemsetAsync",
      "hipMemcpyWithStream", "runFunction - job_prep_and_submit_for_execution"};
  return std::find(std::begin(kNames), std::end(kNames), name) != std::end(kNames);
}

namespace {

struct Change {
  double ts = 0;
  int order = 0;  // launches before GPU rows at one time, as HTA concatenates them
  int delta = 0;
};

StreamQueueLength Describe(int stream, const std::vector<double>& lengths) {
  StreamQueueLength s;
  s.stream = stream;
  s.count = lengths.size();
  double sum = 0;
  for (double v : lengths) sum += v;
  s.mean = sum / static_cast<double>(lengths.size());
  if (lengths.size() > 1) {
    double sq = 0;
    for (double v : lengths) sq += (v - s.mean) * (v - s.mean);
    s.std = std::sqrt(sq / static_cast<double>(lengths.size() - 1));
  }
  std::vector<double> sorted = lengths;
  std::sort(sorted.begin(), sorted.end());
  s.min = sorted.front();
  s.max = sorted.back();
  s.p25 = LinearQuantile(sorted, 0.25);
  s.p50 = LinearQuantile(sorted, 0.5);
  s.p75 = LinearQuantile(sorted, 0.75);
  return s;
}

// Each stream's changes, in time order: +1 at each launch call, -1 at each
// GPU row's start, only for pairs sharing a correlation.
std::map<int, std::vector<Change>> QueueChanges(const TraceFile& trace,
                                                const std::function<bool(double)>& cpu_kept,
                                                double& first_ts, double& last_ts) {
  const bool round = trace.fractional_times;
  auto StartOf = [round](const TraceEvent& e) { return round ? std::ceil(e.ts) : e.ts; };
  std::unordered_map<int64_t, const TraceEvent*> gpu_by_correlation;
  first_ts = std::numeric_limits<double>::infinity();
  last_ts = -first_ts;
  auto span = [&](double ts) {
    first_ts = std::min(first_ts, ts);
    last_ts = std::max(last_ts, ts);
  };
  for (const TraceEvent& e : trace.events) {
    if (e.stream == -1 && cpu_kept(StartOf(e))) span(StartOf(e));
    if (e.stream != -1 && e.correlation >= 0) gpu_by_correlation.emplace(e.correlation, &e);
  }
  std::map<int, std::vector<Change>> changes;
  for (const TraceEvent& e : trace.events) {
    if (e.stream != -1 || !IsHtaLaunch(trace.names[e.name]) || !cpu_kept(StartOf(e))) continue;
    auto gpu = gpu_by_correlation.find(e.correlation);
    if (gpu == gpu_by_correlation.end()) continue;
    auto& stream = changes[gpu->second->stream];
    stream.push_back({StartOf(e), 0, +1});
    stream.push_back({StartOf(*gpu->second), 1, -1});
    span(StartOf(*gpu->second));
  }
  for (auto& [stream, list] : changes) {
    std::stable_sort(list.begin(), list.end(), [](const Change& a, const Change& b) {
      return a.ts != b.ts ? a.ts < b.ts : a.order < b.order;
    });
  }
  return changes;
}

}  // namespace

double LinearQuantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

QueueLengthSummary SummarizeQueueLength(const TraceFile& trace,
                                        const std::function<bool(double)>& cpu_kept) {
  QueueLengthSummary out;
  double first_ts = 0, last_ts = 0;
  const auto changes = QueueChanges(trace, cpu_kept, first_ts, last_ts);
  for (const auto& [stream, list] : changes) {
    std::vector<double> lengths;
    lengths.reserve(list.size());
    int64_t length = 0;
    double full_us = 0;
    bool reached = false;
    for (size_t i = 0; i < list.size(); ++i) {
      length += list[i].delta;
      lengths.push_back(static_cast<double>(length));
      if (length < kCudaMaxLaunchQueue) continue;
      reached = true;
      if (i + 1 < list.size()) full_us += list[i + 1].ts - list[i].ts;
    }
    out.streams.push_back(Describe(stream, lengths));
    if (reached) {
      const double span = last_ts - first_ts;
      out.blocked = QueueBlocked{stream, full_us, span > 0 ? full_us / span : 0};
    }
  }
  return out;
}

}  // namespace stallscope
