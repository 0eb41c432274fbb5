// Theil-Sen: a straight-line fit that outliers cannot drag.
//
// The slope is the median of the slopes between pairs of points, the
// intercept the median of y - slope * x. Up to ~29% of the points can be
// arbitrarily wrong before the slope moves (ordinary least squares moves with
// one): an RSS sample read while a worker forks, a spike from a checkpoint,
// a zero from a process that was exiting. All n(n-1)/2 pairs are used while
// they fit in `max_pairs`; beyond that a fixed-seed generator draws
// `max_pairs` pairs, so a day of 1 s samples costs the same as ~450 points
// and the same input always gives the same answer. Pure; thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <span>

namespace stallscope {

// 100,000 slopes: nth_element over them takes about a millisecond, and the
// median of that many sampled slopes is within a fraction of a percent of the
// median over all pairs.
inline constexpr size_t kTheilSenMaxPairs = 100'000;

struct SlopeFit {
  double slope = 0;      // y units per x unit
  double intercept = 0;  // y at x = 0
  size_t pairs = 0;      // pairs whose slope entered the median (pairs with equal x do not)
};

// nullopt: x and y differ in length, fewer than 2 points, or no two x differ.
std::optional<SlopeFit> TheilSen(std::span<const double> x, std::span<const double> y,
                                 size_t max_pairs = kTheilSenMaxPairs);

// The spread of the points around the fit, as a standard deviation estimated
// from the median absolute residual (1.4826 * MAD): what "beyond noise"
// means for a fit that ignores outliers. 0 for fewer than 2 points.
double RobustResidualSigma(std::span<const double> x, std::span<const double> y,
                           const SlopeFit& fit);

}  // namespace stallscope
