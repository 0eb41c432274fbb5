#include "analyze/run/rank_stop_rules.h"

#include <gtest/gtest.h>

#include "analyze/catalog.h"

namespace stallscope {
namespace {

std::string Value(const Finding& f, const std::string& name) {
  for (const Evidence& e : f.evidence) {
    if (e.name != name) continue;
    if (auto* s = std::get_if<std::string>(&e.value)) return *s;
    if (auto* i = std::get_if<int64_t>(&e.value)) return std::to_string(*i);
    if (auto* b = std::get_if<bool>(&e.value)) return *b ? "true" : "false";
    return std::to_string(std::get<double>(e.value));
  }
  return "<none>";
}

// Two ranks (pids 100, 101) that said hello, each with `steps` steps.
Timeline TwoRanks(int steps0, int steps1) {
  Timeline t;
  t.rank_stops_recorded = true;
  t.ranks = {{100, 0, 0, 2, "node-a"}, {101, 1, 1, 2, "node-a"}};
  for (int i = 0; i < steps0; ++i) t.steps.push_back({0, i, 1.0 + i * 0.1, 0.01, 0.1});
  for (int i = 0; i < steps1; ++i) t.steps.push_back({1, i, 1.0 + i * 0.1, 0.01, 0.1});
  return t;
}

RankStop Stop(int pid, int rank, double t, std::string how, std::string source,
              std::optional<int> code = {}, std::optional<int> sig = {}, std::string detail = "") {
  RankStop s;
  s.pid = pid;
  s.rank = rank;
  s.t = t;
  s.how = std::move(how);
  s.source = std::move(source);
  s.exit_code = code;
  s.signal = sig;
  s.detail = std::move(detail);
  return s;
}

TEST(RankStops, ARankKilledAndTheOthersEndedByTheLauncher) {
  Timeline t = TwoRanks(9, 7);
  t.rank_stops = {
      Stop(101, 1, 1.9, "signal", "launcher", {}, 9), Stop(101, 1, 1.9, "gone", "recorder"),
      Stop(100, 0, 1.901, "sent_signal", "launcher", {}, 15),
      Stop(100, 0, 1.91, "signal", "launcher", {}, 15), Stop(100, 0, 1.91, "gone", "recorder")};
  RankState at;
  at.t = 1.9;
  at.reason = "death";
  at.pid = 100;
  at.rank = 0;
  at.steps = 9;
  at.collective_since_t = 1.85;
  t.rank_states = {at};
  FindingsWithNotes out = CheckRankStops(t);
  ASSERT_EQ(out.findings.size(), 1u);
  const Finding& f = out.findings[0];
  EXPECT_EQ(f.id, "distributed.rank_died");
  EXPECT_EQ(f.severity, Severity::kCritical);
  EXPECT_EQ(Value(f, "rank"), "1");
  EXPECT_EQ(Value(f, "pid"), "101");
  EXPECT_EQ(Value(f, "signal"), "SIGKILL");
  EXPECT_EQ(Value(f, "steps_done"), "7");
  EXPECT_EQ(Value(f, "host"), "node-a");
  EXPECT_NE(f.summary.find("killed by SIGKILL after 7 steps"), std::string::npos) << f.summary;
  EXPECT_NE(f.summary.find("rank 0 waited in a gradient all-reduce since 1.9 s"), std::string::npos)
      << f.summary;
  EXPECT_NE(f.summary.find("the launcher then ended it (SIGTERM)"), std::string::npos);
  EXPECT_NE(f.next.find("OOM killer"), std::string::npos);
}

TEST(RankStops, SigkillAfterTheGraceIsSaid) {
  Timeline t = TwoRanks(5, 5);
  t.rank_stops = {Stop(100, 0, 2.0, "exit", "launcher", 1),
                  Stop(101, 1, 2.0, "sent_signal", "launcher", {}, 15),
                  Stop(101, 1, 12.0, "sent_signal", "launcher", {}, 9),
                  Stop(101, 1, 12.0, "signal", "launcher", {}, 9)};
  FindingsWithNotes out = CheckRankStops(t);
  ASSERT_EQ(out.findings.size(), 1u);
  EXPECT_EQ(Value(out.findings[0], "rank"), "0");
  EXPECT_EQ(Value(out.findings[0], "exit_code"), "1");
  EXPECT_NE(out.findings[0].summary.find("exited with status 1"), std::string::npos);
  EXPECT_NE(out.findings[0].summary.find("as it did not end, SIGKILL"), std::string::npos);
}

TEST(RankStops, AnExceptionNamesItsFrame) {
  Timeline t = TwoRanks(4, 4);
  t.rank_stops = {
      Stop(100, 0, 1.5, "exception", "hook", {}, {},
           "main\tMainThread\tRuntimeError\tinjected failure at step 4\t/x/train.py:12 in fail"),
      Stop(100, 0, 1.6, "bye", "hook"), Stop(100, 0, 1.7, "exit", "launcher", 1),
      Stop(101, 1, 1.7, "sent_signal", "launcher", {}, 15),
      Stop(101, 1, 1.71, "signal", "launcher", {}, 15)};
  FindingsWithNotes out = CheckRankStops(t);
  ASSERT_EQ(out.findings.size(), 1u);
  const Finding& f = out.findings[0];
  EXPECT_EQ(Value(f, "rank"), "0");
  EXPECT_EQ(Value(f, "exception_type"), "RuntimeError");
  EXPECT_EQ(Value(f, "exception_frame"), "/x/train.py:12 in fail");
  EXPECT_NE(f.summary.find("raised RuntimeError: injected failure at step 4"), std::string::npos);
  EXPECT_NE(f.next.find("/x/train.py:12"), std::string::npos);
}

TEST(RankStops, ADataLoaderWorkerThatDied) {
  Timeline t = TwoRanks(3, 3);
  t.rank_stops = {
      Stop(101, 1, 1.2, "loader_error", "hook", {}, {},
           "loader\tMainThread\tRuntimeError\tDataLoader worker (pid 4242) is killed by signal: "
           "Killed. \t/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py:1 in x"),
      Stop(101, 1, 1.21, "exception", "hook", {}, {},
           "main\tMainThread\tRuntimeError\tDataLoader worker ...\t/x/train.py:80 in main"),
      Stop(101, 1, 1.3, "exit", "launcher", 1)};
  FindingsWithNotes out = CheckRankStops(t);
  ASSERT_EQ(out.findings.size(), 1u);
  EXPECT_NE(out.findings[0].summary.find("its DataLoader worker (pid 4242) died (Killed)"),
            std::string::npos)
      << out.findings[0].summary;
  EXPECT_EQ(Value(out.findings[0], "raised_in"), "loader");
  std::optional<LoaderWorkerDeath> w =
      ParseLoaderWorkerDeath("DataLoader worker (pid(s) 11, 12) exited unexpectedly");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->pids, (std::vector<int>{11, 12}));
  EXPECT_EQ(w->signal, "");
  EXPECT_FALSE(ParseLoaderWorkerDeath("some other error"));
}

TEST(RankStops, AnOomKillIsAMemoryFinding) {
  Timeline t = TwoRanks(6, 6);
  t.rank_stops = {Stop(101, 1, 3.0, "signal", "launcher", {}, 9)};
  t.memory_peaks = {{"oom_kill", 101, 1 << 30, "Out of memory: Killed process 101"}};
  FindingsWithNotes out = CheckRankStops(t);
  ASSERT_EQ(out.findings.size(), 1u);
  EXPECT_EQ(out.findings[0].id, "memory.oom_killed");
  EXPECT_EQ(out.findings[0].layer, Layer::kMemory);
  EXPECT_NE(out.findings[0].summary.find("OOM killer"), std::string::npos);
}

TEST(RankStops, NoFindingForAStopTheUserAskedOrAClean_end) {
  Timeline t = TwoRanks(6, 6);
  t.rank_stops = {Stop(100, 0, 3.0, "signal", "launcher", {}, 2),
                  Stop(101, 1, 3.4, "signal", "launcher", {}, 2)};
  EXPECT_TRUE(CheckRankStops(t).findings.empty());
  t.rank_stops = {Stop(100, 0, 3.0, "bye", "hook"), Stop(100, 0, 3.0, "exit", "launcher", 0),
                  Stop(101, 1, 3.1, "bye", "hook"), Stop(101, 1, 3.1, "exit", "launcher", 0)};
  EXPECT_TRUE(CheckRankStops(t).findings.empty());
  // Without a launcher (mpirun): gone after Python's exit is a clean end...
  t.rank_stops = {Stop(100, 0, 3.0, "bye", "hook"), Stop(100, 0, 3.0, "gone", "recorder"),
                  Stop(101, 1, 3.1, "bye", "hook"), Stop(101, 1, 3.1, "gone", "recorder")};
  EXPECT_TRUE(CheckRankStops(t).findings.empty());
  // ... and gone without it, the first such rank, is a death.
  t.rank_stops = {Stop(101, 1, 2.0, "gone", "recorder"), Stop(100, 0, 2.5, "gone", "recorder")};
  FindingsWithNotes out = CheckRankStops(t);
  ASSERT_EQ(out.findings.size(), 1u);
  EXPECT_EQ(Value(out.findings[0], "rank"), "1");
  EXPECT_NE(out.findings[0].summary.find("vanished without Python's exit"), std::string::npos);
}

TEST(RankStops, AHangNamesWhereEachRankStopped) {
  Timeline t = TwoRanks(9, 8);
  RankState waiting;
  waiting.t = 14.3;
  waiting.reason = "hang";
  waiting.pid = 100;
  waiting.rank = 0;
  waiting.steps = 9;
  waiting.last_step_t = 2.5;
  waiting.collective_since_t = 2.6;
  waiting.frame = "/x/train.py:290 in main";
  waiting.state = "S";
  RankState asleep = waiting;
  asleep.pid = 101;
  asleep.rank = 1;
  asleep.steps = 8;
  asleep.collective_since_t.reset();
  asleep.frame = "/x/train.py:171 in fail";
  asleep.wchan = "hrtimer_nanosleep";
  asleep.cpu_seconds = 0.01;
  asleep.stack_unchanged = true;
  t.rank_states = {waiting, asleep};
  // --hang-action kill then ended the job: not a death of its own.
  t.rank_stops = {Stop(100, 0, 14.5, "signal", "launcher", {}, 15),
                  Stop(101, 1, 14.5, "signal", "launcher", {}, 15)};
  FindingsWithNotes out = CheckRankStops(t);
  ASSERT_EQ(out.findings.size(), 1u);
  const Finding& f = out.findings[0];
  EXPECT_EQ(f.id, "distributed.hang");
  EXPECT_EQ(Value(f, "stopped_ranks"), "1");
  EXPECT_EQ(Value(f, "waiting_ranks"), "0");
  EXPECT_EQ(Value(f, "rank1_frame"), "/x/train.py:171 in fail");
  EXPECT_NE(f.summary.find("rank 1 stopped at /x/train.py:171 in fail (state S, in "
                           "hrtimer_nanosleep"),
            std::string::npos)
      << f.summary;
  EXPECT_NE(f.summary.find("rank 0 waits in a gradient all-reduce since 2.6 s"), std::string::npos);
  EXPECT_NE(f.next.find("rank-1.101.txt"), std::string::npos);
  // Every rank in a collective: said so, and where to look next.
  t.rank_states[1].collective_since_t = 2.7;
  out = CheckRankStops(t);
  ASSERT_EQ(out.findings.size(), 1u);
  EXPECT_NE(out.findings[0].summary.find("every rank waits in a collective"), std::string::npos);
  EXPECT_NE(out.findings[0].next.find("TORCH_DISTRIBUTED_DEBUG=DETAIL"), std::string::npos);
}

TEST(RankStops, ACaughtLoaderExceptionIsNoDeath) {
  // The job caught it (a DataLoader timeout it retries) and ended well.
  Timeline t = TwoRanks(6, 6);
  t.rank_stops = {Stop(100, 0, 1.0, "loader_error", "hook", {}, {},
                       "loader\tMainThread\tRuntimeError\tDataLoader timed out\t/x/t.py:1 in f"),
                  Stop(100, 0, 3.0, "bye", "hook"), Stop(100, 0, 3.0, "exit", "launcher", 0),
                  Stop(101, 1, 3.0, "bye", "hook"), Stop(101, 1, 3.0, "exit", "launcher", 0)};
  EXPECT_TRUE(CheckRankStops(t).findings.empty());
  // Uncaught, without a launcher's status (mpirun): Python's exit ran (bye)
  // but the exception reached sys.excepthook: it died of it.
  t.rank_stops = {Stop(101, 1, 2.0, "exception", "hook", {}, {},
                       "main\tMainThread\tValueError\tbad shard\t/x/t.py:9 in load"),
                  Stop(101, 1, 2.1, "bye", "hook"), Stop(101, 1, 2.2, "gone", "recorder"),
                  Stop(100, 0, 2.5, "gone", "recorder")};
  FindingsWithNotes out = CheckRankStops(t);
  ASSERT_EQ(out.findings.size(), 1u);
  EXPECT_EQ(Value(out.findings[0], "rank"), "1");
  EXPECT_EQ(Value(out.findings[0], "exception_type"), "ValueError");
  // Its first sign counts: the exception's time, before its end.
  EXPECT_EQ(Value(out.findings[0], "t_s"), std::to_string(2.0));
}

TEST(RankStops, RanksGoneWithAJobStoppedBySigterm) {
  // mpirun passed a scheduler's SIGTERM on: the ranks left without Python's
  // exit, the job `run` started ended by SIGTERM. A stop asked for.
  Timeline t = TwoRanks(6, 6);
  t.info.exit_code = 143;
  t.rank_stops = {Stop(100, 0, 3.0, "gone", "recorder"), Stop(101, 1, 3.1, "gone", "recorder")};
  EXPECT_TRUE(CheckRankStops(t).findings.empty());
  t.info.exit_code = 1;
  EXPECT_EQ(CheckRankStops(t).findings.size(), 1u);
}

TEST(RankStops, TheJobsOwnOomKillIsToldOnce) {
  // `run -- python3 train.py` OOM-killed: memory.oom_killed comes from the
  // job's own rule (run_memory_rules); this one stays quiet.
  Timeline t = TwoRanks(6, 0);
  t.ranks.pop_back();
  t.info.oom_killed = true;
  t.rank_stops = {Stop(100, 0, 3.0, "signal", "recorder", {}, 9)};
  t.memory_peaks = {{"oom_kill", 100, 1 << 30, "Killed process 100"}};
  EXPECT_TRUE(CheckRankStops(t).findings.empty());
}

TEST(RankStops, OlderFilesSaySo) {
  Timeline t = TwoRanks(3, 3);
  t.rank_stops_recorded = false;
  FindingsWithNotes out = CheckRankStops(t);
  EXPECT_TRUE(out.findings.empty());
  ASSERT_EQ(out.notes.size(), 1u);
  EXPECT_NE(out.notes[0].find("predates"), std::string::npos);
}

TEST(RankStops, BothIdsAreCatalogued) {
  for (std::string_view id : {"distributed.rank_died", "distributed.hang"}) {
    bool found = false;
    for (const Rule& r : RuleCatalog()) found = found || r.id == id;
    EXPECT_TRUE(found) << id;
  }
}

}  // namespace
}  // namespace stallscope
