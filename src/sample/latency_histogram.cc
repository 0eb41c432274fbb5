#include "sample/latency_histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace stallscope {
namespace {

constexpr int kSubBits = 6;                            // 64 buckets per power of two
constexpr uint64_t kLinear = uint64_t{2} << kSubBits;  // 128 exact buckets below 128 ns
constexpr size_t kBuckets = kLinear + (64 - (kSubBits + 1)) * (uint64_t{1} << kSubBits);

}  // namespace

LatencyHistogram::LatencyHistogram() : buckets_(kBuckets, 0) {}

size_t LatencyHistogram::BucketOf(uint64_t v) {
  if (v < kLinear) return static_cast<size_t>(v);
  int e = 63 - std::countl_zero(v);  // 2^e <= v < 2^(e+1), e >= 7
  int shift = e - kSubBits;          // v >> shift in [64, 127]
  uint64_t sub = (v >> shift) - (uint64_t{1} << kSubBits);
  return static_cast<size_t>(
      kLinear + static_cast<uint64_t>(e - (kSubBits + 1)) * (uint64_t{1} << kSubBits) + sub);
}

uint64_t LatencyHistogram::BucketLow(size_t bucket) {
  if (bucket < kLinear) return bucket;
  uint64_t group = (bucket - kLinear) >> kSubBits;  // e - 7
  uint64_t sub = (bucket - kLinear) & ((uint64_t{1} << kSubBits) - 1);
  int shift = static_cast<int>(group) + 1;  // e - kSubBits
  return ((uint64_t{1} << kSubBits) + sub) << shift;
}

uint64_t LatencyHistogram::BucketWidth(size_t bucket) {
  if (bucket < kLinear) return 1;
  uint64_t group = (bucket - kLinear) >> kSubBits;
  return uint64_t{1} << (group + 1);
}

void LatencyHistogram::Record(uint64_t nanoseconds) {
  ++buckets_[BucketOf(nanoseconds)];
  ++count_;
  min_ = std::min(min_, nanoseconds);
  max_ = std::max(max_, nanoseconds);
  sum_ += static_cast<long double>(nanoseconds);
}

void LatencyHistogram::Merge(const LatencyHistogram& other) {
  for (size_t i = 0; i < kBuckets; ++i) buckets_[i] += other.buckets_[i];
  count_ += other.count_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
  sum_ += other.sum_;
}

double LatencyHistogram::mean() const {
  return count_ == 0 ? 0.0 : static_cast<double>(sum_ / static_cast<long double>(count_));
}

uint64_t LatencyHistogram::Percentile(double p) const {
  if (count_ == 0) return 0;
  p = std::clamp(p, 0.0, 1.0);
  // Nearest rank: the smallest sample with at least p of the samples at or below it.
  uint64_t rank = static_cast<uint64_t>(std::ceil(p * static_cast<double>(count_)));
  rank = std::clamp<uint64_t>(rank, 1, count_);
  uint64_t seen = 0;
  for (size_t i = 0; i < kBuckets; ++i) {
    seen += buckets_[i];
    if (seen >= rank) {
      uint64_t mid = BucketLow(i) + BucketWidth(i) / 2;
      return std::clamp(mid, min(), max_);
    }
  }
  return max_;
}

}  // namespace stallscope
