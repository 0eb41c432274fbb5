// The per-interval correlation of a port's congestion with the job's
// sync-wait share (analyze/run/congestion_sync.h), on synthetic timelines: the
// congestion comes in the all-reduce-heavy intervals, or in the others.
#include "analyze/run/congestion_sync.h"

#include <gtest/gtest.h>

#include "analyze/run/network_rules.h"
#include "finding_matchers.h"

namespace stallscope {
namespace {

// 12 one-second intervals, 4 steps each of 0.25 s; in the intervals where
// `heavy` is true each step waits 0.2 s on its all-reduce, else 0.02 s.
// Pause frames received on ens1f0np0 grow by `pauses(i)` in interval i.
Timeline Synthetic(const std::vector<bool>& heavy, const std::vector<uint64_t>& pauses) {
  Timeline t;
  uint64_t total = 0;
  int64_t step = 0;
  for (size_t i = 0; i <= heavy.size(); ++i) {
    TimelineSample s;
    s.t = static_cast<double>(i);
    t.samples.push_back(s);
    if (i > 0) {
      for (int k = 1; k <= 4; ++k) {
        StepEvent e{0, ++step, static_cast<double>(i - 1) + 0.25 * k, 0, 0.25};
        t.steps.push_back(e);
        t.step_syncs.push_back({0, step, heavy[i - 1] ? 0.2 : 0.02, 0.01});
      }
      total += pauses[i - 1];
    }
    // Stored as the recorder stores them: first, on change, last.
    if (i == 0 || i == heavy.size() || (i > 0 && pauses[i - 1] > 0)) {
      CongestionPoint p;
      p.t = static_cast<double>(i);
      p.port = "ens1f0np0";
      p.counters.has_pause = true;
      p.counters.pause_rx = 1000 + total;
      t.congestion.push_back(p);
    }
  }
  return t;
}

TEST(CongestionSync, CongestionInTheAllReducePhasesCorrelates) {
  std::vector<bool> heavy;
  std::vector<uint64_t> pauses;
  for (int i = 0; i < 12; ++i) {
    heavy.push_back(i % 3 == 0);
    pauses.push_back(i % 3 == 0 ? 500 : 0);
  }
  Timeline t = Synthetic(heavy, pauses);
  std::optional<CongestionSyncCorrelation> c = CorrelateCongestionWithSync(t, "ens1f0np0");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->intervals, 12);
  EXPECT_EQ(c->congested_intervals, 4);
  EXPECT_NEAR(c->sync_share_congested, 0.8, 1e-9);
  EXPECT_NEAR(c->sync_share_quiet, 0.08, 1e-9);
  EXPECT_GT(c->correlation, 0.99);

  // The run's finding says so, with the shares in its evidence.
  std::vector<Finding> f = FindAllCopies(CheckRunNetwork(t).findings, "network.congestion");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].summary.find("80% in the 4 intervals with congestion against 8%"),
            std::string::npos)
      << f[0].summary;
  EXPECT_NE(f[0].summary.find("comes with the all-reduce phases"), std::string::npos);
}

TEST(CongestionSync, CongestionOutsideTheSyncsIsNotTheJobs) {
  std::vector<bool> heavy;
  std::vector<uint64_t> pauses;
  for (int i = 0; i < 12; ++i) {
    heavy.push_back(i % 3 == 0);
    pauses.push_back(i % 3 == 1 ? 500 : 0);  // always between the heavy ones
  }
  Timeline t = Synthetic(heavy, pauses);
  std::optional<CongestionSyncCorrelation> c = CorrelateCongestionWithSync(t, "ens1f0np0");
  ASSERT_TRUE(c);
  EXPECT_LT(c->correlation, 0);
  EXPECT_NEAR(c->sync_share_congested, 0.08, 1e-9);
  std::vector<Finding> f = FindAllCopies(CheckRunNetwork(t).findings, "network.congestion");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].summary.find("comes with the all-reduce phases"), std::string::npos)
      << f[0].summary;
}

TEST(CongestionSync, NothingToCompareSaysNothing) {
  std::vector<bool> heavy(12, true);
  // Congested in every interval: no quiet ones to compare with.
  EXPECT_FALSE(
      CorrelateCongestionWithSync(Synthetic(heavy, std::vector<uint64_t>(12, 9)), "ens1f0np0"));
  // Never congested.
  EXPECT_FALSE(
      CorrelateCongestionWithSync(Synthetic(heavy, std::vector<uint64_t>(12, 0)), "ens1f0np0"));
  // No step_sync records (a job without stallscope.ddp), or another port.
  std::vector<uint64_t> some(12, 0);
  some[3] = 100;
  Timeline t = Synthetic(heavy, some);
  EXPECT_FALSE(CorrelateCongestionWithSync(t, "eth0"));
  t.step_syncs.clear();
  EXPECT_FALSE(CorrelateCongestionWithSync(t, "ens1f0np0"));
}

}  // namespace
}  // namespace stallscope
