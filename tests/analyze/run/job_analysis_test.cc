// Several nodes' run files as one job (analyze/run/job_analysis.h): the ranks of
// every file judged together, host findings said of their host, files of
// other jobs and ranks claimed twice refused, the clocks shifted.
#include "analyze/run/job_analysis.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "job_timelines.h"

namespace stallscope {
namespace {

// One node of a 2-node job: rank `rank` on `host`, 20 steps of 0.2 s, the
// rank waiting `sync_s` of each in gradient sync.
RunAnalysis Node(const std::string& host, int rank, double sync_s, double start_realtime) {
  Timeline t = NodeOfTwo(host, rank, start_realtime, 5);
  for (int i = 0; i <= 5; ++i) {
    TimelineSample sample;
    sample.t = i;
    t.samples.push_back(sample);
  }
  for (int s = 0; s < 20; ++s) {
    t.steps.push_back(StepEvent{rank, s, 0.2 * (s + 1), 0.001, 0.2});
    t.step_syncs.push_back(StepSync{rank, s, sync_s, 0.01});
  }
  RunAnalysis run = AnalyzeRun(host + ".db", std::move(t), std::nullopt, FindingsWithNotes{});
  return run;
}

const Finding* Find(const RunAnalysis& run, std::string_view id) {
  for (const Finding& f : run.findings) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

std::string Text(const Finding& f, std::string_view name) {
  for (const Evidence& e : f.evidence) {
    if (e.name == name) return std::get<std::string>(e.value);
  }
  return "";
}

TEST(JobAnalysis, TheStragglerIsNamedAcrossFiles) {
  std::vector<RunAnalysis> nodes;
  nodes.push_back(Node("node-b", 1, 0.001, 1000.5));  // order given does not matter
  nodes.push_back(Node("node-a", 0, 0.12, 1000.0));
  Result<RunAnalysis> job = AnalyzeJob(std::move(nodes));
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  ASSERT_EQ(job->nodes.size(), 2u);
  EXPECT_EQ(job->nodes[0].host, "node-a");
  EXPECT_EQ(job->nodes[1].host, "node-b");
  EXPECT_DOUBLE_EQ(job->nodes[1].clock_shift_seconds, 0.5);
  EXPECT_EQ(job->ranks.size(), 2u);
  EXPECT_EQ(job->timeline.steps.size(), 40u);
  // The nodes' steps merged in time order (node-b's shifted by 0.5 s); the
  // sync records judged where they were (each rank's sync wait) and not
  // kept twice.
  EXPECT_TRUE(std::is_sorted(job->timeline.steps.begin(), job->timeline.steps.end(),
                             [](const StepEvent& a, const StepEvent& b) { return a.t < b.t; }));
  EXPECT_EQ(job->timeline.steps.front().rank, 0);
  EXPECT_TRUE(job->timeline.step_syncs.empty());
  for (const RankSummary& r : job->ranks) EXPECT_TRUE(r.sync_wait_s.has_value()) << r.rank;
  const Finding* f = Find(*job, "distributed.straggler");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(Text(*f, "host"), "node-b");
  EXPECT_EQ(job->path, "node-a.db, node-b.db");
}

TEST(JobAnalysis, RowsTheCallerDescribedFollowTheirFiles) {
  // Files given out of node order, each with the row its reader thread made
  // (marked here by its CPU figure): each row stays with its file.
  std::vector<RunAnalysis> nodes;
  nodes.push_back(Node("node-b", 1, 0.001, 1000.5));
  nodes.push_back(Node("node-a", 0, 0.12, 1000.0));
  std::vector<NodeRow> described = {DescribeNode(nodes[0]), DescribeNode(nodes[1])};
  EXPECT_EQ(described[0].host, "node-b");
  described[0].cpu_pct = 11;
  described[1].cpu_pct = 22;
  Result<RunAnalysis> job = AnalyzeJob(std::move(nodes), std::move(described));
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  ASSERT_EQ(job->nodes.size(), 2u);
  EXPECT_EQ(job->nodes[0].host, "node-a");
  EXPECT_DOUBLE_EQ(job->nodes[0].cpu_pct, 22);
  EXPECT_EQ(job->nodes[1].host, "node-b");
  EXPECT_DOUBLE_EQ(job->nodes[1].cpu_pct, 11);
  EXPECT_DOUBLE_EQ(job->nodes[1].clock_shift_seconds, 0.5);  // set by the job, not the reader
  EXPECT_EQ(job->nodes[1].ranks, std::vector<int>{1});
  // One row per file, or none.
  std::vector<RunAnalysis> two;
  two.push_back(Node("node-b", 1, 0.001, 1000.5));
  two.push_back(Node("node-a", 0, 0.12, 1000.0));
  std::vector<NodeRow> one = {DescribeNode(two[0])};
  EXPECT_FALSE(AnalyzeJob(std::move(two), std::move(one)).ok());
}

TEST(JobAnalysis, AFileWhoseStepsAreOutOfTimeOrderIsJudgedInTimeOrder) {
  auto job_of = [](bool reversed) {
    std::vector<RunAnalysis> nodes;
    nodes.push_back(Node("node-a", 0, 0.12, 1000.0));
    nodes.push_back(Node("node-b", 1, 0.001, 1000.5));
    std::vector<StepEvent>& steps = nodes[1].timeline.steps;
    // A step number twice, a later record of it last in time.
    steps.push_back(StepEvent{1, 7, 0.2 * 8 + 0.05, 0.050, 0.25});
    if (reversed) std::reverse(steps.begin(), steps.end());
    return AnalyzeJob(std::move(nodes));
  };
  Result<RunAnalysis> in_order = job_of(false), backwards = job_of(true);
  ASSERT_TRUE(in_order.ok() && backwards.ok());
  ASSERT_EQ(in_order->ranks.size(), 2u);
  ASSERT_EQ(backwards->ranks.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(in_order->ranks[i].steps, backwards->ranks[i].steps);
    EXPECT_EQ(in_order->ranks[i].step_s, backwards->ranks[i].step_s);  // the same sum, bit for bit
    EXPECT_EQ(in_order->ranks[i].data_wait_s, backwards->ranks[i].data_wait_s);
  }
  const Finding* a = Find(*in_order, "distributed.straggler");
  const Finding* b = Find(*backwards, "distributed.straggler");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(a->summary, b->summary);
}

TEST(JobAnalysis, FilesOfAnotherJobOrARankTwiceAreRefused) {
  std::vector<RunAnalysis> nodes;
  nodes.push_back(Node("node-a", 0, 0.1, 1000));
  nodes.push_back(Node("node-b", 1, 0.1, 1000));
  nodes[1].timeline.node->master_port = 29501;
  Result<RunAnalysis> job = AnalyzeJob(nodes);
  ASSERT_FALSE(job.ok());
  EXPECT_NE(job.status().message().find("different jobs"), std::string::npos);
  nodes[1] = Node("node-b", 0, 0.1, 1000);
  job = AnalyzeJob(nodes);
  ASSERT_FALSE(job.ok());
  EXPECT_NE(job.status().message().find("rank 0 has steps in both node-a.db and node-b.db"),
            std::string::npos)
      << job.status().message();
  nodes[1] = Node("node-b", 1, 0.1, 1000 + 3600);
  job = AnalyzeJob(nodes);
  ASSERT_FALSE(job.ok());
  EXPECT_NE(job.status().message().find("did not record at the same time"), std::string::npos);
}

TEST(JobAnalysis, HostFindingsCarryTheirHostAndMissingRanksAreNoted) {
  std::vector<RunAnalysis> nodes;
  nodes.push_back(Node("node-a", 0, 0.1, 1000));
  nodes.push_back(Node("node-b", 1, 0.1, 1000));
  nodes[1].findings.push_back(Finding{
      "memory.swap_active", Layer::kMemory, Severity::kCritical, "swapping", {}, "", std::nullopt});
  for (RunAnalysis& n : nodes) n.timeline.node->world_size = 4;
  Result<RunAnalysis> job = AnalyzeJob(std::move(nodes));
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  const Finding* swap = Find(*job, "memory.swap_active");
  ASSERT_NE(swap, nullptr);
  EXPECT_EQ(Text(*swap, "host"), "node-b");
  EXPECT_EQ(swap->summary, "node-b: swapping");
  bool noted = false;
  for (const std::string& n : job->notes) noted |= n.find("ranks 2-3 are missing") != n.npos;
  EXPECT_TRUE(noted);
}

}  // namespace
}  // namespace stallscope
