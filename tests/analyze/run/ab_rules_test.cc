// The ab judgement: step records of two runs -> rates -> what they mean.
#include "analyze/run/ab_rules.h"

#include <gtest/gtest.h>

namespace stallscope {
namespace {

// n steps of `seconds` each (wait `wait` of it), rank 0, the first ending at
// t = startup.
StepEvent Step(int rank, int64_t step, double t, double wait, double seconds) {
  StepEvent e;
  e.rank = rank;
  e.step = step;
  e.t = t;
  e.wait_seconds = wait;
  e.step_seconds = seconds;
  return e;
}

std::vector<StepEvent> Steps(int n, double seconds, double wait, double startup) {
  std::vector<StepEvent> out;
  for (int i = 0; i < n; ++i) out.push_back(Step(0, i, startup + i * seconds, wait, seconds));
  return out;
}

std::vector<LoaderConfig> Workers(int n) {
  LoaderConfig c;
  c.num_workers = n;
  return {c};
}

TEST(AbRules, SummaryLeavesTheWarmupOutAndUsesTheLowestRank) {
  std::vector<StepEvent> s = Steps(20, 0.1, 0.05, 3.0);
  s[0].step_seconds = 3.0;             // the first step pays for worker start-up
  s.push_back(Step(1, 0, 1, 0, 100));  // another rank: ignored
  AbRunFigures f = SummarizeAbRun(s, Workers(2), 6.0, 0);
  EXPECT_EQ(f.steps, 20);
  EXPECT_EQ(f.steady_steps, 18);  // 10% of 20 = 2 left out
  EXPECT_NEAR(f.steady_steps_per_s, 10.0, 1e-9);
  EXPECT_NEAR(f.data_wait_fraction, 0.5, 1e-9);
  EXPECT_DOUBLE_EQ(f.startup_seconds, 3.0);
  ASSERT_TRUE(f.loader_workers);
  EXPECT_EQ(*f.loader_workers, 2);
  EXPECT_EQ(SummarizeAbRun({}, {}, 1, 1).steps, 0);
}

TEST(AbRules, FasterWithoutWorkersIsLoaderOverhead) {
  AbRunFigures a = SummarizeAbRun(Steps(50, 0.2, 0.1, 2), Workers(4), 12, 0);
  AbRunFigures b = SummarizeAbRun(Steps(50, 0.1, 0.01, 0.5), Workers(0), 6, 0);
  AbChange change;
  change.loader_workers = 0;
  change.cpu_count = 2;
  std::vector<Finding> f = CompareAbRuns(a, b, change, "python train.py").findings;
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].id, "io.loader_overhead");
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_NE(f[0].summary.find("2.00x faster with num_workers=0 than with num_workers=4"),
            std::string::npos)
      << f[0].summary;
  ASSERT_TRUE(f[0].impact);
  EXPECT_NEAR(f[0].impact->wall_fraction, 0.5, 1e-9);
  EXPECT_NE(f[0].next.find("persistent_workers"), std::string::npos);
}

TEST(AbRules, SlowerWithoutWorkersMeansTheLoaderIsNeeded) {
  AbRunFigures a = SummarizeAbRun(Steps(50, 0.1, 0.03, 1), {}, 6, 0);
  AbRunFigures b = SummarizeAbRun(Steps(50, 0.3, 0.2, 1), {}, 16, 0);
  AbChange change;
  change.loader_workers = 0;
  std::vector<Finding> f = CompareAbRuns(a, b, change, "x").findings;
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].id, "io.loader_needed");
  EXPECT_EQ(f[0].severity, Severity::kInfo);
  // Still waiting 30% with its workers: input-bound, so storage is next.
  EXPECT_NE(f[0].next.find("stallscope dataset"), std::string::npos);
}

TEST(AbRules, WithinNoiseSaysNothingAndEnvChangesPickTheirLayer) {
  AbRunFigures a = SummarizeAbRun(Steps(50, 0.100, 0, 1), {}, 6, 0);
  AbRunFigures near = SummarizeAbRun(Steps(50, 0.095, 0, 1), {}, 6, 0);
  AbChange workers;
  workers.loader_workers = 0;
  EXPECT_TRUE(CompareAbRuns(a, near, workers, "x").findings.empty());
  AbRunFigures fast = SummarizeAbRun(Steps(50, 0.05, 0, 1), {}, 3, 0);
  AbChange nccl;
  nccl.env = {{"NCCL_SOCKET_IFNAME", "ib0"}};
  std::vector<Finding> f = CompareAbRuns(a, fast, nccl, "x").findings;
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].id, "network.env_change");
  EXPECT_EQ(f[0].layer, Layer::kNetwork);
  AbChange omp;
  omp.env = {{"OMP_NUM_THREADS", "1"}, {"NCCL_DEBUG", "INFO"}};
  f = CompareAbRuns(fast, a, omp, "x").findings;
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].id, "code.env_change");
  EXPECT_EQ(f[0].severity, Severity::kInfo);
}

}  // namespace
}  // namespace stallscope

namespace stallscope {
namespace {

TEST(PlanAb, TheChangeFromTheFlagsOrTheFlagThatIsWrong) {
  Result<AbPlan> plan = PlanAb(60, 0, 600, {"NCCL_P2P_DISABLE=1", "NCCL_DEBUG=INFO"}, 8);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->what, "num_workers=0 NCCL_P2P_DISABLE=1 NCCL_DEBUG=INFO");
  EXPECT_TRUE(plan->nccl_debug);
  EXPECT_EQ(plan->change.loader_workers, 0);
  EXPECT_EQ(plan->change.cpu_count, 8);
  ASSERT_EQ(plan->degraded_env.size(), 3u);
  EXPECT_EQ(plan->degraded_env[0].first, "STALLSCOPE_LOADER_WORKERS");
  EXPECT_EQ(plan->degraded_env[2].second, "INFO");
  plan = PlanAb(60, -1, 600, {"OMP_NUM_THREADS=1"}, 8);
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(plan->change.loader_workers.has_value());
  EXPECT_FALSE(plan->nccl_debug);

  auto error = [](Result<AbPlan> p) { return p.ok() ? std::string() : p.status().message(); };
  EXPECT_NE(error(PlanAb(1, 0, 600, {}, 8)).find("--steps 1"), std::string::npos);
  EXPECT_NE(error(PlanAb(60, 2000, 600, {}, 8)).find("--loader-workers 2000"), std::string::npos);
  EXPECT_NE(error(PlanAb(60, 0, 0, {}, 8)).find("--timeout"), std::string::npos);
  EXPECT_NE(error(PlanAb(60, -1, 600, {"A B=1"}, 8)).find("expected NAME=VALUE"),
            std::string::npos);
  EXPECT_NE(error(PlanAb(60, -1, 600, {"=1"}, 8)).find("expected NAME=VALUE"), std::string::npos);
  EXPECT_NE(error(PlanAb(60, -1, 600, {"STALLSCOPE_MAX_STEPS=3"}, 8)).find("ab's own"),
            std::string::npos);
  EXPECT_NE(error(PlanAb(60, -1, 600, {}, 8)).find("nothing to change"), std::string::npos);
}

}  // namespace
}  // namespace stallscope
