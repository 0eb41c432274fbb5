// LatencyHistogram: the latencies of millions of IOs in fixed memory, with
// percentiles to within 1/128 (0.8%) of the true value.
//
// A log-linear histogram as fio keeps (its clat percentiles come from 64
// sub-buckets per power of two; we keep 128): values below 128 ns have a
// bucket each; above, each power of two [2^e, 2^(e+1)) is split into 64
// equal buckets. A percentile is the midpoint of the bucket holding the
// nearest-rank sample, clamped to the exact min and max, so small samples and
// the extremes are exact. Record() is a few instructions, cheap enough for
// every completed IO. One histogram per thread; Merge() joins them after the
// threads end. Not thread-safe. The read and metadata phases of `bench io`
// (bench/read_phase.h, bench/metadata_phase.h) fill it; render/bench_io.h
// reads its percentiles.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace stallscope {

class LatencyHistogram {
 public:
  LatencyHistogram();

  void Record(uint64_t nanoseconds);
  void Merge(const LatencyHistogram& other);

  uint64_t count() const { return count_; }
  uint64_t min() const { return count_ ? min_ : 0; }
  uint64_t max() const { return max_; }
  double mean() const;  // 0 when empty
  // p in [0, 1]: the nearest-rank percentile (0.5 -> p50); 0 when empty.
  uint64_t Percentile(double p) const;

  static size_t BucketOf(uint64_t nanoseconds);
  static uint64_t BucketLow(size_t bucket);    // smallest value in the bucket
  static uint64_t BucketWidth(size_t bucket);  // values it holds

 private:
  std::vector<uint64_t> buckets_;
  uint64_t count_ = 0;
  uint64_t min_ = UINT64_MAX;
  uint64_t max_ = 0;
  long double sum_ = 0;
};

}  // namespace stallscope
