// analyze/run/history.h: the series' noise, the change points, the
// grouping of files into runs and runs into jobs.
#include "analyze/run/history.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

namespace stallscope {
namespace {

// A series around `level` with a spread of `spread` (a fixed random seed).
std::vector<double> Noisy(size_t n, double level, double spread, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> d(0, spread);
  std::vector<double> v;
  for (size_t i = 0; i < n; ++i) v.push_back(level + d(gen));
  return v;
}

HistoryRun OneRun(std::string file, double start, double step, bool complete = true) {
  HistoryRun r;
  r.files = {std::move(file)};
  r.command = "python3 train.py";
  r.job = {"command", r.command, std::nullopt};
  r.world_size = 1;
  r.master_addr = "127.0.0.1";
  r.master_port = 29500;
  r.start_s = start;
  r.end_s = start + 10;
  r.step_median_s = step;
  r.complete = complete;
  return r;
}

TEST(RunHistory, FlatSeriesHasNoChange) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    std::vector<double> v = Noisy(10, 0.1, 0.005, seed);
    EXPECT_TRUE(SplitSeries(v, SeriesNoise(v)).empty()) << "seed " << seed;
  }
}

TEST(RunHistory, TwoStepsFoundAtTheirRuns) {
  std::vector<double> v = Noisy(4, 0.1, 0.003, 1);
  for (double x : Noisy(4, 0.2, 0.003, 2)) v.push_back(x);
  for (double x : Noisy(4, 0.35, 0.003, 3)) v.push_back(x);
  EXPECT_EQ(SplitSeries(v, SeriesNoise(v)), (std::vector<size_t>{4, 8}))
      << ::testing::PrintToString(v) << SeriesNoise(v);
}

// The step times CI recorded (e2e.history_cli): two loaders, then the last
// two runs slowed by a neighbour's load. The second segment's first three
// runs are at one level: its late runs are outliers, never a change that
// starts at a run still at the old level.
TEST(RunHistory, ChangeStartsAtARunThatShowsIt) {
  std::vector<double> v = {0.0673, 0.0669, 0.0675, 0.0671, 0.0668, 0.0673,
                           0.1230, 0.1232, 0.1238, 0.1235, 0.1462, 0.1883};
  EXPECT_EQ(SplitSeries(v, SeriesNoise(v)), (std::vector<size_t>{6}));
  std::vector<double> tail(v.begin() + 6, v.end());
  EXPECT_TRUE(SplitSeries(tail, SeriesNoise(tail)).empty());
  // Once the later runs all show it, it is a change, at its first run.
  tail = {0.1230, 0.1232, 0.1238, 0.1462, 0.1501, 0.1483};
  EXPECT_EQ(SplitSeries(tail, SeriesNoise(tail)), (std::vector<size_t>{3}));
}

TEST(RunHistory, OneOddRunIsAnOutlierNotAChange) {
  std::vector<HistoryRun> files;
  for (int i = 0; i < 10; ++i) {
    files.push_back(
        OneRun("r" + std::to_string(i), i * 100.0, i == 5 ? 0.4 : 0.1 + 0.001 * (i % 3)));
  }
  auto jobs = BuildHistory(files, HistoryMetric::kStep);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_TRUE(jobs[0].changes.empty());
  EXPECT_TRUE(jobs[0].runs[5].outlier);
  EXPECT_FALSE(jobs[0].runs[4].outlier);
}

TEST(RunHistory, IncompleteRunIsListedButNeverAChange) {
  std::vector<HistoryRun> files;
  for (int i = 0; i < 8; ++i) {
    files.push_back(OneRun("r" + std::to_string(i), i * 100.0, 0.1 + 0.001 * (i % 2), i != 6));
  }
  files[6].step_median_s = 5.0;
  files.push_back(OneRun("r8", 800, 0.1));
  auto jobs = BuildHistory(files, HistoryMetric::kStep);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].runs.size(), 9u);
  EXPECT_FALSE(jobs[0].runs[6].complete);
  EXPECT_TRUE(jobs[0].changes.empty());
}

TEST(RunHistory, ChangeNamesItsRepresentatives) {
  std::vector<HistoryRun> files;
  for (int i = 0; i < 8; ++i) {
    files.push_back(
        OneRun("r" + std::to_string(i), i * 100.0, (i < 4 ? 0.1 : 0.3) + 0.001 * (i % 2)));
  }
  auto jobs = BuildHistory(files, HistoryMetric::kStep);
  ASSERT_EQ(jobs[0].changes.size(), 1u);
  const HistoryChange& c = jobs[0].changes[0];
  EXPECT_EQ(jobs[0].runs[c.before].index, 4);
  EXPECT_EQ(jobs[0].runs[c.after].index, 5);
  EXPECT_NEAR(c.ratio, 3.0, 0.1);
}

// Three segments of four runs (steps 0.1, 0.3, 0.6): changes at runs 5 and
// 9. `caught` lists the runs (1-based) whose samples caught an input, on
// the device "dev<segment>".
HistoryJob ThreeSegments(const std::set<int>& caught) {
  std::vector<HistoryRun> files;
  for (int i = 0; i < 12; ++i) {
    const int segment = i / 4;
    HistoryRun r = OneRun("r" + std::to_string(i + 1) + ".db", i * 100.0,
                          (segment == 0   ? 0.1
                           : segment == 1 ? 0.3
                                          : 0.6) +
                              0.001 * (i % 2));
    if (caught.count(i + 1)) {
      LoaderInput in;
      in.kind = "directory";
      in.path = "/data/images";
      in.device = "dev" + std::to_string(segment);
      r.input = in;
      r.input_file = r.files[0];
    }
    files.push_back(r);
  }
  auto jobs = BuildHistory(files, HistoryMetric::kStep);
  EXPECT_EQ(jobs.size(), 1u);
  return jobs.at(0);
}

TEST(RunHistory, InputNearIsTheNearestRunOfTheSameSegment) {
  // Run 4 (the first change's representative before) caught nothing: run 2,
  // not run 5 across the change; run 5 caught its own.
  HistoryJob job = ThreeSegments({1, 2, 5, 7, 10});
  ASSERT_EQ(job.changes.size(), 2u);
  ASSERT_EQ(job.runs[job.changes[0].before].index, 4);
  std::optional<InputElsewhere> before = InputNear(job, 0, false);
  ASSERT_TRUE(before);
  EXPECT_EQ(before->file, "r2.db");
  EXPECT_EQ(before->input.device, "dev0");
  std::optional<InputElsewhere> after = InputNear(job, 0, true);
  ASSERT_TRUE(after);
  EXPECT_EQ(after->file, "r5.db");
  // Before the second change (runs 5-8, representative 8): run 7; after it
  // (runs 9-12): run 10, the one that caught one.
  EXPECT_EQ(InputNear(job, 1, false)->file, "r7.db");
  EXPECT_EQ(InputNear(job, 1, true)->file, "r10.db");
}

TEST(RunHistory, InputNearNeverCrossesAChange) {
  // The middle segment caught nothing: its sides stay unknown even though
  // runs 4 and 9, just across each change, caught theirs.
  HistoryJob job = ThreeSegments({4, 9});
  ASSERT_EQ(job.changes.size(), 2u);
  EXPECT_FALSE(InputNear(job, 0, true));
  EXPECT_FALSE(InputNear(job, 1, false));
  EXPECT_EQ(InputNear(job, 0, false)->file, "r4.db");
  EXPECT_EQ(InputNear(job, 1, true)->file, "r9.db");
  EXPECT_FALSE(InputNear(job, 2, false));  // no such change
}

TEST(RunHistory, InputNearSkipsAnOutlierAndAnIncompleteRun) {
  std::vector<HistoryRun> files;
  for (int i = 0; i < 8; ++i) {
    // Run 3 is odd (twice the step): an outlier, perhaps of another setting;
    // run 4, the representative's neighbour, crashed (incomplete).
    double step = (i < 4 ? 0.1 : 0.3) + 0.001 * (i % 2) + (i == 2 ? 0.1 : 0);
    HistoryRun r = OneRun("r" + std::to_string(i + 1) + ".db", i * 100.0, step, i != 3);
    if (i == 0 || i == 2 || i == 3) {
      r.input = LoaderInput{};
      r.input->device = i == 0 ? "vda1" : "loop0";
      r.input_file = r.files[0];
    }
    files.push_back(r);
  }
  HistoryJob job = BuildHistory(files, HistoryMetric::kStep).at(0);
  ASSERT_EQ(job.changes.size(), 1u);
  ASSERT_TRUE(job.runs[2].outlier);
  EXPECT_EQ(InputNear(job, 0, false)->file, "r1.db");
}

TEST(RunHistory, SummaryKeepsWhatTheLoaderReadAndANodeSupplies) {
  // Two nodes' files of one run: the second node caught the input.
  std::vector<HistoryRun> files = {OneRun("a-node0", 0, 0.1), OneRun("a-node1", 1, 0.1)};
  for (HistoryRun& f : files) f.world_size = 4, f.hosts = {f.files[0]};
  files[1].input = LoaderInput{};
  files[1].input->device = "nvme0n1";
  files[1].input_file = "a-node1";
  auto jobs = BuildHistory(files, HistoryMetric::kStep);
  ASSERT_EQ(jobs.at(0).runs.size(), 1u);
  ASSERT_TRUE(jobs[0].runs[0].input);
  EXPECT_EQ(jobs[0].runs[0].input->device, "nvme0n1");
  EXPECT_EQ(jobs[0].runs[0].input_file, "a-node1");
}

TEST(RunHistory, TwoNodesFilesAreOneRun) {
  std::vector<HistoryRun> files = {OneRun("a-node0", 0, 0.1), OneRun("a-node1", 1, 0.12),
                                   OneRun("b-node0", 1000, 0.1), OneRun("b-node1", 1002, 0.1)};
  for (HistoryRun& f : files) f.world_size = 4, f.hosts = {f.files[0]};
  auto jobs = BuildHistory(files, HistoryMetric::kStep);
  ASSERT_EQ(jobs.size(), 1u);
  ASSERT_EQ(jobs[0].runs.size(), 2u);
  EXPECT_EQ(jobs[0].runs[0].files, (std::vector<std::string>{"a-node0", "a-node1"}));
  EXPECT_DOUBLE_EQ(*jobs[0].runs[0].step_median_s, 0.12);  // the slowest node
}

TEST(RunHistory, JobsSplitByCommandAndWorldSize) {
  std::vector<HistoryRun> files = {OneRun("a", 0, 0.1), OneRun("b", 100, 0.1),
                                   OneRun("c", 200, 0.1)};
  files[1].command = "python3 other.py";
  files[1].job.name = files[1].command;
  files[2].world_size = 2;
  files[2].master_port = 29501;
  EXPECT_EQ(BuildHistory(files, HistoryMetric::kStep).size(), 3u);
}

TEST(RunHistory, AJobIsItsNameElseItsScriptElseItsProgram) {
  RunInfo old;  // a file that predates job_identity: its command line
  old.command = "python3 train.py --workers 2";
  EXPECT_EQ(JobIdentityOf(old), (JobIdentity{"command", old.command, std::nullopt}));
  RunInfo info = old;
  info.identity_recorded = true;
  info.uid = 1000;
  info.argv = {"python3", "train.py", "--workers", "2"};
  info.program = "python3 /home/u/train.py";
  EXPECT_EQ(JobIdentityOf(info), (JobIdentity{"program", "python3 /home/u/train.py", 1000}));
  info.script = "-c";  // `python3 -c ...` names no script: the program stands
  EXPECT_EQ(JobIdentityOf(info).by, "program");
  info.script = "/home/u/train.py";
  EXPECT_EQ(JobIdentityOf(info), (JobIdentity{"script", "/home/u/train.py", 1000}));
  info.job_name = "resnet-sweep";
  EXPECT_EQ(JobIdentityOf(info), (JobIdentity{"name", "resnet-sweep", 1000}));
  info.job_name.clear();
  info.script.clear();
  info.program.clear();
  EXPECT_EQ(JobIdentityOf(info).by, "command");
}

TEST(RunHistory, AChangedFlagStaysInItsJob) {
  // Ten runs of one script; from the sixth --workers 0, and the steps slow:
  // one job, one change, at run 6.
  std::vector<HistoryRun> files;
  for (int i = 0; i < 10; ++i) {
    HistoryRun r = OneRun("r" + std::to_string(i), i * 100.0, i < 5 ? 0.10 : 0.20);
    r.command = i < 5 ? "python3 train.py --workers 2" : "python3 train.py --workers 0";
    r.job = {"script", "/home/u/train.py", 1000};
    files.push_back(r);
  }
  std::vector<HistoryJob> jobs = BuildHistory(files, HistoryMetric::kStep);
  ASSERT_EQ(jobs.size(), 1u);
  ASSERT_EQ(jobs[0].changes.size(), 1u);
  EXPECT_EQ(jobs[0].runs[jobs[0].changes[0].after].index, 6);
  // Another user's runs of the same script are another job.
  files[9].job.uid = 1001;
  EXPECT_EQ(BuildHistory(files, HistoryMetric::kStep).size(), 2u);
}

TEST(RunHistory, SinceTakesIsoDatesAndTimes) {
  const double now = 1780000000;  // any instant: dates do not depend on it
  EXPECT_EQ(*ParseSince("2026-03-04", now), 1772582400);
  EXPECT_EQ(*ParseSince("2026-03-04T09:12", now), 1772582400 + 9 * 3600 + 12 * 60);
  EXPECT_EQ(*ParseSince("2026-03-04 09:12:30Z", now), 1772582400 + 9 * 3600 + 12 * 60 + 30);
  // An offset: 09:12 at +01:00 is 08:12 UTC.
  EXPECT_EQ(*ParseSince("2026-03-04T09:12+01:00", now), 1772582400 + 8 * 3600 + 12 * 60);
  EXPECT_EQ(*ParseSince("2026-03-04T09:12:00-02:30", now), 1772582400 + 11 * 3600 + 42 * 60);
}

TEST(RunHistory, SinceTakesAnAge) {
  const double now = 1780000000;
  EXPECT_EQ(*ParseSince("7d", now), now - 7 * 86400);
  EXPECT_EQ(*ParseSince("12h", now), now - 12 * 3600);
  EXPECT_EQ(*ParseSince("30m", now), now - 30 * 60);
  EXPECT_EQ(*ParseSince("2w", now), now - 14 * 86400);
}

TEST(RunHistory, SinceRefusesWhatIsNotADate) {
  for (const char* bad : {"yesterday", "7", "d", "7x", "-7d", "2026-13-01", "2026-02-31",
                          "2026-03-04T25:00", "2026-03-04junk", "2026-03-04T09:12+1", ""}) {
    Result<double> r = ParseSince(bad, 1780000000);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("--since '" + std::string(bad) + "'"), std::string::npos)
        << r.status().message();
  }
}

TEST(RunHistory, RunWithoutNodeTableStartsAtItsUtcTime) {
  // Run files of a single process carry no node table: the start is read
  // from started_utc, so that runs still sort by time and --since works.
  RunAnalysis run;
  run.path = "a.db";
  run.timeline.info.started_utc = "2026-03-04T09:12:30Z";
  HistoryRun r = SummarizeRunFile(run);
  EXPECT_EQ(r.start_s, 1772582400 + 9 * 3600 + 12 * 60 + 30);
}

TEST(RunHistory, MetricNames) {
  EXPECT_EQ(HistoryMetricNamed("data_wait"), HistoryMetric::kDataWait);
  EXPECT_FALSE(HistoryMetricNamed("speed"));
}

}  // namespace
}  // namespace stallscope
