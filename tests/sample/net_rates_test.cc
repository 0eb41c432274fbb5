#include "sample/net_rates.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace stallscope {
namespace {

NetDevCounters Counters(const char* name, uint64_t rx_bytes, uint64_t tx_bytes) {
  NetDevCounters c;
  c.name = name;
  c.rx_bytes = rx_bytes;
  c.tx_bytes = tx_bytes;
  return c;
}

TEST(ComputeNetRates, BytesAndPacketsPerSecondErrorsPerInterval) {
  NetDevCounters before = Counters("eth0", 1000, 500);
  before.rx_packets = 10;
  before.tx_packets = 5;
  before.rx_errs = 1;
  before.rx_frame = 1;
  before.rx_drop = 3;
  before.tx_carrier = 2;
  NetDevCounters after = Counters("eth0", 1000 + 2 * 1250000000ull, 500 + 2000);
  after.rx_packets = 10 + 200;
  after.tx_packets = 5 + 20;
  after.rx_errs = 2;
  after.rx_fifo = 4;
  after.rx_frame = 2;
  after.rx_drop = 10;
  after.tx_carrier = 3;
  after.tx_colls = 1;
  after.tx_drop = 1;
  Result<std::vector<NetRates>> rates = ComputeNetRates({before}, {after}, 2.0);
  ASSERT_TRUE(rates.ok()) << rates.status().ToString();
  ASSERT_EQ(rates->size(), 1u);
  const NetRates& r = (*rates)[0];
  EXPECT_EQ(r.name, "eth0");
  EXPECT_DOUBLE_EQ(r.seconds, 2.0);
  EXPECT_DOUBLE_EQ(r.rx_bytes_per_s, 1250000000.0);  // 10 Gb/s
  EXPECT_DOUBLE_EQ(r.tx_bytes_per_s, 1000.0);
  EXPECT_DOUBLE_EQ(r.rx_packets_per_s, 100.0);
  EXPECT_DOUBLE_EQ(r.tx_packets_per_s, 10.0);
  EXPECT_EQ(r.rx_errors, 1u + 4u + 1u);  // errs + fifo + frame
  EXPECT_EQ(r.tx_errors, 1u + 1u);       // carrier + colls
  EXPECT_EQ(r.rx_drops, 7u);
  EXPECT_EQ(r.tx_drops, 1u);
  EXPECT_FALSE(r.counters_reset);
}

TEST(ComputeNetRates, OnlyInterfacesInBothSamplesInAfterOrder) {
  Result<std::vector<NetRates>> rates = ComputeNetRates(
      {Counters("lo", 0, 0), Counters("eth0", 0, 0), Counters("gone", 0, 0)},
      {Counters("eth0", 10, 10), Counters("new0", 5, 5), Counters("lo", 4, 4)}, 1.0);
  ASSERT_TRUE(rates.ok());
  ASSERT_EQ(rates->size(), 2u);
  EXPECT_EQ((*rates)[0].name, "eth0");
  EXPECT_EQ((*rates)[1].name, "lo");
  EXPECT_DOUBLE_EQ((*rates)[1].rx_bytes_per_s, 4.0);
}

TEST(ComputeNetRates, CountersGoingBackwardsAreAResetNotAHugeRate) {
  Result<std::vector<NetRates>> rates =
      ComputeNetRates({Counters("veth1", 1000000, 10)}, {Counters("veth1", 100, 20)}, 1.0);
  ASSERT_TRUE(rates.ok());
  ASSERT_EQ(rates->size(), 1u);
  EXPECT_TRUE((*rates)[0].counters_reset);
  EXPECT_EQ((*rates)[0].rx_bytes_per_s, 0.0);
  EXPECT_EQ((*rates)[0].tx_bytes_per_s, 0.0);
}

TEST(ComputeNetRates, IntervalMustBePositive) {
  for (double seconds : {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    Result<std::vector<NetRates>> rates = ComputeNetRates({}, {}, seconds);
    ASSERT_FALSE(rates.ok()) << seconds;
    EXPECT_EQ(rates.status().code(), Status::Code::kInvalidArgument);
  }
}

}  // namespace
}  // namespace stallscope
