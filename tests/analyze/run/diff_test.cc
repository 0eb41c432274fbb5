// DiffRuns on run timelines built here: the headline, the step decomposed
// and its shares, the noise rule, the other changes and the notes.
#include "analyze/run/diff.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

namespace stallscope {
namespace {

// A run of `steps` steps per rank (after the warm-up ones), each `step_s`
// long of which `wait_s` waiting for data, with a little deterministic
// jitter (+-2% of the step) so that the noise test has a spread to judge.
Timeline Job(int ranks, int steps, double step_s, double wait_s, int workers = 2) {
  Timeline t;
  t.info.command = "python3 train.py";
  t.info.hostname = "n1";
  t.info.cpu_count = 8;
  t.info.mem_total_bytes = 64ull << 30;
  t.inputs_recorded = true;
  for (int r = 0; r < ranks; ++r) {
    t.ranks.push_back(RankInfo{1000 + r, r, r, ranks, "n1"});
    LoaderConfig l;
    l.rank = r;
    l.pid = 1000 + r;
    l.batch_size = 64;
    l.num_workers = workers;
    l.prefetch_factor = workers > 0 ? 2 : 0;
    t.loaders.push_back(l);
    double now = 1;
    for (int i = 0; i < steps + 2; ++i) {
      const double jitter = 1 + 0.02 * std::sin(i * 1.7 + r);
      StepEvent e;
      e.rank = r;
      e.step = i;
      e.step_seconds = step_s * jitter;
      e.wait_seconds = wait_s * jitter;
      now += e.step_seconds;
      e.t = now;
      t.steps.push_back(e);
    }
  }
  for (int i = 0; i < 20; ++i) {
    TimelineSample s;
    s.t = 1 + i;
    s.tree_rss_bytes = 1ull << 30;
    s.tree_cpu_percent = 150;
    s.loader_cpu_percent = 50;
    s.cpu_busy_percent = 30;
    t.samples.push_back(s);
  }
  return t;
}

RunAnalysis Analyzed(const std::string& path, Timeline t,
                     std::optional<std::string> baseline = std::nullopt) {
  return AnalyzeRun(path, std::move(t), std::move(baseline), FindingsWithNotes{});
}

const DiffChange* Change(const RunDiff& d, const std::string& what) {
  for (const DiffChange& c : d.changes) {
    if (c.what == what) return &c;
  }
  return nullptr;
}

TEST(DiffRuns, DataWaitThatGrewIsTheFirstCauseWithItsShare) {
  // B: the loader lost its workers; each step waits 80 ms more for data.
  RunDiff d = DiffRuns({Analyzed("a.db", Job(1, 40, 0.100, 0.002))},
                       {Analyzed("b.db", Job(1, 40, 0.182, 0.084, /*workers=*/0))});
  ASSERT_TRUE(d.slowdown);
  EXPECT_NEAR(*d.slowdown, 1.82, 0.01);
  EXPECT_TRUE(d.step_change_beyond_noise);
  EXPECT_TRUE(d.same_command);
  EXPECT_TRUE(d.same_hosts);
  ASSERT_FALSE(d.changes.empty());
  EXPECT_EQ(d.changes[0].what, "data_wait");
  ASSERT_TRUE(d.changes[0].share);
  EXPECT_NEAR(*d.changes[0].share, 1.0, 0.02);
  EXPECT_EQ(d.changes[0].unit, "s/step");
  // compute did not move: not a cause, listed with its share among the parts.
  for (const DiffComponent& c : d.components) {
    if (c.what == "compute") {
      EXPECT_FALSE(c.cause);
      ASSERT_TRUE(c.share);
      EXPECT_NEAR(*c.share, 0.0, 0.02);
    }
  }
  const DiffChange* workers = Change(d, "loader.num_workers");
  ASSERT_NE(workers, nullptr);
  EXPECT_EQ(workers->a, 2);
  EXPECT_EQ(workers->b, 0);
  EXPECT_FALSE(workers->share);
  const DiffChange* prefetch = Change(d, "loader.prefetch_factor");
  ASSERT_NE(prefetch, nullptr);
  EXPECT_TRUE(prefetch->b.is_null());  // none without workers, not 0
}

TEST(DiffRuns, TheSameJobTwiceListsNoCause) {
  Timeline a = Job(2, 40, 0.100, 0.010);
  Timeline b = Job(2, 40, 0.100, 0.010);
  for (StepEvent& e : b.steps) e.step_seconds *= 1.015;  // within noise
  RunDiff d = DiffRuns({Analyzed("a.db", a)}, {Analyzed("b.db", b)});
  ASSERT_TRUE(d.slowdown);
  EXPECT_FALSE(d.step_change_beyond_noise);
  for (const DiffComponent& c : d.components) {
    EXPECT_FALSE(c.cause) << c.what;
    EXPECT_FALSE(c.share) << c.what;
  }
  EXPECT_TRUE(d.changes.empty()) << d.changes[0].what;
  ASSERT_EQ(d.ranks.size(), 2u);
  EXPECT_NEAR(d.ranks[1].slowdown, 1.015, 0.01);
}

TEST(DiffRuns, ASmallChangeIsNotACause) {
  // 1.5 ms more compute a step on 100 ms: under 2 ms and under 10%.
  Timeline a = Job(1, 40, 0.100, 0.010);
  Timeline b = Job(1, 40, 0.1015, 0.010);
  for (StepEvent& e : b.steps) e.wait_seconds = a.steps[0].wait_seconds;  // no jitter: exact
  RunDiff d = DiffRuns({Analyzed("a.db", a)}, {Analyzed("b.db", b)});
  for (const DiffComponent& c : d.components) EXPECT_FALSE(c.cause) << c.what;
}

TEST(DiffRuns, AnEightPercentSlowdownIsExplained) {
  // 8 ms more compute on 100 ms steps that vary by 2%: real, and measured.
  RunDiff d = DiffRuns({Analyzed("a.db", Job(1, 40, 0.100, 0.010))},
                       {Analyzed("b.db", Job(1, 40, 0.108, 0.010))});
  EXPECT_TRUE(d.step_change_beyond_noise);
  ASSERT_FALSE(d.changes.empty());
  EXPECT_EQ(d.changes[0].what, "compute");
  EXPECT_GT(*d.changes[0].share, 0.9);
}

TEST(DiffRuns, SyncWaitOnOneSideOnlyDoesNotMakeACompute) {
  // A was hooked with stallscope.ddp (20 ms of each step waits in sync), B
  // was not: the same job, so no part may change.
  Timeline a = Job(1, 40, 0.100, 0.010);
  for (const StepEvent& e : a.steps) a.step_syncs.push_back(StepSync{e.rank, e.step, 0.020, 0.05});
  RunDiff d = DiffRuns({Analyzed("a.db", a)}, {Analyzed("b.db", Job(1, 40, 0.100, 0.010))});
  for (const DiffComponent& c : d.components) {
    EXPECT_NE(c.what, "sync_wait");
    EXPECT_NEAR(c.a_s, c.b_s, 1e-9) << c.what;
  }
}

TEST(DiffRuns, AVariableSetOnSomeNodesOnly) {
  const std::string set = R"({"environment":{"NCCL_IB_DISABLE":"1"}})";
  const std::string unset = R"({"environment":{}})";
  Timeline t = Job(1, 10, 0.1, 0.01);
  RunDiff d = DiffRuns({Analyzed("a0.db", t, unset), Analyzed("a1.db", t, unset)},
                       {Analyzed("b0.db", t, set), Analyzed("b1.db", t, unset)});
  const DiffChange* env = Change(d, "env.NCCL_IB_DISABLE");
  ASSERT_NE(env, nullptr);
  EXPECT_TRUE(env->a.is_null());
  EXPECT_EQ(env->b, "(unset) | 1");
}

TEST(DiffRuns, FasterBSharesWhatGotFaster) {
  RunDiff d = DiffRuns({Analyzed("a.db", Job(1, 40, 0.200, 0.100))},
                       {Analyzed("b.db", Job(1, 40, 0.110, 0.010))});
  ASSERT_TRUE(d.slowdown);
  EXPECT_LT(*d.slowdown, 1);
  ASSERT_FALSE(d.changes.empty());
  EXPECT_EQ(d.changes[0].what, "data_wait");
  EXPECT_NEAR(*d.changes[0].share, 1.0, 0.02);  // positive: it explains the speed-up
}

TEST(DiffRuns, ARunWithoutStepsIsANoteAndTheRestIsCompared) {
  Timeline b = Job(1, 0, 0.1, 0.0);
  b.steps.clear();
  const std::string with_env =
      R"({"schema":"stallscope.snapshot/1","environment":{"NCCL_P2P_DISABLE":"1"}})";
  RunDiff d = DiffRuns({Analyzed("a.db", Job(1, 40, 0.1, 0.01), R"({"environment":{}})")},
                       {Analyzed("b.db", b, with_env)});
  EXPECT_FALSE(d.slowdown);
  EXPECT_TRUE(d.components.empty());
  ASSERT_FALSE(d.notes.empty());
  EXPECT_NE(d.notes[0].find("b.db: no training steps"), std::string::npos) << d.notes[0];
  const DiffChange* env = Change(d, "env.NCCL_P2P_DISABLE");
  ASSERT_NE(env, nullptr);
  EXPECT_TRUE(env->a.is_null());
  EXPECT_EQ(env->b, "1");
}

TEST(DiffRuns, HostAndDiskFiguresBeyondTheirMargins) {
  Timeline a = Job(1, 40, 0.1, 0.01);
  Timeline b = Job(1, 40, 0.1, 0.01);
  a.info.data_device = b.info.data_device = "vdb";
  for (TimelineSample& s : a.samples) s.disk_util_percent = 5;
  for (TimelineSample& s : b.samples) {
    s.disk_util_percent = 95;
    s.disk_await_ms = 0.4;  // from 0: under its 1 ms margin
  }
  b.info.cpu_count = 4;
  RunDiff d = DiffRuns({Analyzed("a.db", a)}, {Analyzed("b.db", b)});
  const DiffChange* util = Change(d, "disk.util_percent");
  ASSERT_NE(util, nullptr);
  EXPECT_DOUBLE_EQ(util->a.get<double>(), 5);
  EXPECT_DOUBLE_EQ(util->b.get<double>(), 95);
  EXPECT_EQ(Change(d, "disk.await_ms"), nullptr);
  const DiffChange* cpus = Change(d, "host.cpus");
  ASSERT_NE(cpus, nullptr);
  EXPECT_EQ(cpus->b, 4);
}

TEST(DiffRuns, TheNicTowardTheMasterWhereBothRunsRecordedIt) {
  Timeline a = Job(1, 40, 0.1, 0.01);
  Timeline b = Job(1, 40, 0.1, 0.01);
  a.node = NodeInfo{};
  a.node->net_interface = "eth0";
  b.node = a.node;
  for (TimelineSample& s : a.samples)
    s.net_rx_bytes_per_s = s.net_tx_bytes_per_s = 400.0 * (1 << 20);
  for (TimelineSample& s : b.samples) {
    s.net_rx_bytes_per_s = 90.0 * (1 << 20);   // from 400 MiB/s: listed
    s.net_tx_bytes_per_s = 380.0 * (1 << 20);  // 5%: under its 20% margin
  }
  RunDiff d = DiffRuns({Analyzed("a.db", a)}, {Analyzed("b.db", b)});
  const DiffChange* rx = Change(d, "net.receive_mib_per_s");
  ASSERT_NE(rx, nullptr);
  EXPECT_DOUBLE_EQ(rx->a.get<double>(), 400);
  EXPECT_DOUBLE_EQ(rx->b.get<double>(), 90);
  EXPECT_EQ(rx->unit, "MiB/s");
  EXPECT_EQ(Change(d, "net.transmit_mib_per_s"), nullptr);
  EXPECT_EQ(Change(d, "net.interface"), nullptr);  // the same NIC
  // One side without rates (a single-node run): nothing compared.
  Timeline c = Job(1, 40, 0.1, 0.01);
  d = DiffRuns({Analyzed("a.db", a)}, {Analyzed("c.db", c)});
  EXPECT_EQ(Change(d, "net.receive_mib_per_s"), nullptr);
}

TraceRankBreakdown GpuRank(int rank, int steps, double compute_ms, double other_ms,
                           double idle_ms) {
  TraceRankBreakdown r;
  r.rank = rank;
  for (int i = 0; i < steps; ++i) r.steps.push_back(i);
  r.temporal = TemporalBreakdown{};
  r.temporal->compute_us = compute_ms * 1e3 * steps;
  r.temporal->non_compute_us = other_ms * 1e3 * steps;
  r.temporal->idle_us = idle_ms * 1e3 * steps;
  return r;
}

TEST(DiffRuns, TheStepOnTheGpuFromTraces) {
  // Two ranks each; B's GPU waits 60 ms more a step (its loader starved it).
  std::optional<DiffGpuSide> ga = GpuSideOf({GpuRank(0, 5, 80, 10, 8), GpuRank(1, 5, 80, 10, 12)});
  std::optional<DiffGpuSide> gb = GpuSideOf({GpuRank(0, 5, 80, 10, 68), GpuRank(1, 5, 80, 10, 72)});
  ASSERT_TRUE(ga && gb);
  EXPECT_EQ(ga->ranks, 2);
  EXPECT_EQ(ga->steps, 10);
  EXPECT_NEAR(ga->idle_s, 0.010, 1e-12);
  EXPECT_NEAR(gb->idle_s, 0.070, 1e-12);
  EXPECT_NEAR(ga->compute_s, 0.080, 1e-12);
  RunDiff d = DiffRuns({Analyzed("a.db", Job(1, 40, 0.100, 0.002))},
                       {Analyzed("b.db", Job(1, 40, 0.160, 0.062))}, ga, gb);
  ASSERT_EQ(d.gpu_components.size(), 3u);
  EXPECT_EQ(d.gpu_components[0].what, "gpu.idle");
  ASSERT_TRUE(d.gpu_components[0].share);
  EXPECT_NEAR(*d.gpu_components[0].share, 1.0, 0.03);
  EXPECT_TRUE(d.gpu_components[0].cause);
  for (size_t i = 1; i < 3; ++i) EXPECT_FALSE(d.gpu_components[i].cause) << i;
  const DiffChange* idle = Change(d, "gpu.idle");
  ASSERT_NE(idle, nullptr);
  ASSERT_TRUE(idle->share);
  EXPECT_EQ(Change(d, "gpu.compute"), nullptr);
  // Causes by share over both decompositions: data_wait and gpu.idle lead.
  ASSERT_GE(d.changes.size(), 2u);
  ASSERT_TRUE(d.changes[0].share && d.changes[1].share);
  EXPECT_GE(*d.changes[0].share, *d.changes[1].share);
  std::set<std::string> leading = {d.changes[0].what, d.changes[1].what};
  EXPECT_EQ(leading, (std::set<std::string>{"data_wait", "gpu.idle"}));

  // A CPU-only trace has no GPU side; one side only is a note naming the other.
  TraceRankBreakdown cpu;
  cpu.steps = {0, 1};
  EXPECT_FALSE(GpuSideOf({cpu}));
  d = DiffRuns({Analyzed("a.db", Job(1, 40, 0.1, 0.01))}, {Analyzed("b.db", Job(1, 40, 0.1, 0.01))},
               ga, std::nullopt);
  EXPECT_TRUE(d.gpu_components.empty());
  bool noted = false;
  for (const std::string& n : d.notes) noted |= n.rfind("b.db: no profiler trace", 0) == 0;
  EXPECT_TRUE(noted);
}

TEST(DiffRuns, SeveralFilesASideAreOneJob) {
  // Two nodes' files a side, rank 1 on the second node slowed in B.
  Timeline a0 = Job(1, 40, 0.1, 0.01), a1 = Job(1, 40, 0.1, 0.01);
  Timeline b0 = Job(1, 40, 0.1, 0.01), b1 = Job(1, 40, 0.3, 0.01);
  for (Timeline* t : {&a1, &b1}) {
    t->info.hostname = "n2";
    for (StepEvent& e : t->steps) e.rank = 1;
    for (RankInfo& r : t->ranks) {
      r.rank = 1;
      r.hostname = "n2";
    }
    for (LoaderConfig& l : t->loaders) l.rank = 1;
  }
  RunDiff d = DiffRuns({Analyzed("a0.db", a0), Analyzed("a1.db", a1)},
                       {Analyzed("b0.db", b0), Analyzed("b1.db", b1)});
  EXPECT_EQ(d.a.files.size(), 2u);
  EXPECT_EQ(d.a.world_size, 2);
  EXPECT_TRUE(d.same_hosts);
  ASSERT_EQ(d.ranks.size(), 2u);
  EXPECT_NEAR(d.ranks[0].slowdown, 1.0, 0.01);
  EXPECT_NEAR(d.ranks[1].slowdown, 3.0, 0.05);
  ASSERT_FALSE(d.changes.empty());
  EXPECT_EQ(d.changes[0].what, "compute");
}

// A timeline whose workers were caught reading a file on `device`.
Timeline ReadingFrom(const std::string& device) {
  Timeline t = Job(1, 40, 0.100, 0.010);
  // path, role, deleted, readers, samples, first_t, last_t, size, position,
  // fs_type, remote, device, format, archive, compressed, method
  t.inputs.push_back({"/data/images/0001.jpg", "worker", false, 1, 3, 1, 3, 48 << 10, 0, "ext4",
                      false, device, "", false, false, ""});
  return t;
}

TEST(DiffRuns, ASideThatCaughtNoInputTakesTheOneItsSettingCaught) {
  LoaderInput elsewhere;
  elsewhere.kind = "file";
  elsewhere.path = "/data/images/0002.jpg";
  elsewhere.fs_type = "ext4";
  elsewhere.device = "vda1";
  // A caught nothing; B read from loop0.
  RunDiff d = DiffRuns({Analyzed("a.db", Job(1, 40, 0.100, 0.010))},
                       {Analyzed("b.db", ReadingFrom("loop0"))}, std::nullopt, std::nullopt,
                       InputElsewhere{elsewhere, "a-neighbour.db"}, std::nullopt);
  const DiffChange* device = Change(d, "input.device");
  ASSERT_NE(device, nullptr);
  EXPECT_EQ(device->a, "vda1");
  EXPECT_EQ(device->b, "loop0");
  bool said = false;
  for (const std::string& n : d.notes) said = said || n.find("a-neighbour.db") != std::string::npos;
  EXPECT_TRUE(said) << ::testing::PrintToString(d.notes);

  // Without it, the input is not compared, and a note says why.
  d = DiffRuns({Analyzed("a.db", Job(1, 40, 0.100, 0.010))},
               {Analyzed("b.db", ReadingFrom("loop0"))});
  EXPECT_EQ(Change(d, "input.device"), nullptr);
  said = false;
  for (const std::string& n : d.notes)
    said = said || n.find("is not compared") != std::string::npos;
  EXPECT_TRUE(said) << ::testing::PrintToString(d.notes);
}

TEST(DiffRuns, ASideThatCaughtItsOwnInputKeepsIt) {
  LoaderInput elsewhere;
  elsewhere.device = "sdb";
  RunDiff d = DiffRuns({Analyzed("a.db", ReadingFrom("vda1"))},
                       {Analyzed("b.db", ReadingFrom("vda1"))}, std::nullopt, std::nullopt,
                       InputElsewhere{elsewhere, "x.db"}, InputElsewhere{elsewhere, "y.db"});
  EXPECT_EQ(Change(d, "input.device"), nullptr);  // vda1 on both: no change
  for (const std::string& n : d.notes) EXPECT_EQ(n.find("x.db"), std::string::npos) << n;
}

TEST(RunDiff, ArgvChangeNamesTheArgumentsThatChanged) {
  using V = std::vector<std::string>;
  const V a = {"python3", "train.py", "--workers", "2", "--epochs", "3"};
  EXPECT_EQ(ArgvChange(a, a), (std::pair<std::string, std::string>{"", ""}));
  // A value keeps its flag.
  EXPECT_EQ(ArgvChange(a, {"python3", "train.py", "--workers", "0", "--epochs", "3"}),
            (std::pair<std::string, std::string>{"--workers 2", "--workers 0"}));
  // A flag added at the end, one removed.
  EXPECT_EQ(ArgvChange(a, {"python3", "train.py", "--workers", "2", "--epochs", "3", "--amp"}),
            (std::pair<std::string, std::string>{"", "--amp"}));
  EXPECT_EQ(ArgvChange(a, {"python3", "train.py", "--epochs", "3"}),
            (std::pair<std::string, std::string>{"--workers 2", ""}));
  // Two changes apart: the span between them.
  EXPECT_EQ(
      ArgvChange(a, {"python3", "train.py", "--workers", "0", "--epochs", "5"}),
      (std::pair<std::string, std::string>{"--workers 2 --epochs 3", "--workers 0 --epochs 5"}));
  // Another interpreter: the first word.
  EXPECT_EQ(ArgvChange({"python3", "t.py"}, {"python3.11", "t.py"}),
            (std::pair<std::string, std::string>{"python3", "python3.11"}));
}

}  // namespace
}  // namespace stallscope
