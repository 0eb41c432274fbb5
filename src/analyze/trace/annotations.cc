// User annotations' GPU time: see annotations.h.
#include "analyze/trace/annotations.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "analyze/trace/queue.h"

namespace stallscope {
namespace {

UserAnnotationTime Describe(std::string name, const std::vector<double>& values) {
  UserAnnotationTime a;
  a.name = std::move(name);
  a.count = values.size();
  a.min_us = values.front();
  a.max_us = values.front();
  for (double v : values) {
    a.sum_us += v;
    a.min_us = std::min(a.min_us, v);
    a.max_us = std::max(a.max_us, v);
  }
  const auto n = static_cast<double>(values.size());
  a.mean_us = a.sum_us / n;
  if (values.size() > 1) {
    double sq = 0;
    for (double v : values) sq += (v - a.mean_us) * (v - a.mean_us);
    a.std_us = std::sqrt(sq / (n - 1));
  }
  return a;
}

}  // namespace

std::vector<UserAnnotationTime> SummarizeUserAnnotations(
    const std::vector<std::pair<std::string_view, double>>& rows, size_t max_names,
    double duration_ratio) {
  std::map<std::string_view, std::vector<double>> by_name;
  for (const auto& [name, dur] : rows) by_name[name].push_back(dur);
  std::vector<UserAnnotationTime> out;
  for (const auto& [name, values] : by_name) out.push_back(Describe(std::string(name), values));
  if (out.size() <= max_names) return out;
  // HTA: largest sum first (a stable sort of the by-name list), then the
  // running sum's quantile cuts the rest into "others", figures of the sums.
  std::stable_sort(
      out.begin(), out.end(),
      [](const UserAnnotationTime& a, const UserAnnotationTime& b) { return a.sum_us > b.sum_us; });
  std::vector<double> running;
  double total = 0;
  for (const UserAnnotationTime& a : out) running.push_back(total += a.sum_us);
  std::vector<double> sorted = running;
  std::sort(sorted.begin(), sorted.end());
  const double cut = LinearQuantile(sorted, duration_ratio);
  std::map<std::string, std::vector<double>> grouped;
  for (size_t i = 0; i < out.size(); ++i) {
    const bool rest = running[i] > cut || i >= max_names;
    grouped[rest ? std::string("others") : out[i].name].push_back(out[i].sum_us);
  }
  std::vector<UserAnnotationTime> result;
  for (const auto& [name, sums] : grouped) {
    UserAnnotationTime a = Describe(name, sums);
    a.count = 0;
    for (const UserAnnotationTime& o : out) {
      if (name == o.name || (name == "others" && !grouped.contains(o.name))) a.count += o.count;
    }
    result.push_back(std::move(a));
  }
  return result;
}

}  // namespace stallscope
