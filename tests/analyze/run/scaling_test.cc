// The arithmetic and rules of `stallscope scale` (analyze/run/scaling.h), with
// figures computed by hand in the comments.
#include "analyze/run/scaling.h"

#include <gtest/gtest.h>

#include "finding_matchers.h"

namespace stallscope {
namespace {

ScalePoint Point(int procs, double samples_per_s, double step_s) {
  ScalePoint p;
  p.procs = procs;
  p.ranks_reported = procs;
  p.samples_per_s = samples_per_s;
  p.step_s = step_s;
  return p;
}

TEST(Amdahl, RecoversAKnownSerialFraction) {
  // s = 0.1: S(n) = 1 / (0.1 + 0.9 / n): S(2) = 1/0.55, S(4) = 1/0.325, S(8) = 1/0.2125.
  std::optional<double> s = FitAmdahl({{1, 1.0}, {2, 1 / 0.55}, {4, 1 / 0.325}, {8, 1 / 0.2125}});
  ASSERT_TRUE(s);
  EXPECT_NEAR(*s, 0.1, 1e-12);
  // Perfect scaling: s = 0.
  EXPECT_NEAR(*FitAmdahl({{1, 1}, {2, 2}, {4, 4}}), 0.0, 1e-12);
  // Only n = 1: nothing to fit.
  EXPECT_FALSE(FitAmdahl({{1, 1}}));
}

TEST(Amdahl, LeastSquaresOverNoisySizes) {
  // Points (x = 1 - 1/n, y = 1/S - 1/n): n=2, S=1.6: x=0.5, y=0.125;
  // n=4, S=2.5: x=0.75, y=0.15. s = (0.0625 + 0.1125) / (0.25 + 0.5625) = 0.175/0.8125.
  EXPECT_NEAR(*FitAmdahl({{1, 1}, {2, 1.6}, {4, 2.5}}), 0.175 / 0.8125, 1e-12);
}

TEST(Scaling, SpeedupEfficiencyCommRatioAndAccumulation) {
  // 1 rank: 100 samples/s, 0.64 s a step (batch 64). 2 ranks: 160 samples/s,
  // 0.80 s a step. 4 ranks: 256 samples/s, 1.0 s a step.
  ScaleAnalysis a = AnalyzeScaling({Point(4, 256, 1.0), Point(1, 100, 0.64), Point(2, 160, 0.80)});
  ASSERT_EQ(a.rows.size(), 3u);
  EXPECT_EQ(a.base_procs, 1);
  EXPECT_EQ(a.rows[0].point.procs, 1);  // sorted
  EXPECT_DOUBLE_EQ(a.rows[1].speedup, 1.6);
  EXPECT_DOUBLE_EQ(a.rows[1].efficiency, 0.8);
  EXPECT_DOUBLE_EQ(a.rows[2].speedup, 2.56);
  EXPECT_DOUBLE_EQ(a.rows[2].efficiency, 0.64);
  // (0.80 - 0.64) / 0.80 = 0.2; (1.0 - 0.64) / 1.0 = 0.36.
  EXPECT_NEAR(a.rows[1].comm_ratio, 0.2, 1e-12);
  EXPECT_NEAR(a.rows[2].comm_ratio, 0.36, 1e-12);
  EXPECT_DOUBLE_EQ(a.rows[0].comm_ratio, 0.0);
  // At 4 ranks: compute 0.64, comm 0.36. k=2: 0.36 / 1.64; k=4: 0.36 / 2.92; k=8: 0.36 / 5.48.
  ASSERT_EQ(a.accumulation.size(), 3u);
  EXPECT_EQ(a.accumulation[0].k, 2);
  EXPECT_NEAR(a.accumulation[0].comm_ratio, 0.36 / 1.64, 1e-12);
  EXPECT_NEAR(a.accumulation[1].comm_ratio, 0.36 / 2.92, 1e-12);
  EXPECT_NEAR(a.accumulation[2].comm_ratio, 0.36 / 5.48, 1e-12);
  EXPECT_NEAR(a.accumulation[2].efficiency, 5.12 / 5.48, 1e-12);
  // Fit: n=2 x=0.5 y=1/1.6-0.5=0.125; n=4 x=0.75 y=1/2.56-0.25=0.140625.
  // s = (0.0625 + 0.10546875) / (0.25 + 0.5625).
  ASSERT_TRUE(a.serial_fraction);
  EXPECT_NEAR(*a.serial_fraction, (0.0625 + 0.10546875) / 0.8125, 1e-12);
}

TEST(Scaling, ABaseAboveOneAndAFasterStep) {
  // From 2 ranks: 4 ranks doing 1.9x is 0.95 efficiency; a shorter step
  // than the base gives a comm ratio of 0, not a negative one.
  ScaleAnalysis a = AnalyzeScaling({Point(2, 100, 0.5), Point(4, 190, 0.45)});
  EXPECT_EQ(a.base_procs, 2);
  EXPECT_DOUBLE_EQ(a.rows[1].efficiency, 0.95);
  EXPECT_DOUBLE_EQ(a.rows[1].comm_ratio, 0.0);
  EXPECT_TRUE(CheckScaling(a, "cmd").findings.empty());
}

TEST(ScalingRules, PoorEfficiencyAndHighCommRatio) {
  ScaleAnalysis a = AnalyzeScaling({Point(1, 100, 0.64), Point(2, 160, 0.80), Point(4, 256, 1.0)});
  std::vector<Finding> f = CheckScaling(a, "python3 train.py").findings;
  const Finding* poor = Find(f, "distributed.scaling_poor");
  ASSERT_NE(poor, nullptr);  // 0.64 < 0.7
  EXPECT_EQ(poor->severity, Severity::kWarning);
  EXPECT_EQ(poor->layer, Layer::kDistributed);
  // The next check follows triage order: memory, io, network.
  size_t memory = poor->next.find("doctor"), io = poor->next.find("run --procs 4"),
         net = poor->next.find("bench allreduce");
  ASSERT_NE(memory, std::string::npos);
  ASSERT_NE(io, std::string::npos);
  ASSERT_NE(net, std::string::npos);
  EXPECT_LT(memory, io);
  EXPECT_LT(io, net);
  const Finding* comm = Find(f, "network.comm_ratio_high");
  ASSERT_NE(comm, nullptr);  // 0.36 > 0.30
  EXPECT_EQ(comm->severity, Severity::kWarning);
  EXPECT_NE(comm->next.find("4: 12%"), std::string::npos) << comm->next;  // 0.36/2.92
  EXPECT_LT(comm->next.find("doctor"), comm->next.find("bench allreduce"));
}

TEST(ScalingRules, EightAgainstFourUnderOnePointFive) {
  // 4 ranks at 0.9 efficiency, 8 at 5.0x (0.625, also poor), and 8 vs 4 = 5.0/3.6 = 1.39x.
  ScaleAnalysis a = AnalyzeScaling({Point(1, 100, 1.0), Point(4, 360, 1.05), Point(8, 500, 1.1)});
  std::vector<Finding> fa = CheckScaling(a, "x").findings;
  const Finding* poor = Find(fa, "distributed.scaling_poor");
  ASSERT_NE(poor, nullptr);
  EXPECT_NE(poor->summary.find("8 against 4"), std::string::npos) << poor->summary;
  bool saw_gain = false;
  for (const Evidence& e : poor->evidence) {
    if (e.name == "doubling_gain") {
      saw_gain = true;
      EXPECT_NEAR(std::get<double>(e.value), 500.0 / 360, 1e-12);
    }
  }
  EXPECT_TRUE(saw_gain);
  // Good efficiency at 8 but a weak doubling still fires: 1:100, 4:400, 8:560 (0.7 exactly).
  ScaleAnalysis b = AnalyzeScaling({Point(1, 100, 1.0), Point(4, 400, 1.0), Point(8, 560, 1.0)});
  std::vector<Finding> fb = CheckScaling(b, "x").findings;
  const Finding* weak = Find(fb, "distributed.scaling_poor");
  ASSERT_NE(weak, nullptr);  // 560/400 = 1.4 < 1.5
  // A healthy curve raises nothing: 0.9 efficiency, 8 vs 4 = 1.8x.
  ScaleAnalysis c = AnalyzeScaling({Point(1, 100, 1.0), Point(4, 400, 1.0), Point(8, 720, 1.1)});
  EXPECT_TRUE(CheckScaling(c, "x").findings.empty());
}

TEST(ScalePoints, FromHookSteps) {
  // Two ranks, batch 32; steps 0..2 are warm-up. Rank 0 ends counted steps
  // at t = 1.0, 1.5, 2.0, 2.5 (2 steps/s); rank 1 at 1.0, 2.0, 3.0, 4.0 (1 step/s).
  std::vector<StepEvent> steps;
  std::vector<StepSync> syncs;
  for (int s = 0; s < 7; ++s) {
    double t0 = s < 3 ? 0.1 * s : 1.0 + 0.5 * (s - 3);
    double t1 = s < 3 ? 0.1 * s : 1.0 + 1.0 * (s - 3);
    steps.push_back({0, s, t0, 0.01, 0.5});
    steps.push_back({1, s, t1, 0.01, 1.0});
    syncs.push_back({0, s, 0.2, 0.3});
    syncs.push_back({1, s, 0.1, 0.3});
  }
  std::vector<LoaderConfig> loaders(2);
  loaders[0].rank = 0;
  loaders[0].batch_size = 32;
  loaders[1].rank = 1;
  loaders[1].batch_size = 32;
  ScalePoint p = MeasureScalePoint(2, steps, syncs, loaders);
  EXPECT_EQ(p.ranks_reported, 2);
  EXPECT_EQ(p.steps, 8);
  EXPECT_DOUBLE_EQ(p.samples_per_s, 2 * 32 + 1 * 32);
  EXPECT_DOUBLE_EQ(p.step_s, 0.75);
  ASSERT_TRUE(p.sync_s);
  EXPECT_DOUBLE_EQ(*p.sync_s, 0.15);
  // No batch size seen: samples are steps.
  ScalePoint no_batch = MeasureScalePoint(2, steps, {}, {});
  EXPECT_DOUBLE_EQ(no_batch.samples_per_s, 3.0);
  EXPECT_FALSE(no_batch.sync_s);  // no sync records: not measured
}

}  // namespace
}  // namespace stallscope
