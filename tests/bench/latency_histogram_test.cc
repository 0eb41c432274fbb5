#include "sample/latency_histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace stallscope {
namespace {

TEST(LatencyHistogram, EmptyIsZero) {
  LatencyHistogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.Percentile(0.5), 0u);
  EXPECT_EQ(h.mean(), 0.0);
  EXPECT_EQ(h.min(), 0u);
}

TEST(LatencyHistogram, SmallValuesAreExactNearestRank) {
  LatencyHistogram h;
  for (uint64_t v = 1; v <= 100; ++v) h.Record(v);
  EXPECT_EQ(h.Percentile(0.50), 50u);
  EXPECT_EQ(h.Percentile(0.99), 99u);
  EXPECT_EQ(h.Percentile(1.0), 100u);
  EXPECT_EQ(h.Percentile(0.0), 1u);
  EXPECT_DOUBLE_EQ(h.mean(), 50.5);
  EXPECT_EQ(h.min(), 1u);
  EXPECT_EQ(h.max(), 100u);
}

TEST(LatencyHistogram, BucketsTileTheRangeWithoutGaps) {
  for (size_t b = 0; b + 1 < 128 + 57 * 64; ++b) {
    ASSERT_EQ(LatencyHistogram::BucketLow(b) + LatencyHistogram::BucketWidth(b),
              LatencyHistogram::BucketLow(b + 1))
        << b;
  }
  for (uint64_t v :
       {0ull, 127ull, 128ull, 129ull, 1000ull, 123456789ull, (1ull << 63) + 5, ~0ull}) {
    size_t b = LatencyHistogram::BucketOf(v);
    EXPECT_LE(LatencyHistogram::BucketLow(b), v);
    EXPECT_GE(LatencyHistogram::BucketLow(b) + (LatencyHistogram::BucketWidth(b) - 1), v);
  }
}

// Against exact percentiles of a skewed sample (IO latencies have long
// tails): within 1/128 relative.
TEST(LatencyHistogram, PercentilesWithinOnePercentOfExact) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> dist(std::log(200e3), 0.8);  // ~200 us median
  std::vector<uint64_t> values;
  LatencyHistogram h;
  for (int i = 0; i < 200000; ++i) {
    uint64_t v = static_cast<uint64_t>(dist(rng));
    values.push_back(v);
    h.Record(v);
  }
  std::sort(values.begin(), values.end());
  for (double p : {0.5, 0.9, 0.99, 0.999}) {
    size_t rank = static_cast<size_t>(std::ceil(p * values.size()));
    double exact = static_cast<double>(values[rank - 1]);
    double got = static_cast<double>(h.Percentile(p));
    EXPECT_NEAR(got, exact, exact / 128.0) << "p" << p;
  }
  EXPECT_EQ(h.max(), values.back());
}

TEST(LatencyHistogram, MergeEqualsRecordingEverything) {
  LatencyHistogram a, b, all;
  for (uint64_t v = 0; v < 5000; ++v) {
    uint64_t x = v * v + 17;
    (v % 3 ? a : b).Record(x);
    all.Record(x);
  }
  a.Merge(b);
  EXPECT_EQ(a.count(), all.count());
  EXPECT_EQ(a.min(), all.min());
  EXPECT_EQ(a.max(), all.max());
  EXPECT_DOUBLE_EQ(a.mean(), all.mean());
  for (double p : {0.01, 0.5, 0.99}) EXPECT_EQ(a.Percentile(p), all.Percentile(p));
}

}  // namespace
}  // namespace stallscope
