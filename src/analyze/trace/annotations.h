// The GPU time of each user annotation (torch.profiler.record_function's
// gpu_user_annotation rows) of one rank's profiler trace, as Holistic Trace
// Analysis (HTA) defines it (get_gpu_user_annotation_breakdown with its
// defaults): per name the summed, longest, shortest and mean duration and the
// sample standard deviation; with more than 1000 names, those past the 0.8
// quantile of the running sum (largest first) and past the 1000th become
// "others", and every figure is then one of the names' sums, as HTA
// aggregates (docs/commands/trace.md). Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace stallscope {

inline constexpr double kAnnotationDurationRatio = 0.8;
inline constexpr size_t kAnnotationMaxNames = 1000;

struct UserAnnotationTime {
  std::string name;  // "others" for the grouped rest
  uint64_t count = 0;
  double sum_us = 0, max_us = 0, min_us = 0, mean_us = 0, std_us = 0;
};

// `rows`: each annotation row's name and duration (µs). By name, as HTA
// sorts them.
std::vector<UserAnnotationTime> SummarizeUserAnnotations(
    const std::vector<std::pair<std::string_view, double>>& rows,
    size_t max_names = kAnnotationMaxNames, double duration_ratio = kAnnotationDurationRatio);

}  // namespace stallscope
