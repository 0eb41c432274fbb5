// Per-rank analysis (analyze/run/rank_rules.h) on synthetic data-parallel
// timelines, and the hook records and run-file tables that carry it.
#include "analyze/run/rank_rules.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "finding_matchers.h"
#include "record/hook_receiver.h"
#include "store/run_reader.h"
#include "store/run_writer.h"

namespace stallscope {
namespace {

std::vector<const Finding*> WithId(const std::vector<Finding>& findings, const std::string& id) {
  std::vector<const Finding*> out;
  for (const Finding& f : findings) {
    if (f.id == id) out.push_back(&f);
  }
  return out;
}

// A synchronous DP run: every rank's step lasts `step` seconds (they wait
// for each other); rank r computes compute[r] and waits wait[r] for data,
// and in sync it waits for the slowest: step - compute - wait.
Timeline SyncRun(const std::vector<double>& compute, const std::vector<double>& data_wait,
                 int steps, bool with_sync = true) {
  Timeline t;
  t.info.hostname = "node7";
  double slowest = 0;
  for (size_t r = 0; r < compute.size(); ++r)
    slowest = std::max(slowest, compute[r] + data_wait[r]);
  const double comm = 0.010;  // the all-reduce itself
  const double step = slowest + comm;
  for (int s = 0; s < steps; ++s) {
    for (size_t r = 0; r < compute.size(); ++r) {
      StepEvent e;
      e.rank = static_cast<int>(r);
      e.step = s;
      e.t = (s + 1) * step;
      e.wait_seconds = data_wait[r];
      e.step_seconds = step;
      if (with_sync) {
        t.step_syncs.push_back(
            {e.rank, e.step, step - compute[r] - data_wait[r], compute[r] * 0.9});
      }
      t.steps.push_back(e);
    }
  }
  for (size_t r = 0; r < compute.size(); ++r) {
    t.ranks.push_back({1000 + static_cast<int>(r), static_cast<int>(r), static_cast<int>(r),
                       static_cast<int>(compute.size()), r == 1 ? "node8" : ""});
  }
  return t;
}

TEST(RankSummary, MeansPerRankAfterTheWarmUp) {
  Timeline t = SyncRun({0.100, 0.300}, {0.005, 0.005}, 12);
  // Warm-up steps that would skew every mean if counted.
  for (StepEvent& e : t.steps) {
    if (e.step == 0) e.step_seconds = 5.0;
  }
  std::vector<RankSummary> rows = SummarizeRanks(t, "node7");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].steps, 10);  // 12 minus the 2 warm-up steps
  EXPECT_NEAR(rows[0].step_s, 0.315, 1e-9);
  EXPECT_NEAR(rows[0].data_wait_s, 0.005, 1e-9);
  ASSERT_TRUE(rows[0].sync_wait_s);
  EXPECT_NEAR(*rows[0].sync_wait_s, 0.210, 1e-9);
  EXPECT_NEAR(rows[0].compute_s, 0.100, 1e-9);
  EXPECT_NEAR(*rows[0].cpu_s, 0.090, 1e-9);
  EXPECT_EQ(rows[0].hostname, "node7");  // the hello carried none: the run's host
  EXPECT_EQ(rows[1].hostname, "node8");
  EXPECT_NEAR(*rows[1].sync_wait_s, 0.010, 1e-9);
}

TEST(Straggler, NamesTheRankTheOthersWaitFor) {
  // Rank 2 of 4 computes 200 ms more: the others wait ~200 ms in sync.
  Timeline t = SyncRun({0.100, 0.100, 0.300, 0.100}, {0.005, 0.005, 0.005, 0.005}, 20);
  t.ranks[2].hostname = "gpu-node-3";
  std::vector<Finding> findings = CheckRanks(t).findings;
  auto s = WithId(findings, "distributed.straggler");
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(std::get<int64_t>(Find(*s[0], "rank")->value), 2);
  EXPECT_EQ(std::get<std::string>(Find(*s[0], "host")->value), "gpu-node-3");
  EXPECT_NEAR(std::get<double>(Find(*s[0], "wait_for_it_seconds_per_step")->value), 0.200, 1e-9);
  // 200 ms of a 315 ms step: over 30%, critical.
  EXPECT_NEAR(std::get<double>(Find(*s[0], "step_fraction")->value), 0.2 / 0.315, 1e-9);
  EXPECT_EQ(s[0]->severity, Severity::kCritical);
  EXPECT_EQ(std::get<std::string>(Find(*s[0], "cause")->value), "compute");
  EXPECT_EQ(std::get<int64_t>(Find(*s[0], "steps_compared")->value), 18);
  EXPECT_NE(s[0]->summary.find("rank 2 on gpu-node-3"), std::string::npos);
  ASSERT_TRUE(s[0]->impact);
  EXPECT_NEAR(s[0]->impact->wall_fraction, 0.2 / 0.315, 1e-9);
  // The same rank's extra compute is not reported twice as load imbalance.
  EXPECT_TRUE(WithId(findings, "distributed.load_imbalance").empty());
}

TEST(Straggler, ASlowLoaderMakesItTooAndSaysSo) {
  Timeline t = SyncRun({0.100, 0.100}, {0.005, 0.120}, 20);
  std::vector<Finding> findings = CheckRanks(t).findings;
  auto s = WithId(findings, "distributed.straggler");
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(std::get<int64_t>(Find(*s[0], "rank")->value), 1);
  EXPECT_EQ(std::get<std::string>(Find(*s[0], "cause")->value), "input");
  // The others wait 115 ms of a 230 ms step: critical.
  EXPECT_EQ(s[0]->severity, Severity::kCritical);
  // The data-wait spread (115 ms of a 230 ms step) is load imbalance too.
  auto imbalance = WithId(findings, "distributed.load_imbalance");
  ASSERT_EQ(imbalance.size(), 1u);
  EXPECT_EQ(std::get<std::string>(Find(*imbalance[0], "problem")->value), "data_wait");
  EXPECT_EQ(std::get<int64_t>(Find(*imbalance[0], "max_rank")->value), 1);
}

TEST(Straggler, ARankThatWaitsForACpuIsHostCpuAndItsBucketsSaySo) {
  // Rank 2 computes 200 ms more while its process waits for a CPU 55% of
  // the time (the others 5%): contention on its host, not its work.
  Timeline t = SyncRun({0.100, 0.100, 0.300, 0.100}, {0.005, 0.005, 0.005, 0.005}, 20);
  for (int i = 0; i < 10; ++i) {
    for (int r = 0; r < 4; ++r) {
      ProcessPoint p;
      p.t = i;
      p.pid = 1000 + r;
      p.run_delay_percent = r == 2 ? 55.0 : 5.0;
      t.processes.push_back(p);
    }
    // a DataLoader worker of rank 0 (not a rank's own process): not counted
    ProcessPoint worker;
    worker.pid = 2000;
    worker.run_delay_percent = 99.0;
    t.processes.push_back(worker);
  }
  // Rank 2 enters every bucket's all-reduce 200 ms after the others.
  for (int s = 0; s < 20; ++s) {
    for (int r = 0; r < 4; ++r) {
      double launch = s + (r == 2 ? 0.3 : 0.1);
      t.bucket_syncs.push_back({r, s, 0, launch, s + 0.31});
    }
  }
  std::vector<Finding> findings = CheckRanks(t).findings;
  auto s = WithId(findings, "distributed.straggler");
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(std::get<std::string>(Find(*s[0], "cause")->value), "host_cpu");
  EXPECT_NEAR(std::get<double>(Find(*s[0], "its_run_delay_pct")->value), 55, 1e-9);
  EXPECT_NEAR(std::get<double>(Find(*s[0], "others_run_delay_pct")->value), 5, 1e-9);
  EXPECT_NE(s[0]->summary.find("waiting for a CPU 55% of the time"), std::string::npos);
  EXPECT_NEAR(std::get<double>(Find(*s[0], "last_into_bucket_share")->value), 1.0, 1e-9);
  EXPECT_EQ(std::get<int64_t>(Find(*s[0], "buckets_compared")->value), 18);
  EXPECT_NEAR(std::get<double>(Find(*s[0], "others_bucket_wait_seconds_per_step")->value), 0.2,
              1e-9);
  // The same delay on every rank is the host's for all: compute, not host_cpu.
  for (ProcessPoint& p : t.processes) p.run_delay_percent = 55.0;
  findings = CheckRanks(t).findings;  // held: WithId points into it
  s = WithId(findings, "distributed.straggler");
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(std::get<std::string>(Find(*s[0], "cause")->value), "compute");
}

TEST(Straggler, ABalancedRunRaisesNothing) {
  // Ranks within a few ms of each other, and the least-waiting rank changes
  // from step to step: jitter, not a straggler.
  Timeline t = SyncRun({0.100, 0.104}, {0.005, 0.004}, 20);
  for (StepSync& e : t.step_syncs) {
    if (e.step % 2) e.sync_seconds += e.rank == 1 ? 0.005 : -0.005;
  }
  EXPECT_TRUE(CheckRanks(t).findings.empty());
}

TEST(Straggler, JitterThatAlternatesIsNotSustained) {
  // Each step one rank is 60 ms slower, alternately: every step has a
  // "least waiter" by 60/170 ms, but no rank holds it for half the steps
  // with an average gap over 15%.
  Timeline t = SyncRun({0.100, 0.100}, {0.0, 0.0}, 20);
  for (StepEvent& e : t.steps) e.step_seconds = 0.170;
  for (StepSync& e : t.step_syncs) {
    bool slow = (e.step % 2) == e.rank;
    e.sync_seconds = slow ? 0.010 : 0.070;
  }
  EXPECT_TRUE(WithId(CheckRanks(t).findings, "distributed.straggler").empty());
}

TEST(Straggler, NeedsTheSyncWaitAndTwoRanks) {
  // Without stallscope.ddp there is no sync wait: no straggler call, and the
  // compute spread is not judged (step - data wait includes the sync).
  Timeline t = SyncRun({0.100, 0.300}, {0.005, 0.005}, 20, /*with_sync=*/false);
  EXPECT_TRUE(CheckRanks(t).findings.empty());
  EXPECT_FALSE(SummarizeRanks(t)[0].sync_wait_s);
  // One rank: nothing to compare.
  Timeline one = SyncRun({0.100}, {0.050}, 20);
  EXPECT_TRUE(CheckRanks(one).findings.empty());
  // Too few steps after the warm-up.
  Timeline short_run = SyncRun({0.100, 0.300}, {0.005, 0.005}, 6);
  EXPECT_TRUE(CheckRanks(short_run).findings.empty());
}

TEST(LoadImbalance, ComputeSpreadWithoutAStraggler) {
  // Three ranks compute 80 ms more than rank 0: the median rank waits as
  // little as the slowest, so no single rank is the one waited for; the
  // spread (80 ms of a 190 ms step) is imbalance.
  Timeline t = SyncRun({0.100, 0.180, 0.180, 0.180}, {0.0, 0.0, 0.0, 0.0}, 20);
  std::vector<Finding> findings = CheckRanks(t).findings;
  EXPECT_TRUE(WithId(findings, "distributed.straggler").empty());
  auto imbalance = WithId(findings, "distributed.load_imbalance");
  ASSERT_EQ(imbalance.size(), 1u);
  EXPECT_EQ(std::get<std::string>(Find(*imbalance[0], "problem")->value), "compute");
  EXPECT_EQ(std::get<int64_t>(Find(*imbalance[0], "min_rank")->value), 0);
  EXPECT_NEAR(std::get<double>(Find(*imbalance[0], "spread_step_fraction")->value), 0.08 / 0.19,
              1e-9);
}

TEST(LoadImbalance, ComputeSpreadHoldsWhenTheBusyRanksTradePlaces) {
  // As above, but the three busy ranks take turns being the busiest by a
  // few ms: the spread against the light rank 0 is there in every step.
  Timeline t = SyncRun({0.100, 0.180, 0.180, 0.180}, {0.0, 0.0, 0.0, 0.0}, 20);
  for (StepSync& e : t.step_syncs) {
    if (e.rank > 0 && e.step % 3 == e.rank - 1) e.sync_seconds -= 0.004;
  }
  std::vector<Finding> findings = CheckRanks(t).findings;
  EXPECT_TRUE(WithId(findings, "distributed.straggler").empty());
  auto imbalance = WithId(findings, "distributed.load_imbalance");
  ASSERT_EQ(imbalance.size(), 1u);
  EXPECT_EQ(std::get<int64_t>(Find(*imbalance[0], "steps_compared")->value), 18);
  EXPECT_EQ(std::get<int64_t>(Find(*imbalance[0], "steps_over_threshold")->value), 18);
}

// A 2-rank run with no imbalance and no sync record (data wait is judged
// without stallscope.ddp), 20 steps of 200 ms; `wait(rank, step)` sets each
// rank's data wait.
template <typename Wait>
Timeline DataWaitRun(Wait wait) {
  Timeline t = SyncRun({0.100, 0.100}, {0.0, 0.0}, 20, /*with_sync=*/false);
  for (StepEvent& e : t.steps) {
    e.step_seconds = 0.200;
    e.wait_seconds = wait(e.rank, e.step);
  }
  return t;
}

TEST(LoadImbalance, TransientDataWaitSpikesRaiseNothing) {
  // Two odd steps in which rank 1 waits 900 ms for data (and both ranks'
  // step lasts 1.1 s): the mean data waits are 99 ms apart, a third of the
  // mean step, but only in 2 of 18 steps.
  Timeline t = DataWaitRun([](int rank, int64_t step) {
    return rank == 1 && (step == 7 || step == 13) ? 0.900 : 0.005;
  });
  for (StepEvent& e : t.steps) {
    if (e.step == 7 || e.step == 13) e.step_seconds = 1.100;
  }
  std::vector<RankSummary> rows = SummarizeRanks(t);
  ASSERT_EQ(rows.size(), 2u);
  const double mean_step = (rows[0].step_s + rows[1].step_s) / 2;
  ASSERT_GT((rows[1].data_wait_s - rows[0].data_wait_s) / mean_step, kDataWaitImbalanceFraction);
  EXPECT_TRUE(WithId(CheckRanks(t).findings, "distributed.load_imbalance").empty());
}

TEST(LoadImbalance, AlternatingSlowRankRaisesNothing) {
  // Ranks that share busy CPUs trade places: each waits 80 ms more than
  // the other every other step, more on rank 1 (so its mean is higher).
  Timeline t = DataWaitRun([](int rank, int64_t step) {
    if (step % 2 == rank) return 0.005;
    return rank == 1 ? 0.150 : 0.085;
  });
  std::vector<RankSummary> rows = SummarizeRanks(t);
  const double mean_step = (rows[0].step_s + rows[1].step_s) / 2;
  ASSERT_GT((rows[1].data_wait_s - rows[0].data_wait_s) / mean_step, kDataWaitImbalanceFraction);
  EXPECT_TRUE(WithId(CheckRanks(t).findings, "distributed.load_imbalance").empty());
  // The same for compute, measured with stallscope.ddp: rank 1 computes
  // 310 ms in even steps, rank 0 160 ms in odd ones, both 110 ms otherwise;
  // the means are 75 ms apart, 23% of the 320 ms step, over the 20%.
  Timeline c = SyncRun({0.100, 0.100}, {0.0, 0.0}, 20);
  for (StepEvent& e : c.steps) e.step_seconds = 0.320;
  for (StepSync& e : c.step_syncs) {
    const bool busy = (e.step % 2) != e.rank;
    const double compute = !busy ? 0.110 : e.rank == 1 ? 0.310 : 0.160;
    e.sync_seconds = 0.320 - compute;
  }
  std::vector<RankSummary> crows = SummarizeRanks(c);
  ASSERT_GT((crows[1].compute_s - crows[0].compute_s) / 0.320, kComputeImbalanceFraction);
  EXPECT_TRUE(WithId(CheckRanks(c).findings, "distributed.load_imbalance").empty());
  EXPECT_TRUE(WithId(CheckRanks(c).findings, "distributed.straggler").empty());
}

TEST(LoadImbalance, SustainedDataWaitOnOneRankIsRaisedWithItsNumbers) {
  // Rank 1 waits 60 ms for data in 14 of the 18 counted steps (2 of 3 is
  // 12), 5 ms otherwise; rank 0 always 5 ms.
  Timeline t =
      DataWaitRun([](int rank, int64_t step) { return rank == 1 && step >= 6 ? 0.060 : 0.005; });
  std::vector<Finding> findings = CheckRanks(t).findings;
  auto imbalance = WithId(findings, "distributed.load_imbalance");
  ASSERT_EQ(imbalance.size(), 1u) << (findings.empty() ? "" : findings[0].summary);
  const Finding& f = *imbalance[0];
  EXPECT_EQ(f.severity, Severity::kWarning);
  EXPECT_EQ(std::get<std::string>(Find(f, "problem")->value), "data_wait");
  EXPECT_EQ(std::get<int64_t>(Find(f, "max_rank")->value), 1);
  EXPECT_EQ(std::get<int64_t>(Find(f, "min_rank")->value), 0);
  EXPECT_NEAR(std::get<double>(Find(f, "max_seconds")->value), (14 * 0.060 + 4 * 0.005) / 18, 1e-9);
  EXPECT_NEAR(std::get<double>(Find(f, "min_seconds")->value), 0.005, 1e-9);
  EXPECT_NEAR(std::get<double>(Find(f, "spread_step_fraction")->value), (14 * 0.055 / 18) / 0.200,
              1e-9);
  EXPECT_NEAR(std::get<double>(Find(f, "threshold_step_fraction")->value), 0.10, 1e-12);
  EXPECT_EQ(std::get<int64_t>(Find(f, "steps_over_threshold")->value), 14);
  EXPECT_EQ(std::get<int64_t>(Find(f, "steps_compared")->value), 18);
  EXPECT_NE(f.summary.find("in 14 of 18 steps"), std::string::npos) << f.summary;
  // One step fewer than 2 of 3 (11 of 18): not sustained.
  Timeline fewer =
      DataWaitRun([](int rank, int64_t step) { return rank == 1 && step >= 9 ? 0.060 : 0.005; });
  EXPECT_TRUE(WithId(CheckRanks(fewer).findings, "distributed.load_imbalance").empty());
}

TEST(LoadImbalance, SustainedComputeOnOneRankIsRaisedWithItsNumbers) {
  // Four ranks; rank 1 computes 80 ms more than rank 0 in every step but
  // is no straggler: ranks 2 and 3 compute nearly as much, so the median
  // rank waits in sync only 10 ms more than rank 1.
  Timeline t = SyncRun({0.100, 0.180, 0.170, 0.170}, {0.0, 0.0, 0.0, 0.0}, 20);
  std::vector<Finding> findings = CheckRanks(t).findings;
  EXPECT_TRUE(WithId(findings, "distributed.straggler").empty());
  auto imbalance = WithId(findings, "distributed.load_imbalance");
  ASSERT_EQ(imbalance.size(), 1u);
  const Finding& f = *imbalance[0];
  EXPECT_EQ(std::get<std::string>(Find(f, "problem")->value), "compute");
  EXPECT_EQ(std::get<int64_t>(Find(f, "max_rank")->value), 1);
  EXPECT_NEAR(std::get<double>(Find(f, "max_seconds")->value), 0.180, 1e-9);
  EXPECT_NEAR(std::get<double>(Find(f, "min_seconds")->value), 0.100, 1e-9);
  EXPECT_NEAR(std::get<double>(Find(f, "spread_step_fraction")->value), 0.08 / 0.19, 1e-9);
  EXPECT_EQ(std::get<int64_t>(Find(f, "steps_over_threshold")->value), 18);
  EXPECT_EQ(std::get<int64_t>(Find(f, "steps_compared")->value), 18);
}

// A rule's finding, as far as a user reads it: id, severity, summary, and
// every evidence value.
std::string Said(const std::vector<Finding>& findings) {
  std::string out;
  for (const Finding& f : findings) {
    out += f.id + " " + std::to_string(static_cast<int>(f.severity)) + " " + f.summary + "\n";
    for (const Evidence& e : f.evidence) {
      out += "  " + e.name + "=" +
             std::visit([](const auto& v) { return fmt::format("{}", v); }, e.value) + "\n";
    }
  }
  return out;
}

std::string Rows(const std::vector<RankSummary>& rows) {
  std::string out;
  for (const RankSummary& r : rows) {
    out += fmt::format("{} {} {} {:.9f} {:.9f} {:.9f} {:.9f} {:.9f}\n", r.rank, r.hostname, r.steps,
                       r.step_s, r.data_wait_s, r.compute_s, r.sync_wait_s.value_or(-1),
                       r.cpu_s.value_or(-1));
  }
  return out;
}

TEST(JudgeRanks, SeveralFilesAreJudgedAsTheirRecordsTogether) {
  // Rank 2 of 4 is the straggler; the ranks' records in two files, as two
  // nodes write them, are judged in place as one timeline of all of them.
  Timeline whole = SyncRun({0.100, 0.100, 0.300, 0.100}, {0.005, 0.005, 0.005, 0.040}, 20);
  Timeline a, b;
  for (const StepEvent& e : whole.steps) (e.rank < 2 ? a : b).steps.push_back(e);
  for (const StepSync& s : whole.step_syncs) (s.rank < 2 ? a : b).step_syncs.push_back(s);
  JobSteps job;
  job.parts = {{&a.steps, &a.step_syncs}, {&b.steps, &b.step_syncs}};
  job.ranks = &whole.ranks;
  job.fallback_host = whole.info.hostname;
  RankResults judged = JudgeRanks(job);
  EXPECT_EQ(Rows(judged.ranks), Rows(SummarizeRanks(whole, whole.info.hostname)));
  const std::vector<Finding> expected = CheckRanks(whole).findings;
  ASSERT_EQ(WithId(expected, "distributed.straggler").size(), 1u);
  EXPECT_EQ(Said(judged.findings), Said(expected));
  // A part without sync records: its ranks have none, and nothing is judged
  // on sync waits it lacks.
  job.parts[1].syncs = nullptr;
  judged = JudgeRanks(job);
  ASSERT_EQ(judged.ranks.size(), 4u);
  EXPECT_TRUE(judged.ranks[0].sync_wait_s.has_value());
  EXPECT_FALSE(judged.ranks[2].sync_wait_s.has_value());
  EXPECT_TRUE(WithId(judged.findings, "distributed.straggler").empty());
}

TEST(JudgeRanks, StepsOutOfOrderOrTwiceTakeTheLastSyncRecordOfTheirNumber) {
  // The same run three ways: as written; rank 1's steps backwards (a file
  // appended out of order); and an earlier sync record of steps 6 and 9
  // of rank 0 that a later one replaces; then step 6 reported twice.
  const Timeline plain = SyncRun({0.100, 0.300, 0.100}, {0.005, 0.005, 0.005}, 16);
  Timeline backwards = plain;
  std::vector<StepEvent> ones;
  for (const StepEvent& e : plain.steps) {
    if (e.rank == 1) ones.push_back(e);
  }
  std::erase_if(backwards.steps, [](const StepEvent& e) { return e.rank == 1; });
  backwards.steps.insert(backwards.steps.end(), ones.rbegin(), ones.rend());
  EXPECT_EQ(Rows(SummarizeRanks(backwards, "h")), Rows(SummarizeRanks(plain, "h")));
  EXPECT_EQ(Said(CheckRanks(backwards).findings), Said(CheckRanks(plain).findings));

  Timeline twice = plain;
  for (int step : {6, 9}) {
    twice.step_syncs.insert(twice.step_syncs.begin(), StepSync{0, step, 0.250, 0.5});
  }
  std::vector<RankSummary> rows = SummarizeRanks(twice, "h");
  EXPECT_EQ(Rows(rows), Rows(SummarizeRanks(plain, "h")));
  // Step 6 reported again (the same record twice): counted twice, with the
  // one sync record of its number each time.
  for (const StepEvent& e : plain.steps) {
    if (e.rank == 0 && e.step == 6) twice.steps.push_back(e);
  }
  rows = SummarizeRanks(twice, "h");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].steps, 15);
  ASSERT_TRUE(rows[0].sync_wait_s.has_value());
  EXPECT_NEAR(*rows[0].sync_wait_s, *SummarizeRanks(plain, "h")[0].sync_wait_s, 1e-12);
  // A straggler is still named, from the steps every rank reported once.
  const std::vector<Finding> findings = CheckRanks(twice).findings;
  auto s = WithId(findings, "distributed.straggler");
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(std::get<int64_t>(Find(*s[0], "rank")->value), 1);
  EXPECT_EQ(std::get<int64_t>(Find(*s[0], "steps_compared")->value), 14);
}

TEST(HookRecords, SyncAndHostRecordsReachTheSteps) {
  HookEvents e;
  ParseHookDatagram(
      "hello 42 1 1 2\n"
      "host 42 1 node-b\n"
      "step 42 1 7 3000000000 250000000 1000000000\n"
      "sync 42 1 7 300000000 450000000\n"
      "sync 42 1 7 -5 1\n"  // negative: malformed
      "sync 42 1 7\n"       // too short: malformed
      "host 42\n",          // too short: malformed
      0, e);
  ASSERT_EQ(e.steps.size(), 1u);
  ASSERT_EQ(e.syncs.size(), 1u);
  EXPECT_EQ(e.syncs[0].rank, 1);
  EXPECT_EQ(e.syncs[0].step, 7);
  EXPECT_DOUBLE_EQ(e.syncs[0].sync_seconds, 0.3);
  EXPECT_DOUBLE_EQ(e.syncs[0].cpu_seconds, 0.45);
  ASSERT_EQ(e.ranks.size(), 1u);
  EXPECT_EQ(e.ranks[0].pid, 42);
  EXPECT_EQ(e.ranks[0].rank, 1);
  EXPECT_EQ(e.ranks[0].world_size, 2);
  EXPECT_EQ(e.ranks[0].hostname, "node-b");
  EXPECT_EQ(e.malformed, 3);
}

TEST(RunFileRanks, SyncWaitsAndRanksRoundTrip) {
  char pattern[] = "/tmp/stallscope_ranks_XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  const std::string path = std::string(pattern) + "/run.db";
  {
    Result<RunWriter> w = RunWriter::Create(path, false);
    ASSERT_TRUE(w.ok()) << w.status().message();
    std::vector<StepEvent> steps = {{0, 3, 1.5, 0.1, 0.4}, {1, 3, 1.5, 0.1, 0.4}};
    std::vector<RankInfo> ranks = {{501, 0, 0, 2, "a"}, {502, 1, 1, 2, "b"}};
    std::vector<StepSync> syncs = {{1, 3, 0.25, 0.12}};
    ASSERT_TRUE(w->AppendInterval(TimelineSample{}, {}, steps, {}, {}, {}, ranks, syncs).ok());
    ASSERT_TRUE(w->Close().ok());
  }
  Result<Timeline> t = ReadRun(path);
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_EQ(t->steps.size(), 2u);
  ASSERT_EQ(t->step_syncs.size(), 1u);
  EXPECT_EQ(t->step_syncs[0].rank, 1);
  EXPECT_EQ(t->step_syncs[0].step, 3);
  EXPECT_DOUBLE_EQ(t->step_syncs[0].sync_seconds, 0.25);
  EXPECT_DOUBLE_EQ(t->step_syncs[0].cpu_seconds, 0.12);
  ASSERT_EQ(t->ranks.size(), 2u);
  EXPECT_EQ(t->ranks[1].pid, 502);
  EXPECT_EQ(t->ranks[1].hostname, "b");
  std::filesystem::remove_all(pattern);
}

}  // namespace
}  // namespace stallscope
