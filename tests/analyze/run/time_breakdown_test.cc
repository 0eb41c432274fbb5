// The time breakdown: every second of the wall time in one row, the rows
// each where its definition puts it (analyze/run/time_breakdown.h).
#include "analyze/run/time_breakdown.h"

#include <gtest/gtest.h>

#include <numeric>
#include <random>

namespace stallscope {
namespace {

double Sum(const RankTime& r) { return std::accumulate(r.seconds.begin(), r.seconds.end(), 0.0); }

void AddStep(Timeline& tl, int rank, int64_t step, double end, double length, double wait) {
  tl.steps.push_back({rank, step, end, wait, length});
}

// One rank, 10 s: start-up to 1.0; epoch 0's four 1 s steps (0.2 s wait
// each); a checkpoint at 5.2-5.8 in the gap before epoch 1 (marked at 6.0);
// epoch 1's two steps from 6.5, the last holding a 0.3 s evaluation loop;
// nothing after 8.5.
Timeline TwoEpochs() {
  Timeline tl;
  tl.info.duration_seconds = 10.0;
  tl.epochs = {{0, 0, 0.9}, {0, 1, 6.0}};
  for (int i = 0; i < 4; ++i) AddStep(tl, 0, i, 2.0 + i, 1.0, 0.2);
  AddStep(tl, 0, 4, 7.5, 1.0, 0.2);
  AddStep(tl, 0, 5, 8.5, 1.0, 0.2);
  tl.spans = {{100, 0, "checkpoint", 5.2, 5.8}, {100, 0, "eval", 7.8, 8.1}};
  return tl;
}

TEST(TimeBreakdown, EverySecondInItsRow) {
  TimeBreakdown t = BreakDownTime(TwoEpochs());
  ASSERT_EQ(t.ranks.size(), 1u);
  const RankTime& r = t.ranks[0];
  EXPECT_DOUBLE_EQ(r.wall_s, 10.0);
  EXPECT_NEAR(r.at(TimeRow::kStartup), 1.0, 1e-9);
  EXPECT_NEAR(r.at(TimeRow::kDataWait), 1.2, 1e-9);
  EXPECT_NEAR(r.at(TimeRow::kCompute), 6 * 0.8 - 0.3, 1e-9);
  EXPECT_NEAR(r.at(TimeRow::kEvaluation), 0.3, 1e-9);
  EXPECT_NEAR(r.at(TimeRow::kCheckpoints), 0.6, 1e-9);
  EXPECT_NEAR(r.at(TimeRow::kEpochEnds), 1.5 - 0.6, 1e-9);
  EXPECT_NEAR(r.at(TimeRow::kIdleGaps), 0.0, 1e-9);
  EXPECT_NEAR(r.at(TimeRow::kAfterLastStep), 1.5, 1e-9);
  EXPECT_NEAR(r.at(TimeRow::kCommunication), 0.0, 1e-9);
  EXPECT_NEAR(Sum(r), 10.0, 1e-9);
  EXPECT_EQ(r.steps, 6);
  EXPECT_EQ(r.checkpoints, 1);
  EXPECT_EQ(r.eval_loops, 1);
  EXPECT_TRUE(t.notes.empty());  // one rank: no sync records wanted
}

TEST(TimeBreakdown, AGapWithoutAnEpochMarkIsIdleAndSpansOutsideTheStepsKeepTheirRows) {
  Timeline tl = TwoEpochs();
  tl.epochs = {{0, 0, 0.9}};  // no mark between the loops
  // An evaluation before the first step and a checkpoint after the last.
  tl.spans.push_back({100, 0, "eval", 0.2, 0.7});
  tl.spans.push_back({100, 0, "checkpoint", 9.0, 9.5});
  std::sort(tl.spans.begin(), tl.spans.end(),
            [](const PhaseSpan& a, const PhaseSpan& b) { return a.start_t < b.start_t; });
  const RankTime r = BreakDownTime(tl).ranks.at(0);
  EXPECT_NEAR(r.at(TimeRow::kEpochEnds), 0.0, 1e-9);
  EXPECT_NEAR(r.at(TimeRow::kIdleGaps), 0.9, 1e-9);
  EXPECT_NEAR(r.at(TimeRow::kStartup), 0.5, 1e-9);
  EXPECT_NEAR(r.at(TimeRow::kEvaluation), 0.8, 1e-9);
  EXPECT_NEAR(r.at(TimeRow::kCheckpoints), 1.1, 1e-9);
  EXPECT_NEAR(r.at(TimeRow::kAfterLastStep), 1.0, 1e-9);
  EXPECT_NEAR(Sum(r), 10.0, 1e-9);
}

TEST(TimeBreakdown, RanksApartAndTheirSyncIsCommunication) {
  Timeline tl;
  tl.info.duration_seconds = 5.0;
  for (int rank : {0, 1}) {
    for (int i = 0; i < 3; ++i) {
      AddStep(tl, rank, i, 1.0 + i + 0.1 * rank, 1.0, 0.1);
      tl.step_syncs.push_back({rank, i, rank == 0 ? 0.5 : 0.2, 0.3});
    }
  }
  tl.spans = {{7, 1, "checkpoint", 4.2, 4.4}};
  TimeBreakdown t = BreakDownTime(tl);
  ASSERT_EQ(t.ranks.size(), 2u);
  EXPECT_EQ(t.ranks[0].rank, 0);
  EXPECT_NEAR(t.ranks[0].at(TimeRow::kCommunication), 1.5, 1e-9);
  EXPECT_NEAR(t.ranks[1].at(TimeRow::kCommunication), 0.6, 1e-9);
  EXPECT_NEAR(t.ranks[0].at(TimeRow::kCompute), 3 * 0.4, 1e-9);
  EXPECT_NEAR(t.ranks[0].at(TimeRow::kCheckpoints), 0.0, 1e-9);  // rank 1's
  EXPECT_NEAR(t.ranks[1].at(TimeRow::kCheckpoints), 0.2, 1e-9);
  for (const RankTime& r : t.ranks) EXPECT_NEAR(Sum(r), 5.0, 1e-9);
}

// Gloo's bucket records of every rank: each rank's wait for the last one
// to launch a bucket's all-reduce is its own row, out of communication.
TEST(TimeBreakdown, TheWaitForTheLastRankIsSplitFromCommunication) {
  Timeline tl;
  tl.info.duration_seconds = 2.0;
  tl.ranks = {{10, 0, 0, 2, "a"}, {11, 1, 1, 2, "a"}};
  for (int rank : {0, 1}) {
    AddStep(tl, rank, 0, 1.0, 1.0, 0.0);
    tl.step_syncs.push_back({rank, 0, rank == 0 ? 0.5 : 0.2, 0.3});
  }
  // Two buckets: rank 1 launches each 0.3 s after rank 0; they overlap on
  // rank 0 (0.5-0.8 and 0.6-0.9): 0.4 s of waiting, counted once.
  tl.bucket_syncs = {
      {0, 0, 0, 0.5, 1.0}, {1, 0, 0, 0.8, 1.0}, {0, 0, 1, 0.6, 1.0}, {1, 0, 1, 0.9, 1.0}};
  TimeBreakdown t = BreakDownTime(tl);
  ASSERT_EQ(t.ranks.size(), 2u);
  EXPECT_NEAR(t.ranks[0].at(TimeRow::kRankWait), 0.4, 1e-9);
  EXPECT_NEAR(t.ranks[0].at(TimeRow::kCommunication), 0.1, 1e-9);
  EXPECT_NEAR(t.ranks[1].at(TimeRow::kRankWait), 0.0, 1e-9);
  EXPECT_NEAR(t.ranks[1].at(TimeRow::kCommunication), 0.2, 1e-9);
  for (const RankTime& r : t.ranks) EXPECT_NEAR(Sum(r), 2.0, 1e-9);
  EXPECT_TRUE(t.notes.empty());
  // A bucket without rank 1's record, or reduced twice by rank 0 (two
  // models in one step): that bucket is not split, the others are.
  tl.bucket_syncs.pop_back();
  t = BreakDownTime(tl);
  EXPECT_NEAR(t.ranks[0].at(TimeRow::kRankWait), 0.3, 1e-9);
  EXPECT_NEAR(t.ranks[0].at(TimeRow::kCommunication), 0.2, 1e-9);
  tl.bucket_syncs.push_back({0, 0, 1, 0.6, 1.0});
  t = BreakDownTime(tl);
  EXPECT_NEAR(t.ranks[0].at(TimeRow::kRankWait), 0.3, 1e-9);
  EXPECT_TRUE(t.notes.empty());
  // Rank 1's records all missing (another node's file): no split, said.
  std::erase_if(tl.bucket_syncs, [](const BucketSync& b) { return b.rank == 1; });
  t = BreakDownTime(tl);
  EXPECT_NEAR(t.ranks[0].at(TimeRow::kRankWait), 0.0, 1e-9);
  EXPECT_NEAR(t.ranks[0].at(TimeRow::kCommunication), 0.5, 1e-9);
  ASSERT_EQ(t.notes.size(), 1u);
  EXPECT_NE(t.notes[0].find("includes the wait for other ranks"), std::string::npos);
}

TEST(TimeBreakdown, NotesForWhatTheFileCannotTell) {
  Timeline tl = TwoEpochs();
  tl.spans.clear();
  tl.spans_recorded = false;
  AddStep(tl, 1, 0, 2.0, 1.0, 0.0);  // a second rank, no sync records
  TimeBreakdown t = BreakDownTime(tl);
  ASSERT_EQ(t.notes.size(), 2u);
  EXPECT_NE(t.notes[0].find("predates checkpoint and evaluation spans"), std::string::npos);
  EXPECT_NE(t.notes[1].find("stallscope.ddp"), std::string::npos);
  EXPECT_TRUE(BreakDownTime(Timeline{}).ranks.empty());
}

// Steps that overlap, end past the run, waits longer than their step,
// spans that overlap each other and the steps: the rows still add up to
// the wall time, none negative.
TEST(TimeBreakdown, GarbledRecordsStillAddUp) {
  std::mt19937 random(7);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int round = 0; round < 200; ++round) {
    Timeline tl;
    tl.info.duration_seconds = 20 * u(random);
    const int steps = static_cast<int>(40 * u(random));
    for (int i = 0; i < steps; ++i) {
      AddStep(tl, i % 3, i / 3, 25 * u(random), 3 * u(random) - 0.5, 2 * u(random) - 0.2);
      if (u(random) < 0.5) tl.step_syncs.push_back({i % 3, i / 3, 3 * u(random) - 0.5, 0});
    }
    for (int i = 0; i < 6; ++i) {
      const double a = 25 * u(random);
      tl.spans.push_back(
          {1, i % 3, u(random) < 0.5 ? "eval" : "checkpoint", a, a + 4 * u(random) - 1});
      if (u(random) < 0.3) tl.epochs.push_back({i % 3, i, 25 * u(random)});
      tl.host_syncs.push_back(
          {i % 3, static_cast<int64_t>(14 * u(random)), 3 * u(random) - 0.5, 1});
    }
    for (int rank = 0; rank < 3; ++rank) tl.ranks.push_back({10 + rank, rank, rank, 3, ""});
    for (int i = 0; i < 30; ++i) {
      ProcessPoint& p = tl.processes.emplace_back();
      p.t = 25 * u(random);
      p.pid = 10 + i % 4;
      p.write_kib_per_s = u(random) < 0.3 ? 1e6 * u(random) : 0.0;
    }
    for (const RankTime& r : BreakDownTime(tl).ranks) {
      for (double s : r.seconds) EXPECT_GE(s, 0.0) << "round " << round;
      EXPECT_NEAR(Sum(r), r.wall_s, 1e-6 * std::max(1.0, r.wall_s)) << "round " << round;
    }
  }
}

// Many spans of both kinds starting at once (a hostile file, or spans
// clamped to the run's start): one evaluation covers them, no overlap.
TEST(TimeBreakdown, SpansThatStartTogetherCountOnce) {
  Timeline tl = TwoEpochs();
  tl.spans.clear();
  for (int i = 0; i < 40; ++i) {
    tl.spans.push_back({1, 0, i % 2 ? "eval" : "checkpoint", -5.0, 0.5 + 0.01 * i});
  }
  const RankTime r = BreakDownTime(tl).ranks.at(0);
  EXPECT_NEAR(r.at(TimeRow::kEvaluation) + r.at(TimeRow::kCheckpoints), 0.5 + 0.39, 1e-9);
  EXPECT_NEAR(Sum(r), 10.0, 1e-9);
}

// The rank's process (pid 100) sampled each second from 0 to 10, writing
// `bytes` to storage over (at - 1, at] and nothing else.
void AddWrites(Timeline& tl, double at, double bytes) {
  tl.ranks.push_back({100, 0, 0, 1, "node"});
  for (int t = 0; t <= 10; ++t) {
    ProcessPoint& p = tl.processes.emplace_back();
    p.t = t;
    p.pid = 100;
    p.comm = "python3";
    if (t > 0) p.write_kib_per_s = t == at ? bytes / 1024.0 : 0.0;
  }
}

bool HasNote(const TimeBreakdown& t, std::string_view words) {
  return std::any_of(t.notes.begin(), t.notes.end(),
                     [&](const std::string& n) { return n.find(words) != std::string::npos; });
}

TEST(TimeBreakdown, AGapWithACheckpointsWorthOfWritesIsACheckpoint) {
  Timeline tl = TwoEpochs();
  tl.spans = {{100, 0, "eval", 7.8, 8.1}};  // the save at the epoch's end is not marked
  AddWrites(tl, 6, 64.0 * 1024 * 1024);     // written over (5, 6]: the gap is 5.0-6.5
  TimeBreakdown t = BreakDownTime(tl);
  const RankTime& r = t.ranks.at(0);
  // The part of the gap the interval that wrote covers: 5.0-6.0.
  EXPECT_NEAR(r.at(TimeRow::kCheckpoints), 1.0, 1e-9);
  EXPECT_NEAR(r.at(TimeRow::kEpochEnds), 0.5, 1e-9);
  EXPECT_EQ(r.checkpoints, 0);
  EXPECT_EQ(r.checkpoints_by_writes, 1);
  EXPECT_NEAR(Sum(r), 10.0, 1e-9);
  EXPECT_TRUE(HasNote(t, "found by their writes"));

  // A log's few MiB are no checkpoint.
  Timeline small = TwoEpochs();
  small.spans = {{100, 0, "eval", 7.8, 8.1}};
  AddWrites(small, 6, 4.0 * 1024 * 1024);
  const RankTime s = BreakDownTime(small).ranks.at(0);
  EXPECT_NEAR(s.at(TimeRow::kCheckpoints), 0.0, 1e-9);
  EXPECT_NEAR(s.at(TimeRow::kEpochEnds), 1.5, 1e-9);
  EXPECT_EQ(s.checkpoints_by_writes, 0);

  // Another rank's writes are not this rank's.
  Timeline other = TwoEpochs();
  other.spans = {{100, 0, "eval", 7.8, 8.1}};
  AddWrites(other, 6, 64.0 * 1024 * 1024);
  other.ranks.back().rank = 1;
  EXPECT_EQ(BreakDownTime(other).ranks.at(0).checkpoints_by_writes, 0);
}

TEST(TimeBreakdown, StartUpWritesAndMarkedCheckpointsAreNotTakenTwice) {
  Timeline startup = TwoEpochs();
  AddWrites(startup, 1, 500.0 * 1024 * 1024);  // a dataset cache written before step 0
  const RankTime a = BreakDownTime(startup).ranks.at(0);
  EXPECT_NEAR(a.at(TimeRow::kStartup), 1.0, 1e-9);
  EXPECT_EQ(a.checkpoints_by_writes, 0);

  // The save inside stallscope.checkpoint(): the span's 0.6 s, not the gap.
  Timeline marked = TwoEpochs();
  AddWrites(marked, 6, 64.0 * 1024 * 1024);
  const RankTime b = BreakDownTime(marked).ranks.at(0);
  EXPECT_NEAR(b.at(TimeRow::kCheckpoints), 0.6, 1e-9);
  EXPECT_NEAR(b.at(TimeRow::kEpochEnds), 0.9, 1e-9);
  EXPECT_EQ(b.checkpoints_by_writes, 0);
}

// A 10 s run: steps of 0.5 s (0.1 s wait) end to end from 1.0 to 9.0, but
// step 6, which takes 2.5 s (4.0-6.5).
Timeline OneLongStep() {
  Timeline tl;
  tl.info.duration_seconds = 10.0;
  double end = 1.0;
  for (int i = 0; i < 12; ++i) {
    const double length = i == 6 ? 2.5 : 0.5;
    end += length;
    AddStep(tl, 0, i, end, length, 0.1);
  }
  return tl;
}

// A save inside the loop every few steps: the step that took it is far
// longer than the others and wrote a checkpoint's worth; its excess over
// the median step's compute is the checkpoint.
TEST(TimeBreakdown, AnOverlongStepThatWroteIsACheckpointBeyondTheUsualStep) {
  Timeline tl = OneLongStep();
  // Step 6 runs 4.0-6.5.
  AddWrites(tl, 5, 200.0 * 1024 * 1024);
  TimeBreakdown t = BreakDownTime(tl);
  const RankTime& r = t.ranks.at(0);
  EXPECT_NEAR(r.at(TimeRow::kCheckpoints), 2.4 - 0.4, 1e-9);
  EXPECT_NEAR(r.at(TimeRow::kCompute), 12 * 0.4, 1e-9);
  EXPECT_EQ(r.checkpoints_by_writes, 1);
  EXPECT_NEAR(Sum(r), 10.0, 1e-9);

  // The same long step without writes stays compute.
  Timeline quiet = tl;
  for (ProcessPoint& p : quiet.processes) p.write_kib_per_s = 0.0;
  const RankTime q = BreakDownTime(quiet).ranks.at(0);
  EXPECT_NEAR(q.at(TimeRow::kCheckpoints), 0.0, 1e-9);
  EXPECT_NEAR(q.at(TimeRow::kCompute), 11 * 0.4 + 2.4, 1e-9);
}

// One save's writes are one checkpoint: the overlong step that wrote them
// claims their interval, and the epoch's end in that interval is no second
// one; a loop's first step (warm-up) is never one; run --profile's trace
// is no checkpoint.
TEST(TimeBreakdown, OneSavesWritesAreOneCheckpointAndTheTraceNone) {
  Timeline tl = OneLongStep();
  // Step 6 runs 4.0-6.5; a second loop starts 0.5 s after step 11 (9.0):
  // its first step is 2 s long (a warm-up).
  AddStep(tl, 0, 12, 9.5 + 2.0, 2.0, 0.1);
  tl.info.duration_seconds = 12.0;
  tl.epochs = {{0, 1, 9.2}};
  AddWrites(tl, 5, 200.0 * 1024 * 1024);             // (4, 5]: step 6's save
  ProcessPoint& late = tl.processes.emplace_back();  // (10, 11]: the warm-up's cache
  late.t = 11;
  late.pid = 100;
  late.write_kib_per_s = 100.0 * 1024;
  const RankTime r = BreakDownTime(tl).ranks.at(0);
  EXPECT_EQ(r.checkpoints_by_writes, 1);
  EXPECT_NEAR(r.at(TimeRow::kCheckpoints), 2.0, 1e-9);
  EXPECT_NEAR(Sum(r), 12.0, 1e-9);

  // The trace written after a profiled window, in a gap: a profile span,
  // no checkpoint and no row of its own.
  Timeline traced = TwoEpochs();
  traced.spans = {{100, 0, "profile", 5.1, 5.9}};
  AddWrites(traced, 6, 300.0 * 1024 * 1024);
  const RankTime t = BreakDownTime(traced).ranks.at(0);
  EXPECT_EQ(t.checkpoints_by_writes, 0);
  EXPECT_EQ(t.checkpoints, 0);
  EXPECT_NEAR(t.at(TimeRow::kCheckpoints), 0.0, 1e-9);
  EXPECT_NEAR(t.at(TimeRow::kEpochEnds), 1.5, 1e-9);
}

TEST(TimeBreakdown, HostSyncsAreTakenFromCompute) {
  Timeline tl = TwoEpochs();
  tl.host_syncs = {{0, 1, 0.25, 3}, {0, 2, 5.0, 1}, {1, 2, 0.5, 1}};  // 5 s: more than the step
  const RankTime r = BreakDownTime(tl).ranks.at(0);
  EXPECT_NEAR(r.at(TimeRow::kHostSyncs), 0.25 + 0.8, 1e-9);
  EXPECT_NEAR(r.at(TimeRow::kCompute), 6 * 0.8 - 0.3 - 0.25 - 0.8, 1e-9);
  EXPECT_EQ(r.host_sync_calls, 4);
  EXPECT_NEAR(Sum(r), 10.0, 1e-9);
}

TEST(TimeBreakdown, NotesForFilesWithoutWritesOrHostSyncs) {
  Timeline tl = TwoEpochs();
  ProcessPoint& p = tl.processes.emplace_back();
  p.pid = 100;  // a process sampled, no write rates: an older file
  tl.host_syncs_recorded = false;
  EXPECT_TRUE(HasNote(BreakDownTime(tl), "no process writes"));
  EXPECT_FALSE(HasNote(BreakDownTime(tl), "predates host syncs"));  // no GPU: nothing to miss
  tl.gpus.push_back(GpuPoint{});
  EXPECT_TRUE(HasNote(BreakDownTime(tl), "predates host syncs"));
}

TEST(TimeBreakdown, CompareGivesEveryRowBeforeAndAfter) {
  RankTime a, b;
  a.at(TimeRow::kDataWait) = 4;
  b.at(TimeRow::kDataWait) = 1;
  std::vector<TimeRowChange> rows = CompareTime(a, b);
  ASSERT_EQ(rows.size(), kTimeRowCount);
  EXPECT_EQ(rows[2].row, TimeRow::kDataWait);
  EXPECT_EQ(rows[2].before_s, 4);
  EXPECT_EQ(rows[2].after_s, 1);
  for (size_t i = 0; i < kTimeRowCount; ++i) EXPECT_EQ(kTimeRows[i].row, static_cast<TimeRow>(i));
}

}  // namespace
}  // namespace stallscope
