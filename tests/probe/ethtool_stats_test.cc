// The `ethtool -S` file form of five drivers (tests/fixtures/congestion_host)
// read and summed: pause frames without double counting a total beside its
// priorities, XON frames left out, ECN/CNP, buffer drops, a cloud NIC's
// allowance counters; unknown names kept raw; bad lines named. The live
// ioctl is exercised on real veth pairs by e2e.nic_stats; here a driver
// whose counter count grows between the ioctls, written as the kernel
// writes (as many as the driver has, into memory that may not be ours).
#include "probe/ethtool_stats.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <linux/ethtool.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

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

// Copies as the kernel's copy_to_user does: into a page that cannot be
// written it fails instead of faulting the process (read(2) from a pipe
// gives the same EFAULT).
bool CopyOut(void* to, const void* from, size_t size) {
  int fds[2];
  if (::pipe(fds) != 0) return false;
  bool ok = ::write(fds[1], from, size) == static_cast<ssize_t>(size) &&
            ::read(fds[0], to, size) == static_cast<ssize_t>(size);
  ::close(fds[0]);
  ::close(fds[1]);
  return ok;
}

// A driver with counters c0, c1, ... valued 1000 + i; `counts` is how many
// it has at each ioctl (the last one stays). Answers as kernels before 6.x
// do (the count passed in is ignored, all are written), or with
// `writes_none_on_mismatch` as newer ones do (none when it differs).
struct GrowingDriver {
  std::vector<uint32_t> counts;
  bool writes_none_on_mismatch = false;
  size_t calls = 0;

  int operator()(void* block) {
    uint32_t n = counts[std::min(calls++, counts.size() - 1)];
    uint32_t cmd, asked;
    std::memcpy(&cmd, block, sizeof cmd);
    const size_t at = cmd == ETHTOOL_GSTATS ? offsetof(struct ethtool_stats, n_stats)
                                            : offsetof(struct ethtool_gstrings, len);
    std::memcpy(&asked, static_cast<uint8_t*>(block) + at, sizeof asked);
    if (writes_none_on_mismatch && cmd != ETHTOOL_GSSET_INFO && asked != n) n = 0;
    if (cmd == ETHTOOL_GSSET_INFO) {
      auto* sset = static_cast<struct ethtool_sset_info*>(block);
      sset->data[0] = n;
      return 0;
    }
    std::vector<uint8_t> data;
    size_t header = 0;
    if (cmd == ETHTOOL_GSTRINGS) {
      header = sizeof(struct ethtool_gstrings);
      static_cast<struct ethtool_gstrings*>(block)->len = n;
      data.resize(size_t{n} * ETH_GSTRING_LEN);
      for (uint32_t i = 0; i < n; ++i) {
        std::string name = fmt::format("c{}", i);
        std::memcpy(data.data() + i * ETH_GSTRING_LEN, name.data(), name.size());
      }
    } else if (cmd == ETHTOOL_GSTATS) {
      header = sizeof(struct ethtool_stats);
      static_cast<struct ethtool_stats*>(block)->n_stats = n;
      for (uint64_t i = 0; i < n; ++i) {
        uint64_t value = 1000 + i;
        data.insert(data.end(), reinterpret_cast<uint8_t*>(&value),
                    reinterpret_cast<uint8_t*>(&value) + sizeof value);
      }
    } else {
      errno = EOPNOTSUPP;
      return -1;
    }
    if (!CopyOut(static_cast<uint8_t*>(block) + header, data.data(), data.size())) {
      errno = EFAULT;
      return -1;
    }
    return 0;
  }
};

Result<NicStats> ReadFrom(GrowingDriver& driver) {
  return ReadLiveNicStats("eth7",
                          [&driver](const std::string&, void* block) { return driver(block); });
}

void ExpectCounters(const Result<NicStats>& stats, uint32_t n) {
  ASSERT_TRUE(stats.ok()) << stats.status().message();
  ASSERT_EQ(stats->counters.size(), n);
  for (uint32_t i = 0; i < n; ++i) {
    EXPECT_EQ(stats->counters[i].name, fmt::format("c{}", i));
    EXPECT_EQ(stats->counters[i].value, 1000u + i);
  }
}

TEST(NicStats, ACountThatGrewBeforeTheNamesIsReadWhole) {
  GrowingDriver driver{{10, 12}};  // 10 announced, 12 written
  ExpectCounters(ReadFrom(driver), 12);
}

TEST(NicStats, NamesAndValuesOfDifferentCountsAreReadAgain) {
  GrowingDriver driver{{10, 10, 12}};  // names for 10, values for 12
  ExpectCounters(ReadFrom(driver), 12);
  EXPECT_EQ(driver.calls, 6u);
}

TEST(NicStats, ANewerKernelThatWroteNoneIsReadAgain) {
  GrowingDriver driver{{10, 12}, true};
  ExpectCounters(ReadFrom(driver), 12);
}

TEST(NicStats, ACountThatOutgrewTheRoomFaultsAndIsReadAgain) {
  GrowingDriver driver{{4, 100}};  // past twice 4: the kernel would write past the block
  ExpectCounters(ReadFrom(driver), 100);
}

TEST(NicStats, ACountThatKeepsGrowingIsAnErrorNamingTheInterface) {
  GrowingDriver driver{{4, 12, 36, 108, 324, 972}};
  Result<NicStats> stats = ReadFrom(driver);
  ASSERT_FALSE(stats.ok());
  EXPECT_NE(stats.status().message().find("eth7"), std::string::npos) << stats.status().message();
  EXPECT_NE(stats.status().message().find("kept changing"), std::string::npos);
}

}  // namespace
}  // namespace stallscope
