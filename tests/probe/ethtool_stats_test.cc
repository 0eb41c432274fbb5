// The `ethtool -S` file form of five drivers (tests/fixtures/congestion_host)
// read and summed: pause frames without double counting a total beside its
// priorities, XON frames left out, ECN/CNP, buffer drops, a cloud NIC's
// allowance counters; unknown names kept raw; bad lines named. The live
// ioctl is exercised on real veth pairs by e2e.nic_stats.
#include "probe/ethtool_stats.h"

#include <gtest/gtest.h>

#include <string>

namespace stallscope {
namespace {

const Root kHost(std::string(STALLSCOPE_FIXTURES) + "/congestion_host");

NicCongestion Sums(const std::string& interface) {
  Result<NicStats> stats = ReadNicStats(kHost, interface);
  EXPECT_TRUE(stats.ok()) << stats.status().message();
  if (!stats.ok()) return {};
  EXPECT_EQ(stats->interface, interface);
  EXPECT_NE(stats->source.find("ethtool/" + interface), std::string::npos);
  return SummarizeNicStats(*stats);
}

TEST(NicStats, Mlx5PauseIsTheTotalNotTotalPlusPriorities) {
  NicCongestion c = Sums("ens1f0np0");
  EXPECT_EQ(c.pause_rx, 52000u);  // rx_pause_ctrl_phy, also rx_prio3_pause: once
  EXPECT_EQ(c.pause_tx, 1800u);
  EXPECT_EQ(c.ecn_marked, 90311u);
  EXPECT_EQ(c.cnp_sent, 88012u);
  EXPECT_EQ(c.cnp_handled, 40125u);
  // rx_out_of_buffer + rx_discards_phy + tx_discards_phy, which the
  // per-priority rx_prio*_discards (5) count again; not
  // rx_buffer_passed_thres_phy (a threshold, not a drop).
  EXPECT_EQ(c.buffer_drops, 1200u + 340u);
  EXPECT_TRUE(c.has_pause && c.has_ecn_cnp && c.has_drops);
}

TEST(NicStats, BnxtLinkPauseAndPfcAreDisjoint) {
  NicCongestion c = Sums("ens2f0np0");
  EXPECT_EQ(c.pause_rx, 300u + 4100u);
  EXPECT_EQ(c.pause_tx, 20u + 600u);
  EXPECT_EQ(c.ecn_marked, 710u);
  EXPECT_EQ(c.cnp_sent, 700u);
  EXPECT_EQ(c.cnp_handled, 233u);
  EXPECT_FALSE(c.has_drops);  // rx_total_discard_pkts is not a buffer counter: not guessed
}

TEST(NicStats, IceCountsXoffNotXonUnderItsNicSuffix) {
  NicCongestion c = Sums("ens3f0");
  EXPECT_EQ(c.pause_rx, 4100u);
  EXPECT_EQ(c.pause_tx, 12u);
  EXPECT_FALSE(c.has_ecn_cnp);
}

TEST(NicStats, EnaAllowancesAreItsDrops) {
  NicCongestion c = Sums("ens5");
  EXPECT_EQ(c.allowance_exceeded, 12345u + 678u + 9u);
  EXPECT_TRUE(c.has_drops);
  EXPECT_FALSE(c.has_pause);  // admin_q_pause is the driver's own queue, not a pause frame
}

TEST(NicStats, VirtioHasQueueDropsOnly) {
  NicCongestion c = Sums("eth0");
  EXPECT_EQ(c.buffer_drops, 3u);  // rx_queue_0_drops, not rx_queue_0_xdp_drops
  EXPECT_FALSE(c.has_pause);
  EXPECT_FALSE(c.has_ecn_cnp);
}

TEST(NicStats, UnknownNamesAreKeptRaw) {
  Result<NicStats> stats = ReadNicStats(kHost, "ens2f0np0");
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->counters.front().name, "[0]: rx_ucast_packets");  // bnxt's per-ring form
  EXPECT_EQ(stats->counters.front().value, 1234u);
  EXPECT_EQ(ClassifyNicCounter("rx_total_discard_pkts"), NicCounterKind::kOther);
  EXPECT_EQ(ClassifyNicCounter("rx_prio3_pause_duration"), NicCounterKind::kOther);
  EXPECT_EQ(ClassifyNicCounter("port.link_xoff_rx"), NicCounterKind::kPauseRxTotal);  // i40e
  EXPECT_EQ(ClassifyNicCounter("rx_prio_pause"), NicCounterKind::kOther);  // no priority number
  // virtio_net on 6.x: the total beside its queues, counted once.
  Result<NicStats> virtio = ParseEthtoolStats(
      "NIC statistics:\n     rx_drops: 7\n     rx_kicks: 9\n     rx0_drops: 4\n     rx1_drops: 3\n",
      "virtio");
  ASSERT_TRUE(virtio.ok());
  EXPECT_EQ(SummarizeNicStats(*virtio).buffer_drops, 7u);
  EXPECT_EQ(ClassifyNicCounter("rx0_xdp_drops"), NicCounterKind::kOther);
}

TEST(NicStats, GrowthIsAfterMinusBeforeAndAResetCountsFromZero) {
  NicCongestion before, after;
  before.pause_rx = 100;
  after.pause_rx = 150;
  before.buffer_drops = 900;  // the driver was reset between the reads
  after.buffer_drops = 4;
  NicCongestion g = NicCongestionGrowth(before, after);
  EXPECT_EQ(g.pause_rx, 50u);
  EXPECT_EQ(g.buffer_drops, 4u);
}

TEST(NicStats, BadLinesAndNamesAreNamed) {
  Result<NicStats> bad = ParseEthtoolStats("NIC statistics:\n     rx_pause: lots\n", "ethtool/x");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("ethtool/x"), std::string::npos);
  EXPECT_NE(bad.status().message().find("2"), std::string::npos);
  EXPECT_NE(bad.status().message().find("rx_pause"), std::string::npos);
  EXPECT_FALSE(ParseEthtoolStats("NIC statistics:\n no colon here\n", "f").ok());
  Result<NicStats> empty = ParseEthtoolStats("", "f");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->counters.empty());
  for (std::string name : {"", "../etc", "a/b", "a-very-long-interface-name"}) {
    Result<NicStats> r = ReadNicStats(kHost, name);
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument) << name;
  }
  EXPECT_TRUE(ReadNicStats(kHost, "ens9").status().IsNotFound());
}

TEST(NicStats, LoopbackHasNoStatisticsLive) {
  // lo's driver answers no ETHTOOL_GSTRINGS for ETH_SS_STATS.
  Result<NicStats> lo = ReadNicStats(Root("/"), "lo");
  ASSERT_FALSE(lo.ok());
  EXPECT_TRUE(lo.status().IsNotFound()) << lo.status().message();
}

}  // namespace
}  // namespace stallscope
