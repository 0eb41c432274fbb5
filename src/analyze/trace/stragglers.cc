// Potential stragglers across ranks: see stragglers.h.
#include "analyze/trace/stragglers.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

namespace stallscope {
namespace {

struct LastKernel {
  int rank = 0;
  double start = 0, dur = 0;
};
using KernelKey = std::tuple<int, int64_t, std::string>;  // stream, step, name

// Of each (rank, stream, step, name), the last long NCCL kernel.
std::map<KernelKey, std::vector<LastKernel>> LastLongKernels(
    const std::vector<StragglerFigures>& ranks, double min_dur) {
  std::map<KernelKey, std::vector<LastKernel>> out;
  for (const StragglerFigures& r : ranks) {
    std::map<KernelKey, LastKernel> last;
    for (const CommKernelRow& k : r.comm) {
      if (k.stream <= 0 || k.step <= 0 || k.dur < min_dur) continue;
      if (k.name.rfind("ncclKernel", 0) != 0) continue;
      LastKernel& l = last[{k.stream, k.step, k.name}];
      l = {r.rank, k.start, k.dur};
    }
    for (const auto& [key, l] : last) out[key].push_back(l);
  }
  return out;
}

double SampleStd(const std::vector<LastKernel>& list, double scale) {
  const auto n = static_cast<double>(list.size());
  double mean = 0;
  for (const LastKernel& l : list) mean += l.dur / scale;
  mean /= n;
  double sq = 0;
  for (const LastKernel& l : list) sq += (l.dur / scale - mean) * (l.dur / scale - mean);
  return std::sqrt(sq / (n - 1));
}

}  // namespace

PotentialStragglers FindPotentialStragglers(const std::vector<StragglerFigures>& ranks,
                                            int candidates) {
  PotentialStragglers out;
  candidates = std::max(1, candidates);
  std::set<int64_t> steps;
  double first = std::numeric_limits<double>::infinity(), last = -first;
  for (const StragglerFigures& r : ranks) {
    steps.insert(r.steps.begin(), r.steps.end());
    first = std::min(first, r.first_us);
    last = std::max(last, r.last_end_us);
  }
  if (steps.empty() || !(last > first)) {
    out.why_none = "no ProfilerStep in the traces";
    return out;
  }
  const double step_us = (last - first) / static_cast<double>(steps.size());
  const auto kernels = LastLongKernels(ranks, step_us * kStragglerMinStepShare);
  // Mean over the steps of the duration's std across ranks, per (stream, name).
  std::map<std::pair<int, std::string>, std::pair<double, int>> spread;
  for (const auto& [key, list] : kernels) {
    if (list.size() < 2) continue;
    auto& s = spread[{std::get<0>(key), std::get<2>(key)}];
    s.first += SampleStd(list, step_us);
    ++s.second;
  }
  if (spread.empty()) {
    out.why_none = ranks.size() < 2 ? "one rank: nothing to compare"
                                    : "no NCCL kernel (ncclKernel*) of 1% of a step on two ranks";
    return out;
  }
  auto best = spread.begin();
  for (auto it = spread.begin(); it != spread.end(); ++it) {
    if (it->second.first / it->second.second > best->second.first / best->second.second) best = it;
  }
  out.stream = best->first.first;
  out.kernel = best->first.second;
  // Per step: the ranks whose start is at or after the candidates-th latest.
  std::map<int, uint64_t> late;  // the ranks with that kernel, as HTA's series
  for (const auto& [key, list] : kernels) {
    if (std::get<0>(key) != out.stream || std::get<2>(key) != out.kernel) continue;
    ++out.steps;
    std::vector<double> starts;
    for (const LastKernel& l : list) starts.push_back(l.start);
    std::sort(starts.rbegin(), starts.rend());
    const double threshold = starts[std::min<size_t>(candidates, starts.size()) - 1];
    for (const LastKernel& l : list) late[l.rank] += l.start >= threshold ? 1 : 0;
  }
  for (const auto& [rank, n] : late) out.late_counts.push_back({rank, n});
  std::vector<std::pair<int, uint64_t>> order = out.late_counts;  // by rank
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  for (size_t i = 0; i < order.size() && i < static_cast<size_t>(candidates); ++i) {
    out.ranks.push_back(order[i].first);
  }
  return out;
}

}  // namespace stallscope
