// Small numeric helpers over plain vectors of samples. Header-only; pure;
// thread-safe.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace stallscope {

// The middle value of `values` (a copy, sorted here); for an even count the
// mean of the two middle ones. 0 for no values.
inline double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

// The arithmetic mean; 0 for no values.
inline double Mean(const std::vector<double>& values) {
  double sum = 0;
  for (double v : values) sum += v;
  return values.empty() ? 0 : sum / static_cast<double>(values.size());
}

}  // namespace stallscope
