// What a counter's fall means, per policy (sample/counter_delta.h), and the
// callers that apply each: diskstats' milliseconds wrap at 2^32, its request
// counts and vmstat's counters fall to no events, a process's bytes to no
// figure.
#include "sample/counter_delta.h"

#include <gtest/gtest.h>

#include "sample/disk_rates.h"
#include "sample/memory.h"

namespace stallscope {
namespace {

TEST(CounterDelta, EachPolicyAnswersAFall) {
  EXPECT_EQ(CounterDelta(10, 15, OnReset::kZero), 5u);
  EXPECT_EQ(CounterDelta(10, 15, OnReset::kUnknown), 5u);
  EXPECT_EQ(CounterDelta(10, 15, OnReset::kWrap32), 5u);
  EXPECT_EQ(CounterDelta(15, 10, OnReset::kZero), 0u);
  EXPECT_EQ(CounterDelta(15, 10, OnReset::kUnknown), std::nullopt);
  // A %u field that wrapped: 2^32 - 6 -> 4 is 10 more.
  EXPECT_EQ(CounterDelta((uint64_t{1} << 32) - 6, 4, OnReset::kWrap32), 10u);
  // A value above 32 bits is no %u field: a fall there is a reset.
  EXPECT_EQ(CounterDelta(uint64_t{1} << 40, 4, OnReset::kWrap32), 0u);
  EXPECT_EQ(GrewOrZero(15, 10), 0u);
  EXPECT_EQ(GrewOrZero(10, 15), 5u);
}

TEST(CounterDelta, HostCountersThatFellCountNothing) {
  VmStat before, after;
  before.pswpin_pages = 1000;
  after.pswpin_pages = 10;  // a reset
  before.pgmajfault = 100;
  after.pgmajfault = 150;
  Result<VmStatRates> rates = ComputeVmStatRates(before, after, 1.0, 4096);
  ASSERT_TRUE(rates.ok());
  EXPECT_EQ(rates->swap_in_bytes_per_s, 0.0);
  EXPECT_EQ(rates->major_faults_per_s, 50.0);
}

}  // namespace
}  // namespace stallscope
