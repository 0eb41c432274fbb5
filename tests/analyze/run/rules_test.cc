#include "analyze/run/rules.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>

#include "analyze/catalog.h"
#include "analyze/report.h"
#include "finding_matchers.h"
#include "process_points.h"

namespace stallscope {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kGiB = 1ull << 30;
constexpr int kRootPid = 100;

// ---- synthetic runs ----------------------------------------------------------

struct RunShape {
  double seconds = 3600;
  double interval = 10;
  int ranks = 1;
  int cpu_count = 16;
  int workers = 8;
  // The tree's RSS at time t (before noise).
  std::function<double(double)> rss = [](double) { return 8.0 * kGiB; };
  double rss_noise_bytes = 20.0 * kMiB;
  // Steps: every rank steps every step_s; wait(rank, t) of it waits for data.
  double step_s = 0.2;
  std::function<double(int, double)> wait = [](int, double) { return 0.01; };
  double first_wait_s = 20;  // the first step starts the workers
  double epoch_s = 600;      // 0: no epoch marks
  bool with_steps = true;
};

Timeline MakeRun(const RunShape& shape) {
  std::mt19937 random(42);
  auto jitter = [&](double amplitude) {
    return amplitude * (static_cast<double>(random() % 20001) / 10000.0 - 1.0);
  };
  Timeline tl;
  tl.info.command = "python3 train.py";
  tl.info.interval_seconds = shape.interval;
  tl.info.root_pid = kRootPid;
  tl.info.cpu_count = shape.cpu_count;
  tl.info.mem_total_bytes = 64 * kGiB;
  tl.info.data_device = "nvme0n1";
  tl.info.duration_seconds = shape.seconds;
  tl.info.exit_code = 0;
  for (double t = shape.interval; t <= shape.seconds + 1e-9; t += shape.interval) {
    TimelineSample s;
    s.t = t;
    s.processes = 1 + shape.ranks * (1 + shape.workers);
    double rss = shape.rss(t) + jitter(shape.rss_noise_bytes);
    s.tree_rss_bytes = static_cast<uint64_t>(rss);
    s.tree_cpu_percent = 100.0 * shape.ranks + 40.0 * shape.workers * shape.ranks;
    s.loader_cpu_percent = 40.0 * shape.workers * shape.ranks;
    s.mem_available_bytes = static_cast<uint64_t>(std::max(0.0, 48.0 * kGiB - rss));
    s.cpu_busy_percent = 30;
    s.disk_util_percent = 25;
    s.disk_await_ms = 1.5;
    s.disk_read_kib_per_s = 80'000;
    tl.samples.push_back(s);
    // The root rank holds what grows; the workers stay flat.
    for (int r = 0; r < shape.ranks; ++r) {
      int pid = kRootPid + r * 20;
      double worker_rss = 300.0 * kMiB;
      double rank_rss = (rss - shape.workers * shape.ranks * worker_rss) / shape.ranks;
      tl.processes.push_back(
          Point(t, pid, 1, "python3", static_cast<uint64_t>(std::max(0.0, rank_rss)), 100));
      for (int w = 1; w <= shape.workers; ++w) {
        tl.processes.push_back(
            Point(t, pid + w, pid, "pt_data_worker", static_cast<uint64_t>(worker_rss), 40));
      }
    }
  }
  for (int r = 0; r < shape.ranks; ++r) {
    LoaderConfig l;
    l.rank = r;
    l.pid = kRootPid + r * 20;
    l.batch_size = 64;
    l.num_workers = shape.workers;
    l.pin_memory = true;
    l.prefetch_factor = shape.workers > 0 ? 4 : 0;
    l.persistent_workers = true;
    l.dataset_length = 1'281'167;
    l.gpu_available = true;
    tl.loaders.push_back(l);
  }
  if (shape.with_steps) {
    for (int r = 0; r < shape.ranks; ++r) {
      double t = 1;
      int64_t step = 0;
      while (t < shape.seconds) {
        double wait = step == 0 ? shape.first_wait_s : shape.wait(r, t);
        double length = shape.step_s + wait;
        t += length;
        tl.steps.push_back({r, step++, t, wait, length});
      }
    }
  }
  if (shape.epoch_s > 0) {
    int n = 0;
    for (double t = 1; t < shape.seconds; t += shape.epoch_s) {
      for (int r = 0; r < shape.ranks; ++r) tl.epochs.push_back({r, n, t + 0.01 * r});
      ++n;
    }
  }
  return tl;
}

// ---- lookups -------------------------------------------------------------------

const Finding* LoaderProblem(const std::vector<Finding>& findings, std::string_view problem) {
  for (const Finding* f : FindAll(findings, "io.loader_config")) {
    if (EvidenceOf<std::string>(*f, "problem") == problem) return f;
  }
  return nullptr;
}

// ---- healthy and empty -------------------------------------------------------

TEST(RunRules, HealthyRunHasNoFindings) {
  std::vector<Finding> findings = CheckRun(MakeRun({})).findings;
  EXPECT_TRUE(findings.empty()) << Ids(findings);
}

TEST(RunRules, EmptyTimelineHasNoFindings) {
  Timeline tl;
  EXPECT_TRUE(CheckRun(tl).findings.empty());
  EXPECT_TRUE(SummarizeEpochs(tl).empty());
  EXPECT_FALSE(MeasureDataWait(tl).has_value());
}

TEST(RunRules, EveryFindingIdIsInTheCatalog) {
  RunShape shape;
  shape.workers = 0;
  shape.wait = [](int, double) { return 0.3; };
  shape.rss = [](double t) { return 8.0 * kGiB + 2.0 * kMiB * t; };
  Timeline tl = MakeRun(shape);
  tl.info.oom_killed = true;
  for (TimelineSample& s : tl.samples) {
    s.disk_util_percent = 99;
    s.disk_await_ms = 50;
    s.cpu_busy_percent = 99;
  }
  std::vector<Finding> findings = CheckRun(tl).findings;
  ASSERT_GE(findings.size(), 5u) << Ids(findings);
  for (const Finding& f : findings) {
    const Rule* rule = FindRule(f.id);
    ASSERT_NE(rule, nullptr) << f.id;
    EXPECT_EQ(rule->layer, f.layer) << f.id;
    EXPECT_FALSE(f.summary.empty()) << f.id;
    EXPECT_FALSE(f.next.empty()) << f.id;
    EXPECT_FALSE(f.evidence.empty()) << f.id;
  }
}

// ---- memory.rss_growth -------------------------------------------------------

TEST(RssGrowth, SteadyLeakWithNoiseAndOutliersIsFound) {
  RunShape shape;
  shape.rss = [](double t) { return 8.0 * kGiB + 1.0 * kMiB * t; };  // 3.5 GiB an hour
  shape.rss_noise_bytes = 100.0 * kMiB;
  Timeline tl = MakeRun(shape);
  // A few wild samples: a fork doubling the tree for an instant, a half-read tree.
  for (size_t i : {50u, 120u, 200u, 250u, 300u}) tl.samples[i].tree_rss_bytes *= 2;
  for (size_t i : {80u, 220u, 310u}) tl.samples[i].tree_rss_bytes /= 3;
  tl.samples[150].tree_rss_bytes = 0;  // unread

  std::vector<Finding> findings = CheckRun(tl).findings;
  const Finding* f = Find(findings, "memory.rss_growth");
  ASSERT_NE(f, nullptr) << Ids(findings);
  EXPECT_EQ(f->layer, Layer::kMemory);
  EXPECT_EQ(f->severity, Severity::kWarning);  // ~36 GiB left at 1 MiB/s: ~10 h
  EXPECT_NEAR(EvidenceOf<double>(*f, "slope_bytes_per_s"), 1.0 * kMiB, 0.05 * kMiB);
  EXPECT_NEAR(static_cast<double>(EvidenceOf<int64_t>(*f, "rss_start_bytes")), 8.0 * kGiB,
              0.2 * kGiB);
  EXPECT_NEAR(static_cast<double>(EvidenceOf<int64_t>(*f, "rss_end_bytes")), 11.5 * kGiB,
              0.2 * kGiB);
  EXPECT_EQ(EvidenceOf<std::string>(*f, "top_process"), "python3 (pid 100)");
  double to_oom = EvidenceOf<double>(*f, "projected_oom_s");
  EXPECT_GT(to_oom, 8 * 3600.0);
  EXPECT_LT(to_oom, 12 * 3600.0);
  EXPECT_EQ(EvidenceOf<int64_t>(*f, "memory_limit_bytes"), int64_t(64 * kGiB));
  EXPECT_NE(f->summary.find("python3 (pid 100)"), std::string::npos) << f->summary;
  EXPECT_NE(f->next.find("tracemalloc"), std::string::npos);
  EXPECT_NE(f->next.find("-p 100"), std::string::npos) << f->next;
  EXPECT_FALSE(f->impact.has_value());
}

TEST(RssGrowth, LeakAfterAWarmupIsFound) {
  RunShape shape;
  // Ten minutes of loading, then a steady leak.
  shape.rss = [](double t) {
    return 4.0 * kGiB + 6.0 * kGiB * (1 - std::exp(-t / 120)) + 0.5 * kMiB * t;
  };
  std::vector<Finding> findings = CheckRun(MakeRun(shape)).findings;
  const Finding* f = Find(findings, "memory.rss_growth");
  ASSERT_NE(f, nullptr) << Ids(findings);
  EXPECT_NEAR(EvidenceOf<double>(*f, "slope_bytes_per_s"), 0.5 * kMiB, 0.05 * kMiB);
}

TEST(RssGrowth, WarmupThatPlateausIsNotALeak) {
  RunShape shape;
  shape.rss = [](double t) { return 4.0 * kGiB + 6.0 * kGiB * (1 - std::exp(-t / 300)); };
  std::vector<Finding> findings = CheckRun(MakeRun(shape)).findings;
  EXPECT_EQ(Find(findings, "memory.rss_growth"), nullptr) << Ids(findings);
}

TEST(RssGrowth, SlowWarmupThatIsStillSettlingIsNotALeak) {
  // Time constant a quarter of the run: the judged part still rises 1.5 GiB,
  // but the last third much slower than the middle one.
  RunShape shape;
  shape.rss = [](double t) { return 4.0 * kGiB + 6.0 * kGiB * (1 - std::exp(-t / 900)); };
  std::vector<Finding> findings = CheckRun(MakeRun(shape)).findings;
  EXPECT_EQ(Find(findings, "memory.rss_growth"), nullptr) << Ids(findings);
}

TEST(RssGrowth, WarmupSettlingOverHalfTheRunIsNotALeak) {
  // Still rising at the end, but at half the pace of the middle third.
  RunShape shape;
  shape.rss = [](double t) { return 4.0 * kGiB + 6.0 * kGiB * (1 - std::exp(-t / 1800)); };
  std::vector<Finding> findings = CheckRun(MakeRun(shape)).findings;
  EXPECT_EQ(Find(findings, "memory.rss_growth"), nullptr) << Ids(findings);
}

TEST(RssGrowth, LeakThatSlowsLikeSqrtIsStillALeak) {
  // A cache keyed by ever-new items: growth slows but never stops.
  RunShape shape;
  shape.rss = [](double t) { return 4.0 * kGiB + 60.0 * kMiB * std::sqrt(t); };
  std::vector<Finding> findings = CheckRun(MakeRun(shape)).findings;
  EXPECT_NE(Find(findings, "memory.rss_growth"), nullptr) << Ids(findings);
}

TEST(RssGrowth, SmallDriftFarFromTheLimitIsNotALeak) {
  RunShape shape;
  shape.rss = [](double t) { return 8.0 * kGiB + 4.0 * 1024 * t; };  // 14 MiB an hour
  shape.rss_noise_bytes = 1.0 * kMiB;
  std::vector<Finding> findings = CheckRun(MakeRun(shape)).findings;
  EXPECT_EQ(Find(findings, "memory.rss_growth"), nullptr) << Ids(findings);
}

TEST(RssGrowth, NoiseAloneIsNotALeak) {
  RunShape shape;
  shape.rss_noise_bytes = 500.0 * kMiB;
  std::vector<Finding> findings = CheckRun(MakeRun(shape)).findings;
  EXPECT_EQ(Find(findings, "memory.rss_growth"), nullptr) << Ids(findings);
}

TEST(RssGrowth, SmallLeakNearTheLimitIsCritical) {
  // 40 MiB an hour is below 64 MiB of growth, but only 30 MiB is left.
  RunShape shape;
  shape.rss = [](double t) { return 8.0 * kGiB + 40.0 * kMiB * t / 3600; };
  shape.rss_noise_bytes = 0.5 * kMiB;
  Timeline tl = MakeRun(shape);
  tl.info.cgroup_limit_bytes = 8 * kGiB + 70 * kMiB;
  for (TimelineSample& s : tl.samples) {
    s.mem_available_bytes = *tl.info.cgroup_limit_bytes - s.tree_rss_bytes;
  }
  std::vector<Finding> findings = CheckRun(tl).findings;
  const Finding* f = Find(findings, "memory.rss_growth");
  ASSERT_NE(f, nullptr) << Ids(findings);
  EXPECT_EQ(f->severity, Severity::kCritical);
  EXPECT_LT(EvidenceOf<double>(*f, "projected_oom_s"), 3600.0);
  EXPECT_EQ(EvidenceOf<int64_t>(*f, "memory_limit_bytes"), int64_t(8 * kGiB + 70 * kMiB));
}

TEST(RssGrowth, TooFewSamplesAreNotJudged) {
  RunShape shape;
  shape.seconds = 100;  // 10 samples
  shape.rss = [](double t) { return 8.0 * kGiB + 100.0 * kMiB * t; };
  std::vector<Finding> findings = CheckRun(MakeRun(shape)).findings;
  EXPECT_EQ(Find(findings, "memory.rss_growth"), nullptr) << Ids(findings);
}

TEST(RssGrowth, ShortLivedWorkerIsNotNamedAsTheGrower) {
  RunShape shape;
  shape.ranks = 1;
  shape.rss = [](double t) { return 8.0 * kGiB + 1.0 * kMiB * t; };
  Timeline tl = MakeRun(shape);
  // A worker that lives five minutes and balloons in them.
  for (double t = 3000; t <= 3300; t += 10) {
    tl.processes.push_back(Point(t, 999, kRootPid, "pt_data_worker",
                                 static_cast<uint64_t>(100 * kMiB + 20 * kMiB * (t - 3000)), 50));
  }
  std::vector<Finding> findings = CheckRun(tl).findings;
  const Finding* f = Find(findings, "memory.rss_growth");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(EvidenceOf<std::string>(*f, "top_process"), "python3 (pid 100)");
}

// The shape of a real short run of examples/train_cpu.py --mode leak on two
// CPUs, sampled every 0.5 s: the interpreter and torch load (0-3 s), the
// two DataLoader workers start (a jump), 6 s of training that keeps 4 MiB a
// step, then the exit: the workers go and the job frees what it held, in
// three samples. With few samples a third, those three made the last third
// look flat and the leak was missed.
Timeline ShortLeakingRun(bool with_steps) {
  Timeline tl;
  tl.info.interval_seconds = 0.5;
  tl.info.root_pid = kRootPid;
  tl.info.mem_total_bytes = 24 * kGiB;
  tl.info.exit_code = 0;
  auto sample = [&](double t, double mib) {
    TimelineSample s;
    s.t = t;
    s.processes = t < 3.5 ? 1 : 3;
    s.tree_rss_bytes = static_cast<uint64_t>(mib * kMiB);
    s.mem_available_bytes = static_cast<uint64_t>(20.0 * kGiB - mib * kMiB);
    tl.samples.push_back(s);
    tl.processes.push_back(
        Point(t, kRootPid, 1, "python3", static_cast<uint64_t>(mib * kMiB / 2), 90));
  };
  const double startup[] = {31, 105, 169, 206, 233, 233};
  for (int i = 0; i < 6; ++i) sample(0.5 * (i + 1), startup[i]);
  double mib = 580;
  for (double t = 3.5; t <= 9.5 + 1e-9;
       t += 0.5, mib += 48 + (static_cast<int>(t * 2) % 3 - 1) * 4) {
    sample(t, mib);
  }
  sample(10.0, 0.85 * mib);  // the workers are gone
  sample(10.5, 0.45 * mib);  // the job frees its batches
  sample(11.0, 0.15 * mib);
  tl.info.duration_seconds = 11.2;
  if (with_steps) {
    for (int step = 0; step < 96; ++step) {
      tl.steps.push_back({0, step, 3.2 + step * 0.066, 0.002, 0.066});
    }
  }
  return tl;
}

TEST(RssGrowth, AShortRunsLeakIsFoundThroughItsTeardown) {
  for (bool with_steps : {true, false}) {
    Timeline tl = ShortLeakingRun(with_steps);
    std::vector<Finding> findings = CheckRun(tl).findings;
    const Finding* f = Find(findings, "memory.rss_growth");
    ASSERT_NE(f, nullptr) << "with_steps=" << with_steps << ": " << Ids(findings);
    EXPECT_NEAR(EvidenceOf<double>(*f, "slope_bytes_per_s"), 96.0 * kMiB, 12.0 * kMiB)
        << "with_steps=" << with_steps;
    EXPECT_GT(EvidenceOf<int64_t>(*f, "rss_end_bytes"), int64_t(1000 * kMiB));
  }
}

// Steps that slow down in the last third (the machine's load, the hook's own
// allocation tracing) slow the growth per second, not per step: still a
// leak. A run whose RSS stops growing per step is not one, whatever the steps'
// speed.
TEST(RssGrowth, StepsThatSlowDownAreNotAPlateau) {
  for (bool leak_stops : {false, true}) {
    Timeline tl;
    tl.info.mem_total_bytes = 64 * kGiB;
    // 60 s of steps at 10/s, then 30 s at 2/s; 4 MiB kept a step (until
    // step 650 when leak_stops).
    std::vector<double> ends;
    for (int i = 0; i < 600; ++i) ends.push_back(0.1 * (i + 1));
    for (int i = 0; i < 60; ++i) ends.push_back(60.0 + 0.5 * (i + 1));
    for (size_t i = 0; i < ends.size(); ++i) {
      tl.steps.push_back({0, static_cast<int64_t>(i), ends[i], 0.001, 0.1});
    }
    for (int k = 0; k <= 180; ++k) {
      double t = 0.5 * k;
      double done =
          static_cast<double>(std::upper_bound(ends.begin(), ends.end(), t) - ends.begin());
      double kept = leak_stops ? std::min(done, 450.0) : done;
      TimelineSample s;
      s.t = t;
      s.tree_rss_bytes = static_cast<uint64_t>(1.0 * kGiB + 4.0 * kMiB * kept);
      s.mem_available_bytes = 40 * kGiB;
      tl.samples.push_back(s);
    }
    FindingsWithNotes checked = CheckRun(tl);
    const Finding* f = Find(checked.findings, "memory.rss_growth");
    if (leak_stops) {
      EXPECT_EQ(f, nullptr);
    } else {
      EXPECT_NE(f, nullptr) << Ids(checked.findings);
    }
  }
}

// The hook placed the growth: the finding says where and what holds it,
// and its next check points at the line, not at tracemalloc.
TEST(RssGrowth, TheHooksTracingPlacesTheLeak) {
  Timeline tl = ShortLeakingRun(true);
  tl.allocations.push_back({0, kRootPid, 6.0, "note", 0, 0, 0, "", "tracing started: RSS rose"});
  tl.allocations.push_back({0, kRootPid, 9.0, "site", 99328, 2131, 0, "train.py:201", ""});
  tl.allocations.push_back({0, kRootPid, 9.0, "site", 2640, 31, 0, "train.py:210", ""});
  tl.allocations.push_back({0, kRootPid, 9.0, "holder", int64_t{300} << 20, 73, int64_t{150} << 20,
                            "train.py:210", "the module-level list 'KEPT' in train.py"});
  tl.allocations.push_back({0, kRootPid, 9.0, "note", 0, 0, 0, "", "tracing stopped"});
  std::vector<Finding> findings = CheckRun(tl).findings;
  const Finding* f = Find(findings, "memory.rss_growth");
  ASSERT_NE(f, nullptr) << Ids(findings);
  EXPECT_EQ(EvidenceOf<std::string>(*f, "leak_line"), "train.py:210");
  EXPECT_EQ(EvidenceOf<std::string>(*f, "leak_holder"),
            "the module-level list 'KEPT' in train.py holds 73 tensors, 300.0 MiB (+150.0 MiB "
            "while traced)");
  EXPECT_EQ(EvidenceOf<std::string>(*f, "alloc_growth_sites"),
            "train.py:201 +97.0 KiB in 2131 blocks; train.py:210 +2.6 KiB in 31 blocks");
  EXPECT_NE(f->summary.find("; it grows at train.py:210, where the module-level list 'KEPT'"),
            std::string::npos)
      << f->summary;
  EXPECT_EQ(f->next.rfind("look at train.py:210 (the module-level list 'KEPT' in train.py)", 0), 0u)
      << f->next;
  EXPECT_EQ(
      AllocationTraceNotes(tl),
      (std::vector<std::string>{"allocation tracing, rank 0 (pid 100): tracing started: RSS rose",
                                "allocation tracing, rank 0 (pid 100): tracing stopped"}));
  // Sites alone (no tensors held): the top site is the line.
  tl.allocations.erase(tl.allocations.begin() + 3);
  findings = CheckRun(tl).findings;
  f = Find(findings, "memory.rss_growth");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(EvidenceOf<std::string>(*f, "leak_line"), "train.py:201");
  EXPECT_EQ(EvidenceValueOf(*f, "leak_holder"), nullptr);
  // Without tracing the next check still teaches tracemalloc.
  tl.allocations.clear();
  findings = CheckRun(tl).findings;
  f = Find(findings, "memory.rss_growth");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(EvidenceValueOf(*f, "leak_line"), nullptr);
  EXPECT_NE(f->next.find("--trace-alloc"), std::string::npos) << f->next;
}

// ---- memory.oom_killed, available_low, swap_active --------------------------------

TEST(OomKilled, KilledRunIsCriticalWithPeakAndLimit) {
  RunShape shape;
  shape.rss = [](double t) { return 8.0 * kGiB + 15.0 * kMiB * t; };
  Timeline tl = MakeRun(shape);
  tl.info.oom_killed = true;
  tl.info.exit_signal = 9;
  tl.info.exit_code.reset();
  tl.info.cgroup_limit_bytes = 60 * kGiB;
  std::vector<Finding> findings = CheckRun(tl).findings;
  const Finding* f = Find(findings, "memory.oom_killed");
  ASSERT_NE(f, nullptr) << Ids(findings);
  EXPECT_EQ(f->severity, Severity::kCritical);
  EXPECT_GT(EvidenceOf<int64_t>(*f, "peak_tree_rss_bytes"), int64_t(60 * kGiB));
  EXPECT_EQ(EvidenceOf<int64_t>(*f, "peak_bytes"), EvidenceOf<int64_t>(*f, "peak_tree_rss_bytes"));
  EXPECT_EQ(EvidenceOf<std::string>(*f, "peak_source"), "samples");
  EXPECT_EQ(EvidenceOf<int64_t>(*f, "memory_limit_bytes"), int64_t(60 * kGiB));
  EXPECT_EQ(EvidenceOf<int64_t>(*f, "exit_signal"), 9);
  EXPECT_NE(f->summary.find("cgroup limit"), std::string::npos) << f->summary;
  EXPECT_NE(f->next.find("dmesg"), std::string::npos);
}

// Killed before the first sample: the samples saw nothing, so the peak is
// what the kernel kept, and never 0.
Timeline KilledBeforeTheFirstSample() {
  Timeline tl;
  tl.info.interval_seconds = 5;
  tl.info.mem_total_bytes = 24 * kGiB;
  tl.info.cgroup_limit_bytes = 300 * kMiB;
  tl.info.oom_killed = true;
  tl.info.exit_signal = 9;
  tl.info.duration_seconds = 0.33;
  tl.memory_peaks_recorded = true;
  tl.samples.push_back({});  // the one at the exit: the tree already gone
  tl.samples.back().t = 0.33;
  return tl;
}

TEST(OomKilled, BeforeTheFirstSampleThePeakIsTheKernelsOomReport) {
  Timeline tl = KilledBeforeTheFirstSample();
  tl.memory_peaks.push_back(
      {"cgroup", 0, 300 * kMiB, "/sys/fs/cgroup/memory/x/memory.max_usage_in_bytes"});
  tl.memory_peaks.push_back({"oom_kill", 4242, 296 * kMiB,
                             "Memory cgroup out of memory: Killed process 4242 (python3) ..."});
  const Finding* f = nullptr;
  std::vector<Finding> findings = CheckRun(tl).findings;
  f = Find(findings, "memory.oom_killed");
  ASSERT_NE(f, nullptr) << Ids(findings);
  EXPECT_EQ(EvidenceOf<bool>(*f, "peak_known"), true);
  EXPECT_EQ(EvidenceOf<int64_t>(*f, "peak_bytes"), int64_t(296 * kMiB));
  EXPECT_EQ(EvidenceOf<std::string>(*f, "peak_source"), "oom_kill");
  EXPECT_EQ(EvidenceOf<int64_t>(*f, "oom_victim_pid"), 4242);
  EXPECT_EQ(EvidenceOf<int64_t>(*f, "cgroup_peak_bytes"), int64_t(300 * kMiB));
  EXPECT_EQ(EvidenceValueOf(*f, "peak_tree_rss_bytes"), nullptr);  // no sample saw it: not 0
  EXPECT_NE(
      f->summary.find("peaked at 296.0 MiB (the kernel's OOM report of pid 4242) of 300.0 MiB"),
      std::string::npos)
      << f->summary;
  EXPECT_NE(f->summary.find("of 300.0 MiB (the cgroup limit)"), std::string::npos) << f->summary;
}

TEST(OomKilled, WithoutAnOomReportTheCgroupPeakStandsIn) {
  Timeline tl = KilledBeforeTheFirstSample();
  tl.memory_peaks.push_back({"cgroup", 0, 299 * kMiB, "memory.max_usage_in_bytes"});
  std::vector<Finding> findings = CheckRun(tl).findings;
  const Finding* f = Find(findings, "memory.oom_killed");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(EvidenceOf<int64_t>(*f, "peak_bytes"), int64_t(299 * kMiB));
  EXPECT_EQ(EvidenceOf<std::string>(*f, "peak_source"), "cgroup");
  EXPECT_NE(f->summary.find("memory cgroup peaked at 299.0 MiB"), std::string::npos) << f->summary;
}

TEST(OomKilled, NothingKeptMeansThePeakIsUnknownNeverZero) {
  Timeline tl = KilledBeforeTheFirstSample();
  std::vector<Finding> findings = CheckRun(tl).findings;
  const Finding* f = Find(findings, "memory.oom_killed");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(EvidenceOf<bool>(*f, "peak_known"), false);
  EXPECT_EQ(EvidenceValueOf(*f, "peak_bytes"), nullptr);
  EXPECT_EQ(EvidenceValueOf(*f, "peak_tree_rss_bytes"), nullptr);
  EXPECT_NE(f->summary.find("its peak is unknown (killed before the first sample"),
            std::string::npos)
      << f->summary;
  EXPECT_EQ(f->summary.find("0 B"), std::string::npos) << f->summary;
  // A run file from before memory_peaks says so.
  tl.memory_peaks_recorded = false;
  findings = CheckRun(tl).findings;
  f = Find(findings, "memory.oom_killed");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->summary.find("predates"), std::string::npos) << f->summary;
}

TEST(OomKilled, SampledPeakWinsOverASmallerVictim) {
  RunShape shape;
  shape.rss = [](double t) { return 8.0 * kGiB + 15.0 * kMiB * t; };
  Timeline tl = MakeRun(shape);
  tl.info.oom_killed = true;
  tl.info.exit_signal = 9;
  tl.memory_peaks_recorded = true;
  tl.memory_peaks.push_back({"oom_kill", 100, 1 * kGiB, "Killed process 100 (python3)"});
  std::vector<Finding> findings = CheckRun(tl).findings;
  const Finding* f = Find(findings, "memory.oom_killed");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(EvidenceOf<std::string>(*f, "peak_source"), "samples");
  EXPECT_EQ(EvidenceOf<int64_t>(*f, "peak_bytes"), EvidenceOf<int64_t>(*f, "peak_tree_rss_bytes"));
  EXPECT_EQ(EvidenceOf<int64_t>(*f, "oom_victim_rss_bytes"), int64_t(1 * kGiB));
}

TEST(OomKilled, SigkillWithoutTheOomFlagIsNotAnOom) {
  Timeline tl = MakeRun({});
  tl.info.exit_signal = 9;  // e.g. the scheduler's kill
  EXPECT_EQ(Find(CheckRun(tl).findings, "memory.oom_killed"), nullptr);
}

TEST(RunMemory, LowestAvailableIntervalIsJudgedByCheckMemory) {
  Timeline tl = MakeRun({});
  tl.samples[100].mem_available_bytes = 5 * kGiB;  // 7.8% of 64 GiB
  std::vector<Finding> findings = CheckRun(tl).findings;
  const Finding* f = Find(findings, "memory.available_low");
  ASSERT_NE(f, nullptr) << Ids(findings);
  EXPECT_EQ(f->severity, Severity::kCritical);
  EXPECT_EQ(EvidenceOf<int64_t>(*f, "available_bytes"), int64_t(5 * kGiB));
  EXPECT_DOUBLE_EQ(EvidenceOf<double>(*f, "lowest_at_s"), tl.samples[100].t);
}

TEST(RunMemory, UnreadAvailableIsNotALowOne) {
  Timeline tl = MakeRun({});
  tl.samples[3].mem_available_bytes = 0;
  EXPECT_EQ(Find(CheckRun(tl).findings, "memory.available_low"), nullptr);
}

TEST(RunMemory, SwapTrafficIsAveragedOverTheRun) {
  Timeline tl = MakeRun({});
  // Ten minutes of 100 pages/s in an hour: 16.7 pages/s over the run.
  for (TimelineSample& s : tl.samples) {
    if (s.t > 1200 && s.t <= 1800) {
      s.swap_out_pages_per_s = 100;
      s.swap_used_bytes = 2 * kGiB;
    }
  }
  std::vector<Finding> findings = CheckRun(tl).findings;
  const Finding* f = Find(findings, "memory.swap_active");
  ASSERT_NE(f, nullptr) << Ids(findings);
  EXPECT_EQ(f->severity, Severity::kWarning);
  EXPECT_NEAR(EvidenceOf<double>(*f, "swap_out_pages_per_s"), 100.0 / 6, 0.5);
  EXPECT_EQ(EvidenceOf<int64_t>(*f, "swap_used_bytes"), int64_t(2 * kGiB));
  EXPECT_EQ(EvidenceValueOf(*f, "swap_total_bytes"), nullptr);
}

// ---- io.input_bound ------------------------------------------------------------

TEST(InputBound, HalfTheStepWaitingIsCritical) {
  RunShape shape;
  shape.wait = [](int, double) { return 0.2; };  // 0.2 of 0.4 s
  std::vector<Finding> findings = CheckRun(MakeRun(shape)).findings;
  const Finding* f = Find(findings, "io.input_bound");
  ASSERT_NE(f, nullptr) << Ids(findings);
  EXPECT_EQ(f->severity, Severity::kCritical);
  EXPECT_NEAR(EvidenceOf<double>(*f, "data_wait_fraction"), 0.5, 1e-6);
  ASSERT_TRUE(f->impact.has_value());
  EXPECT_NEAR(f->impact->wall_fraction, 0.5, 1e-6);
  ASSERT_TRUE(f->impact->seconds_per_epoch.has_value());
  EXPECT_NEAR(*f->impact->seconds_per_epoch, 300, 5);  // half of a 600 s epoch
  EXPECT_NE(f->next.find("stallscope dataset"), std::string::npos) << f->next;
  EXPECT_NE(f->summary.find("50.0%"), std::string::npos) << f->summary;
}

TEST(InputBound, FirstStepStartupIsLeftOut) {
  RunShape shape;
  shape.seconds = 120;
  shape.epoch_s = 0;
  shape.first_wait_s = 60;  // would be half the run
  std::vector<Finding> findings = CheckRun(MakeRun(shape)).findings;
  EXPECT_EQ(Find(findings, "io.input_bound"), nullptr) << Ids(findings);
  std::optional<DataWait> w = MeasureDataWait(MakeRun(shape));
  ASSERT_TRUE(w.has_value());
  EXPECT_NEAR(w->fraction, 0.01 / 0.21, 1e-6);
}

TEST(InputBound, FifteenPercentWarns) {
  RunShape shape;
  shape.step_s = 0.17;
  shape.wait = [](int, double) { return 0.03; };
  std::vector<Finding> findings = CheckRun(MakeRun(shape)).findings;
  const Finding* f = Find(findings, "io.input_bound");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kWarning);
}

TEST(InputBound, NineAndAHalfPercentIsQuiet) {
  RunShape shape;
  shape.step_s = 0.181;
  shape.wait = [](int, double) { return 0.019; };
  EXPECT_EQ(Find(CheckRun(MakeRun(shape)).findings, "io.input_bound"), nullptr);
}

TEST(InputBound, TheWorstRankDecides) {
  RunShape shape;
  shape.ranks = 4;
  shape.workers = 2;
  shape.wait = [](int rank, double) { return rank == 3 ? 0.2 : 0.005; };
  std::vector<Finding> findings = CheckRun(MakeRun(shape)).findings;
  const Finding* f = Find(findings, "io.input_bound");
  ASSERT_NE(f, nullptr) << Ids(findings);
  EXPECT_EQ(f->severity, Severity::kCritical);
  EXPECT_EQ(EvidenceOf<int64_t>(*f, "worst_rank"), 3);
  EXPECT_NEAR(EvidenceOf<double>(*f, "worst_rank_wait_fraction"), 0.5, 1e-6);
  EXPECT_LT(EvidenceOf<double>(*f, "data_wait_fraction"), 0.3);
  EXPECT_EQ(EvidenceOf<int64_t>(*f, "ranks"), 4);
  EXPECT_NE(f->summary.find("rank 3"), std::string::npos) << f->summary;
}

TEST(InputBound, NoWorkersSuggestsHalfTheCpusPerRank) {
  RunShape shape;
  shape.workers = 0;
  shape.ranks = 2;
  shape.wait = [](int, double) { return 0.15; };
  std::vector<Finding> findings = CheckRun(MakeRun(shape)).findings;
  const Finding* f = Find(findings, "io.input_bound");
  ASSERT_NE(f, nullptr) << Ids(findings);
  EXPECT_NE(f->next.find("num_workers=4"), std::string::npos) << f->next;  // 16 / 2 / 2
  EXPECT_NE(f->next.find("persistent_workers=True"), std::string::npos);
}

TEST(InputBound, NoStepsNoFinding) {
  RunShape shape;
  shape.with_steps = false;
  EXPECT_TRUE(CheckRun(MakeRun(shape)).findings.empty());
}

// ---- io.device_saturated ---------------------------------------------------------

void Saturate(Timeline& tl, const std::function<bool(size_t)>& which) {
  for (size_t i = 0; i < tl.samples.size(); ++i) {
    if (!which(i)) continue;
    tl.samples[i].disk_util_percent = 98;
    tl.samples[i].disk_await_ms = 45;
    tl.samples[i].disk_read_kib_per_s = 30'000;
  }
}

TEST(DeviceSaturated, HalfTheRunSaturatedIsCritical) {
  RunShape shape;
  shape.wait = [](int, double) { return 0.1; };
  Timeline tl = MakeRun(shape);
  Saturate(tl, [](size_t i) { return i % 2 == 0; });
  std::vector<Finding> findings = CheckRun(tl).findings;
  const Finding* f = Find(findings, "io.device_saturated");
  ASSERT_NE(f, nullptr) << Ids(findings);
  EXPECT_EQ(f->severity, Severity::kCritical);
  EXPECT_EQ(EvidenceOf<std::string>(*f, "device"), "nvme0n1");
  EXPECT_NEAR(EvidenceOf<double>(*f, "saturated_fraction"), 0.5, 0.01);
  EXPECT_DOUBLE_EQ(EvidenceOf<double>(*f, "util_percent"), 98);
  EXPECT_DOUBLE_EQ(EvidenceOf<double>(*f, "await_ms"), 45);
  EXPECT_DOUBLE_EQ(EvidenceOf<double>(*f, "read_kib_per_s"), 30'000);
  EXPECT_NE(f->next.find("iostat -x 1 nvme0n1"), std::string::npos) << f->next;
  // The symptom comes first (the verdict is what the job pays, as in
  // DESIGN.md's example); the saturated disk follows as its cause.
  const Finding* first_io = nullptr;
  for (const Finding& g : findings) {
    if (g.layer == Layer::kIo && g.severity == Severity::kCritical) {
      first_io = &g;
      break;
    }
  }
  ASSERT_NE(first_io, nullptr);
  EXPECT_EQ(first_io->id, "io.input_bound");
}

TEST(DeviceSaturated, ThreeIntervalsInARowWarn) {
  RunShape shape;
  shape.with_steps = false;
  Timeline tl = MakeRun(shape);
  Saturate(tl, [](size_t i) { return i >= 40 && i < 43; });
  std::vector<Finding> findings = CheckRun(tl).findings;
  const Finding* f = Find(findings, "io.device_saturated");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kWarning);
  EXPECT_DOUBLE_EQ(EvidenceOf<double>(*f, "longest_saturated_s"), 30);
}

TEST(DeviceSaturated, ScatteredBlipsAreQuiet) {
  Timeline tl = MakeRun({});
  Saturate(tl, [](size_t i) { return i % 7 < 2; });  // pairs, 28% of the run
  EXPECT_EQ(Find(CheckRun(tl).findings, "io.device_saturated"), nullptr);
}

TEST(DeviceSaturated, BusyButFastDiskIsQuiet) {
  // NVMe serves many requests in parallel: %util reads 100 while await stays low.
  Timeline tl = MakeRun({});
  for (TimelineSample& s : tl.samples) {
    s.disk_util_percent = 100;
    s.disk_await_ms = 0.8;
  }
  EXPECT_EQ(Find(CheckRun(tl).findings, "io.device_saturated"), nullptr);
}

TEST(DeviceSaturated, StepsThatDoNotWaitLowerItToAWarning) {
  Timeline tl = MakeRun({});  // 5% wait
  Saturate(tl, [](size_t) { return true; });
  std::vector<Finding> findings = CheckRun(tl).findings;
  const Finding* f = Find(findings, "io.device_saturated");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kWarning);
  EXPECT_NE(f->summary.find("does not slow training"), std::string::npos) << f->summary;
}

// ---- io.loader_config ------------------------------------------------------------

TEST(LoaderConfig, NoWorkersWhileInputBoundIsCritical) {
  RunShape shape;
  shape.workers = 0;
  shape.wait = [](int, double) { return 0.3; };
  std::vector<Finding> findings = CheckRun(MakeRun(shape)).findings;
  const Finding* f = LoaderProblem(findings, "num_workers_zero");
  ASSERT_NE(f, nullptr) << Ids(findings);
  EXPECT_EQ(f->severity, Severity::kCritical);
  EXPECT_EQ(EvidenceOf<int64_t>(*f, "suggested_num_workers"), 8);
  EXPECT_NE(f->next.find("num_workers=8"), std::string::npos) << f->next;
  EXPECT_NE(f->next.find("prefetch_factor=4"), std::string::npos);
}

TEST(LoaderConfig, NoWorkersWithoutStepTimingWarns) {
  RunShape shape;
  shape.workers = 0;
  shape.with_steps = false;
  std::vector<Finding> findings = CheckRun(MakeRun(shape)).findings;
  const Finding* f = LoaderProblem(findings, "num_workers_zero");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kWarning);
}

TEST(LoaderConfig, NoWorkersThatKeepUpIsOnlyInfo) {
  RunShape shape;
  shape.workers = 0;  // an in-memory dataset: 5% wait
  std::vector<Finding> findings = CheckRun(MakeRun(shape)).findings;
  const Finding* f = LoaderProblem(findings, "num_workers_zero");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kInfo);
}

TEST(LoaderConfig, PinMemoryOffOnAGpuJobWarnsOnceForAllRanks) {
  RunShape shape;
  shape.ranks = 2;
  shape.workers = 4;
  Timeline tl = MakeRun(shape);
  for (LoaderConfig& l : tl.loaders) l.pin_memory = false;
  std::vector<Finding> findings = CheckRun(tl).findings;
  auto all = FindAll(findings, "io.loader_config");
  ASSERT_EQ(all.size(), 1u) << Ids(findings);
  EXPECT_EQ(EvidenceOf<std::string>(*all[0], "problem"), "pin_memory_off");
  EXPECT_EQ(EvidenceOf<std::string>(*all[0], "ranks"), "0,1");
  EXPECT_EQ(all[0]->severity, Severity::kWarning);
}

TEST(LoaderConfig, PinMemoryOffWithoutAGpuIsFine) {
  Timeline tl = MakeRun({});
  for (LoaderConfig& l : tl.loaders) {
    l.pin_memory = false;
    l.gpu_available = false;
  }
  EXPECT_TRUE(CheckRun(tl).findings.empty());
}

TEST(LoaderConfig, DeepPrefetchQueueWarns) {
  Timeline tl = MakeRun({});
  tl.loaders[0].num_workers = 16;
  tl.loaders[0].prefetch_factor = 8;
  std::vector<Finding> findings = CheckRun(tl).findings;
  const Finding* f = LoaderProblem(findings, "prefetch_queue_large");
  ASSERT_NE(f, nullptr) << Ids(findings);
  EXPECT_EQ(EvidenceOf<int64_t>(*f, "prefetch_batches"), 128);
  EXPECT_EQ(f->severity, Severity::kWarning);
}

TEST(LoaderConfig, QueueOfSixtyFourIsFine) {
  Timeline tl = MakeRun({});
  tl.loaders[0].num_workers = 16;
  tl.loaders[0].prefetch_factor = 4;  // 64, and 16 workers on 16 CPUs
  EXPECT_TRUE(CheckRun(tl).findings.empty()) << Ids(CheckRun(tl).findings);
}

TEST(LoaderConfig, MoreWorkersThanCpusWarns) {
  RunShape shape;
  shape.ranks = 4;
  shape.workers = 8;  // 32 workers on 16 CPUs
  std::vector<Finding> findings = CheckRun(MakeRun(shape)).findings;
  const Finding* f = LoaderProblem(findings, "workers_exceed_cpus");
  ASSERT_NE(f, nullptr) << Ids(findings);
  EXPECT_EQ(EvidenceOf<int64_t>(*f, "total_workers"), 32);
  EXPECT_NE(f->next.find("num_workers=2"), std::string::npos) << f->next;  // 16 / 2 / 4
}

TEST(LoaderConfig, ShortEpochsWithoutPersistentWorkersWarn) {
  RunShape shape;
  shape.seconds = 600;
  shape.epoch_s = 20;
  Timeline tl = MakeRun(shape);
  tl.loaders[0].persistent_workers = false;
  std::vector<Finding> findings = CheckRun(tl).findings;
  const Finding* f = LoaderProblem(findings, "workers_not_persistent");
  ASSERT_NE(f, nullptr) << Ids(findings);
  EXPECT_NEAR(EvidenceOf<double>(*f, "mean_epoch_s"), 20, 1);
  EXPECT_EQ(f->severity, Severity::kWarning);
}

TEST(LoaderConfig, LongEpochsWithCheapRestartsAreFine) {
  Timeline tl = MakeRun({});  // 600 s epochs, no extra wait at epoch starts
  tl.loaders[0].persistent_workers = false;
  EXPECT_TRUE(CheckRun(tl).findings.empty()) << Ids(CheckRun(tl).findings);
}

TEST(LoaderConfig, MeasuredRestartCostWarnsWithImpact) {
  RunShape shape;
  // The first step of every epoch waits 45 s for new workers.
  shape.wait = [](int, double t) { return std::fmod(t - 1, 600) < 0.5 ? 45.0 : 0.01; };
  Timeline tl = MakeRun(shape);
  tl.loaders[0].persistent_workers = false;
  // Put each epoch's first step's wait on exactly that step.
  for (const EpochEvent& e : tl.epochs) {
    auto it = std::find_if(tl.steps.begin(), tl.steps.end(),
                           [&](const StepEvent& s) { return s.t >= e.t; });
    if (it != tl.steps.end() && e.epoch > 0) {
      it->wait_seconds = 45;
      it->step_seconds = 45.2;
    }
  }
  std::vector<Finding> findings = CheckRun(tl).findings;
  const Finding* f = LoaderProblem(findings, "workers_not_persistent");
  ASSERT_NE(f, nullptr) << Ids(findings);
  EXPECT_NEAR(EvidenceOf<double>(*f, "restart_wait_s"), 45, 0.5);
  ASSERT_TRUE(f->impact.has_value());
  EXPECT_NEAR(*f->impact->seconds_per_epoch, 45, 0.5);
}

// ---- io.cpu_bound_loader -----------------------------------------------------------

void SaturateLoaderCpu(Timeline& tl) {
  for (TimelineSample& s : tl.samples) {
    s.loader_cpu_percent = 1480;  // the workers take the 15 CPUs the rank leaves
    s.tree_cpu_percent = 1580;
    s.cpu_busy_percent = 99;
  }
}

TEST(CpuBoundLoader, SaturatedWorkersWhileInputBoundIsCritical) {
  RunShape shape;
  shape.wait = [](int, double) { return 0.1; };
  Timeline tl = MakeRun(shape);
  SaturateLoaderCpu(tl);
  tl.processes.push_back(Point(5, 105, kRootPid, "pt_data_worker", 300 * kMiB, 5000));
  std::vector<Finding> findings = CheckRun(tl).findings;
  const Finding* f = Find(findings, "io.cpu_bound_loader");
  ASSERT_NE(f, nullptr) << Ids(findings);
  EXPECT_EQ(f->severity, Severity::kCritical);
  EXPECT_NEAR(EvidenceOf<double>(*f, "loader_cpu_share"), 1480.0 / 1500, 1e-6);
  EXPECT_EQ(EvidenceOf<int64_t>(*f, "num_workers"), 8);
  EXPECT_EQ(EvidenceOf<int64_t>(*f, "cpu_count"), 16);
  EXPECT_NE(f->next.find("py-spy top --pid 105"), std::string::npos) << f->next;
}

TEST(CpuBoundLoader, SaturatedWorkersWithoutStepTimingWarn) {
  RunShape shape;
  shape.with_steps = false;
  Timeline tl = MakeRun(shape);
  SaturateLoaderCpu(tl);
  std::vector<Finding> findings = CheckRun(tl).findings;
  const Finding* f = Find(findings, "io.cpu_bound_loader");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kWarning);
}

TEST(CpuBoundLoader, SaturatedWorkersThatKeepUpAreInfo) {
  Timeline tl = MakeRun({});
  SaturateLoaderCpu(tl);
  std::vector<Finding> findings = CheckRun(tl).findings;
  const Finding* f = Find(findings, "io.cpu_bound_loader");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kInfo);
}

// CPUs held by another job are io.cpu_contention, never a loader verdict.
TEST(CpuContention, BusyHostOutsideTheTreeMattersOnlyWhenStepsWait) {
  Timeline quiet = MakeRun({});
  for (TimelineSample& s : quiet.samples) s.cpu_busy_percent = 99;  // another job
  std::vector<Finding> calm = CheckRun(quiet).findings;
  EXPECT_EQ(Find(calm, "io.cpu_bound_loader"), nullptr);
  const Finding* info = Find(calm, "io.cpu_contention");
  ASSERT_NE(info, nullptr) << Ids(calm);
  EXPECT_EQ(info->severity, Severity::kInfo);

  RunShape shape;
  shape.wait = [](int, double) { return 0.1; };
  Timeline waiting = MakeRun(shape);
  for (TimelineSample& s : waiting.samples) s.cpu_busy_percent = 99;
  waiting.other_processes.push_back({4, 4242, "stress-ng", 1290});
  waiting.other_processes.push_back({4, 77, "sshd", 1});
  waiting.other_processes.push_back({6, 4242, "stress-ng", 1310});
  std::vector<Finding> findings = CheckRun(waiting).findings;
  EXPECT_EQ(Find(findings, "io.cpu_bound_loader"), nullptr) << Ids(findings);
  const Finding* f = Find(findings, "io.cpu_contention");
  ASSERT_NE(f, nullptr) << Ids(findings);
  EXPECT_EQ(f->severity, Severity::kCritical);
  // 99% of 16 CPUs busy, the tree using 4.4 of them (MakeRun's shape).
  EXPECT_NEAR(EvidenceOf<double>(*f, "outside_cpu_share"), 0.7275, 0.01);
  EXPECT_EQ(EvidenceOf<std::string>(*f, "top_processes"), "stress-ng (pid 4242, 1300% of a CPU)");
  EXPECT_NE(f->summary.find("stress-ng (pid 4242"), std::string::npos) << f->summary;
  EXPECT_NE(f->next.find("ps -o pid,user,etime,args -p 4242"), std::string::npos) << f->next;
}

TEST(CpuContention, NeverMoreSevereThanTheWaitItCauses) {
  // A busy host (another job) while steps wait 15%: io.input_bound is only a
  // warning, so the CPUs behind it must not become the critical verdict.
  RunShape shape;
  shape.wait = [](int, double) { return 0.03; };  // 0.03 of 0.2 s steps
  Timeline tl = MakeRun(shape);
  for (TimelineSample& s : tl.samples) s.cpu_busy_percent = 99;
  std::vector<Finding> findings = CheckRun(tl).findings;
  const Finding* f = Find(findings, "io.cpu_contention");
  ASSERT_NE(f, nullptr) << Ids(findings);
  EXPECT_EQ(f->severity, Severity::kWarning);
  const Finding* bound = Find(findings, "io.input_bound");
  ASSERT_NE(bound, nullptr);
  EXPECT_EQ(bound->severity, Severity::kWarning);
  Report report = MakeReport(findings, {Layer::kMemory, Layer::kIo}, {});
  EXPECT_FALSE(report.verdict.layer.has_value());
}

TEST(CpuContention, TheTreeUsingTheCpusItselfIsNotContention) {
  RunShape shape;
  shape.wait = [](int, double) { return 0.1; };
  Timeline tl = MakeRun(shape);
  SaturateLoaderCpu(tl);  // 99% busy, all of it the tree's
  std::vector<Finding> findings = CheckRun(tl).findings;
  EXPECT_EQ(Find(findings, "io.cpu_contention"), nullptr) << Ids(findings);
  EXPECT_NE(Find(findings, "io.cpu_bound_loader"), nullptr) << Ids(findings);
}

TEST(CpuBoundLoader, SaturatedForAThirdOfTheRunIsQuiet) {
  Timeline tl = MakeRun({});
  for (size_t i = 0; i < tl.samples.size() / 3; ++i) {
    tl.samples[i].loader_cpu_percent = 1480;
    tl.samples[i].tree_cpu_percent = 1580;
  }
  EXPECT_EQ(Find(CheckRun(tl).findings, "io.cpu_bound_loader"), nullptr);
}

// ---- SummarizeEpochs -----------------------------------------------------------------

TEST(Epochs, SummaryPerEpoch) {
  RunShape shape;
  shape.ranks = 2;
  shape.workers = 4;
  shape.rss = [](double t) { return 8.0 * kGiB + (t > 1200 && t < 1800 ? 1.0 * kGiB : 0.0); };
  shape.rss_noise_bytes = 0;
  std::vector<EpochSummary> epochs = SummarizeEpochs(MakeRun(shape));
  ASSERT_EQ(epochs.size(), 6u);
  EXPECT_EQ(epochs[0].epoch, 0);
  EXPECT_DOUBLE_EQ(epochs[0].start_s, 1);  // the earliest rank's mark
  EXPECT_DOUBLE_EQ(epochs[1].start_s, 601);
  EXPECT_DOUBLE_EQ(epochs[1].duration_s, 600);
  EXPECT_NEAR(static_cast<double>(epochs[1].steps), 600 / 0.21, 2);  // rank 0's steps only
  EXPECT_NEAR(epochs[1].steps_per_s, 1 / 0.21, 0.01);
  ASSERT_TRUE(epochs[1].data_wait_fraction.has_value());
  EXPECT_NEAR(*epochs[1].data_wait_fraction, 0.01 / 0.21, 1e-3);
  EXPECT_EQ(epochs[2].peak_tree_rss_bytes, 9 * kGiB);
  EXPECT_EQ(epochs[1].peak_tree_rss_bytes, 8 * kGiB);
  // The last epoch ends at its last step.
  EXPECT_NEAR(epochs[5].start_s + epochs[5].duration_s, 3600, 0.5);
}

TEST(Epochs, NoMarksNoSummary) {
  RunShape shape;
  shape.epoch_s = 0;
  EXPECT_TRUE(SummarizeEpochs(MakeRun(shape)).empty());
}

}  // namespace
}  // namespace stallscope
