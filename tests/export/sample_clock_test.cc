// SampleClock counts late host samples; SharedRead decides when a scrape
// reads the host anew. Both on hand-made nanosecond times.
#include "export/sample_clock.h"

#include <gtest/gtest.h>

namespace stallscope {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

TEST(SampleClock, ASampleMoreThanOneAndAHalfIntervalsAfterTheLastIsLate) {
  SampleClock clock(kSecond);
  clock.Taken(10 * kSecond);
  EXPECT_EQ(clock.late(), 0u);                // the first has nothing before it
  EXPECT_EQ(clock.longest_gap_seconds(), 0);  // and no gap
  clock.Taken(11 * kSecond);
  clock.Taken(12 * kSecond + kSecond / 2);  // exactly 1.5 intervals: not late
  EXPECT_EQ(clock.late(), 0u);
  clock.Taken(14 * kSecond + 1);  // 1.5 intervals and a nanosecond
  EXPECT_EQ(clock.late(), 1u);
  EXPECT_EQ(clock.samples(), 4u);
  EXPECT_NEAR(clock.longest_gap_seconds(), 1.5, 1e-6);
}

TEST(SharedRead, ServesItsWindowThenAsksAgain) {
  SharedRead read(100'000'000);
  EXPECT_TRUE(read.Stale(0));  // nothing read yet, even at time 0
  read.Made(5 * kSecond);
  EXPECT_FALSE(read.Stale(5 * kSecond));
  EXPECT_FALSE(read.Stale(5 * kSecond + 99'999'999));
  EXPECT_TRUE(read.Stale(5 * kSecond + 100'000'000));
  read.Made(6 * kSecond);
  EXPECT_FALSE(read.Stale(6 * kSecond + 1));
}

}  // namespace
}  // namespace stallscope
