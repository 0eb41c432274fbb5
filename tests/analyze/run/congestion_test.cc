// Congestion over a recorded run: the congestion counters the recorder
// keeps (record/port_counters.h CongestionTracker), their way through the
// run file's congestion_counters table, and network.congestion /
// network.drops_buffer judged over the run; a file without the table reads
// as having no rows.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "analyze/run/network_rules.h"
#include "core/file.h"
#include "finding_matchers.h"
#include "probe/ethtool_stats.h"
#include "probe/infiniband.h"
#include "record/port_counters.h"
#include "store/run_reader.h"
#include "store/run_writer.h"

namespace stallscope {
namespace {

const Root kHost(std::string(STALLSCOPE_FIXTURES) + "/congestion_host");

// The fixture's counters with `pauses` more pause frames on ens1f0np0's
// priority 3 and the IB port's xmit_wait and data grown as given.
void Grow(std::vector<NicStats>& nics, std::vector<InfinibandDevice>& ib, uint64_t pauses,
          uint64_t wait_ticks, uint64_t words) {
  for (NicStats& n : nics) {
    if (n.interface != "ens1f0np0") continue;
    for (NicCounter& c : n.counters) {
      if (c.name == "rx_prio3_pause" || c.name == "rx_pause_ctrl_phy") c.value += pauses;
    }
  }
  *ib[0].ports[0].xmit_wait += wait_ticks;
  *ib[0].ports[0].xmit_bytes += words * 4;
}

class RunCongestionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/stallscope_runcong_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(RunCongestionTest, PausesAndXmitWaitOverARunThroughTheRunFile) {
  const std::vector<NicStats> nics0 = ReadEveryNicStats(kHost, nullptr);
  Result<std::vector<InfinibandDevice>> ib0 = ReadInfinibandDevices(kHost);
  ASSERT_TRUE(ib0.ok()) << ib0.status().ToString();
  Result<RunWriter> writer = RunWriter::Create(dir_ + "/run.db", false);
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  ASSERT_TRUE(writer->WriteRunInfo(RunInfo{}).ok());
  CongestionTracker tracker;
  size_t rows_written = 0;
  for (int i = 0; i <= 10; ++i) {
    std::vector<NicStats> nics = nics0;
    std::vector<InfinibandDevice> ib = *ib0;
    // After second 5, 400 pause frames/s, and the IB port waits 0.5 tick
    // per word at 1e8 words/s.
    const uint64_t busy = i > 5 ? static_cast<uint64_t>(i - 5) : 0;
    Grow(nics, ib, 400 * busy, 50'000'000 * busy, 100'000'000 * busy);
    std::vector<CongestionPoint> rows = tracker.Update(i, nics, ib, i == 10);
    rows_written += rows.size();
    TimelineSample sample;
    sample.t = i;
    ASSERT_TRUE(writer->AppendInterval(sample, {}, {}, {}, {}, {}).ok());
    ASSERT_TRUE(writer->AppendCongestion(rows).ok());
  }
  ASSERT_TRUE(writer->Close().ok());
  Result<Timeline> timeline = ReadRun(dir_ + "/run.db");
  ASSERT_TRUE(timeline.ok()) << timeline.status().ToString();
  ASSERT_EQ(timeline->congestion.size(), rows_written);
  // 5 NICs + 2 RDMA ports at the start and the end; in between only the two
  // that move (seconds 6 to 9).
  EXPECT_EQ(rows_written, 7u + 2u * 4u + 7u);

  std::vector<Finding> congestion =
      FindAllCopies(CheckRunNetwork(*timeline).findings, "network.congestion");
  ASSERT_EQ(congestion.size(), 2u);
  EXPECT_NE(congestion[0].summary.find("ens1f0np0"), std::string::npos) << congestion[0].summary;
  // 400 * 5 = 2000 frames over the 10 s run.
  EXPECT_NE(congestion[0].summary.find("200 pause frames/s"), std::string::npos)
      << congestion[0].summary;
  EXPECT_NE(congestion[1].summary.find("mlx5_0:1"), std::string::npos) << congestion[1].summary;
  EXPECT_NE(congestion[1].summary.find("0.50 ticks per 4-byte word"), std::string::npos)
      << congestion[1].summary;
}

TEST(RunCongestion, NoTableNoRowsNoFinding) {
  Timeline t;
  EXPECT_TRUE(CheckRunNetwork(t).findings.empty());
  // One reading of a port: no growth to judge.
  t.congestion.push_back({0, "ens1f0np0", false, {}});
  t.congestion.back().counters.pause_rx = 1'000'000;
  EXPECT_TRUE(CheckRunNetwork(t).findings.empty());
}

}  // namespace
}  // namespace stallscope
