// network.congestion and network.drops_buffer on RDMA ports: an InfiniBand
// port whose port_xmit_wait grows against what it sends, a RoCE port's
// CNPs and out_of_buffer drops, between two readings of the ports built by
// hand (sample/rdma_congestion.h, analyze/host/network_rules.h).
#include "sample/rdma_congestion.h"

#include <gtest/gtest.h>

#include "analyze/host/network_rules.h"
#include "finding_matchers.h"

namespace stallscope {
namespace {

InfinibandDevice IbDevice(uint64_t xmit_wait, uint64_t xmit_words) {
  InfinibandDevice d;
  d.name = "mlx5_0";
  InfinibandPort p;
  p.port = 1;
  p.link_layer = "InfiniBand";
  p.xmit_wait = xmit_wait;
  p.xmit_bytes = xmit_words * 4;
  p.rcv_errors = 0;
  p.excessive_buffer_overrun_errors = 0;
  p.local_link_integrity_errors = 0;
  d.ports.push_back(p);
  return d;
}

InfinibandDevice RoceDevice(uint64_t out_of_buffer, uint64_t cnp_handled) {
  InfinibandDevice d;
  d.name = "mlx5_1";
  InfinibandPort p;
  p.port = 1;
  p.link_layer = "Ethernet";
  p.roce = true;
  p.hw_counters = {
      {"out_of_buffer", out_of_buffer}, {"np_cnp_sent", 7}, {"rp_cnp_handled", cnp_handled}};
  d.ports.push_back(p);
  return d;
}

NetworkObservation Window(const std::vector<InfinibandDevice>& before,
                          const std::vector<InfinibandDevice>& after, double seconds) {
  NetworkObservation o;
  o.window_seconds = seconds;
  o.nic_congestion = RdmaCongestionDeltas(before, after);
  o.port_deltas = RdmaErrorDeltas(before, after);
  return o;
}

TEST(RdmaPortCongestion, XmitWaitAndHwCountersInTheNicsTerms) {
  NicCongestion ib = RdmaPortCongestion(IbDevice(500, 2000).ports[0]);
  EXPECT_TRUE(ib.has_xmit_wait);
  EXPECT_EQ(ib.xmit_wait_ticks, 500u);
  EXPECT_EQ(ib.xmit_words, 2000u);
  NicCongestion roce = RdmaPortCongestion(RoceDevice(30, 90).ports[0]);
  EXPECT_FALSE(roce.has_xmit_wait);
  EXPECT_EQ(roce.buffer_drops, 30u);
  EXPECT_EQ(roce.cnp_handled, 90u);
  EXPECT_EQ(roce.cnp_sent, 7u);
  // A port with none of them is not a reading.
  InfinibandDevice bare;
  bare.name = "mlx4_0";
  bare.ports.push_back(InfinibandPort{});
  EXPECT_TRUE(RdmaCongestionReadings({bare}).empty());
}

TEST(RdmaCongestion, XmitWaitGrowingAgainstWhatThePortSentIsCongestion) {
  // 10 s: 4e8 ticks waited while sending 1e9 words: 0.4 ticks per word.
  NetworkObservation o =
      Window({IbDevice(1000, 5000)}, {IbDevice(1000 + 400'000'000, 5000 + 1'000'000'000)}, 10);
  auto findings = FindAllCopies(CheckNetwork(o).findings, "network.congestion");
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.severity, Severity::kWarning);
  EXPECT_NE(f.summary.find("mlx5_0:1"), std::string::npos) << f.summary;
  EXPECT_NE(f.summary.find("4e+07 ticks/s"), std::string::npos) << f.summary;
  EXPECT_NE(f.summary.find("0.40 ticks per 4-byte word"), std::string::npos) << f.summary;
  EXPECT_NE(f.next.find("perfquery"), std::string::npos);
  // Waiting longer than it sent: critical.
  o = Window({IbDevice(0, 0)}, {IbDevice(3'000'000'000, 1'000'000'000)}, 10);
  findings = FindAllCopies(CheckNetwork(o).findings, "network.congestion");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].severity, Severity::kCritical);
}

TEST(RdmaCongestion, ABusyPortThatBarelyWaitsOrAnIdleOneIsNot) {
  // 1e8 ticks against 1e10 words: 0.01 per word, under the ratio.
  NetworkObservation o = Window({IbDevice(0, 0)}, {IbDevice(100'000'000, 10'000'000'000)}, 10);
  EXPECT_TRUE(FindAllCopies(CheckNetwork(o).findings, "network.congestion").empty());
  // An idle port: a high ratio but a handful of ticks a second.
  o = Window({IbDevice(0, 0)}, {IbDevice(5000, 10)}, 10);
  EXPECT_TRUE(FindAllCopies(CheckNetwork(o).findings, "network.congestion").empty());
  // A counter reset (after below before) counts from 0, not a wrapped value.
  o = Window({IbDevice(9'000'000'000, 50)}, {IbDevice(10, 60)}, 10);
  EXPECT_TRUE(FindAllCopies(CheckNetwork(o).findings, "network.congestion").empty());
}

TEST(RdmaCongestion, OutOfBufferIsTheHostSideAndCnpsTheFabric) {
  NetworkObservation o = Window({RoceDevice(100, 1000)}, {RoceDevice(100 + 2000, 1000 + 400)}, 2);
  auto drops = FindAllCopies(CheckNetwork(o).findings, "network.drops_buffer");
  ASSERT_EQ(drops.size(), 1u);
  EXPECT_EQ(drops[0].severity, Severity::kCritical);  // 1000/s
  EXPECT_NE(drops[0].summary.find("mlx5_1:1"), std::string::npos) << drops[0].summary;
  EXPECT_NE(drops[0].summary.find("out_of_buffer"), std::string::npos);
  EXPECT_EQ(drops[0].next.find("ethtool -G"), std::string::npos);  // not a NIC ring
  auto congestion = FindAllCopies(CheckNetwork(o).findings, "network.congestion");
  ASSERT_EQ(congestion.size(), 1u);
  EXPECT_NE(congestion[0].summary.find("200 CNPs/s"), std::string::npos) << congestion[0].summary;
}

TEST(RdmaCongestion, LinkIntegrityAndBufferOverrunsAreLinkErrors) {
  InfinibandDevice before = IbDevice(0, 0), after = IbDevice(0, 0);
  after.ports[0].local_link_integrity_errors = 3;
  after.ports[0].excessive_buffer_overrun_errors = 2;
  auto findings =
      FindAllCopies(CheckNetwork(Window({before}, {after}, 5)).findings, "network.port_errors");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_NE(findings[0].summary.find("2 excessive buffer overruns, 3 local link integrity"),
            std::string::npos)
      << findings[0].summary;
}

}  // namespace
}  // namespace stallscope
