#include "analyze/robust_slope.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace stallscope {
namespace {

// Median of an unsorted, non-empty vector; reorders it.
double Median(std::vector<double>& values) {
  size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  double lower =
      *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lower + upper) / 2;
}

// SplitMix64: tiny, fast and good enough to spread sampled pairs evenly; a
// fixed seed keeps the fit reproducible.
struct SplitMix64 {
  uint64_t state;
  uint64_t Next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
};

constexpr uint64_t kPairSeed = 0x5354414C4C53434Full;  // "STALLSCO"

}  // namespace

std::optional<SlopeFit> TheilSen(std::span<const double> x, std::span<const double> y,
                                 size_t max_pairs) {
  const size_t n = x.size();
  if (n != y.size() || n < 2 || max_pairs == 0) return std::nullopt;

  std::vector<double> slopes;
  auto add_pair = [&](size_t i, size_t j) {
    double dx = x[j] - x[i];
    if (dx == 0) return;
    slopes.push_back((y[j] - y[i]) / dx);
  };
  const size_t all_pairs = n * (n - 1) / 2;
  if (all_pairs <= max_pairs) {
    slopes.reserve(all_pairs);
    for (size_t i = 0; i + 1 < n; ++i) {
      for (size_t j = i + 1; j < n; ++j) add_pair(i, j);
    }
  } else {
    slopes.reserve(max_pairs);
    SplitMix64 random{kPairSeed ^ n};
    for (size_t drawn = 0; drawn < max_pairs; ++drawn) {
      size_t i = random.Next() % n;
      size_t j = random.Next() % (n - 1);
      if (j >= i) ++j;  // a distinct second point, uniform over the others
      add_pair(std::min(i, j), std::max(i, j));
    }
  }
  if (slopes.empty()) return std::nullopt;

  SlopeFit fit;
  fit.pairs = slopes.size();
  fit.slope = Median(slopes);
  std::vector<double> offsets(n);
  for (size_t i = 0; i < n; ++i) offsets[i] = y[i] - fit.slope * x[i];
  fit.intercept = Median(offsets);
  return fit;
}

double RobustResidualSigma(std::span<const double> x, std::span<const double> y,
                           const SlopeFit& fit) {
  const size_t n = std::min(x.size(), y.size());
  if (n < 2) return 0;
  std::vector<double> residuals(n);
  for (size_t i = 0; i < n; ++i) {
    residuals[i] = std::fabs(y[i] - (fit.intercept + fit.slope * x[i]));
  }
  // 1.4826 turns the median absolute deviation of normal noise into its
  // standard deviation.
  return 1.4826 * Median(residuals);
}

}  // namespace stallscope
