// The rules across a job's nodes (analyze/run/node_rules.h): the receive rate of
// each node's job interface while its ranks synced, network.node_receive_slow
// at the edges of its thresholds, and the io findings compared with the other
// nodes; also through AnalyzeJob, from two nodes' timelines.
#include "analyze/run/node_rules.h"

#include <gtest/gtest.h>

#include "analyze/run/job_analysis.h"
#include "job_timelines.h"

namespace stallscope {
namespace {

// A node of a 2-node job whose interface `iface` received `rx` bytes/s in
// every sample; its rank steps 4 times a second and waits `sync_s` in sync.
Timeline NodeTimeline(const std::string& host, int rank, const std::string& iface, double rx,
                      bool with_sync = true) {
  Timeline t = NodeOfTwo(host, rank, 1000, 10);
  t.node->net_interface = iface;
  for (int i = 0; i <= 10; ++i) {
    TimelineSample s;
    s.t = i;
    if (i > 0) s.net_rx_bytes_per_s = rx;
    t.samples.push_back(s);
  }
  for (int s = 0; s < 40; ++s) {
    t.steps.push_back(StepEvent{rank, s, 0.25 * (s + 1), 0.001, 0.25});
    if (with_sync) t.step_syncs.push_back(StepSync{rank, s, 0.05, 0.01});
  }
  return t;
}

NodeRow Row(const std::string& host, std::optional<double> rx) {
  NodeRow r;
  r.host = host;
  r.net_interface = "eth1";
  r.receive_bytes_per_s = rx;
  r.receive_during_sync = true;
  return r;
}

// A finding said of `host` (its first evidence), as AnalyzeJob tags a node's.
Finding HostFinding(const char* id, Layer layer, Severity severity, const char* summary,
                    const char* host) {
  return Finding{id, layer, severity, summary, {{"host", std::string(host)}}, "", std::nullopt};
}

double Number(const Finding& f, std::string_view name) {
  for (const Evidence& e : f.evidence) {
    if (e.name == name) return std::get<double>(e.value);
  }
  ADD_FAILURE() << "no evidence " << name;
  return -1;
}

TEST(NodeReceive, TheRateIsTheMeanOverTheSamplesWithSyncWaits) {
  Timeline t = NodeTimeline("a", 0, "eth1", 5e6);
  // Steps only in the first 4 s: the samples after hold no sync wait, and
  // their (idle) rate is left out.
  t.steps.resize(16);
  t.step_syncs.resize(16);
  for (size_t i = 5; i < t.samples.size(); ++i) t.samples[i].net_rx_bytes_per_s = 0;
  NodeReceive r = ReceiveWhileSyncing(t);
  ASSERT_TRUE(r.bytes_per_s.has_value());
  EXPECT_DOUBLE_EQ(*r.bytes_per_s, 5e6);
  EXPECT_EQ(r.samples, 4);
  EXPECT_TRUE(r.during_sync);
}

TEST(NodeReceive, WithoutSyncRecordsTheSteppingSamplesCount) {
  NodeReceive r = ReceiveWhileSyncing(NodeTimeline("a", 0, "eth1", 2e6, /*with_sync=*/false));
  ASSERT_TRUE(r.bytes_per_s.has_value());
  EXPECT_FALSE(r.during_sync);
  EXPECT_EQ(r.samples, 10);
}

TEST(NodeReceive, SyncRecordsThatMatchNoStepFallBackToTheSteppingSamples) {
  Timeline t = NodeTimeline("a", 0, "eth1", 3e6);
  for (StepSync& s : t.step_syncs) s.step += 1000;  // of steps the file does not hold
  NodeReceive r = ReceiveWhileSyncing(t);
  ASSERT_TRUE(r.bytes_per_s.has_value());
  EXPECT_FALSE(r.during_sync);
  EXPECT_EQ(r.samples, 10);
}

TEST(NodeReceiveSlow, RatesWhileSyncingAreNotComparedWithRatesWhileStepping) {
  std::vector<NodeRow> rows = {Row("a", 100e6), Row("b", 100e6), Row("c", 10e6)};
  rows[2].receive_during_sync = false;  // c measured otherwise: nothing to compare it with
  EXPECT_TRUE(CheckNodeReceive(rows).findings.empty());
  rows[1].receive_during_sync = false;
  rows[1].receive_bytes_per_s = 100e6;
  std::vector<Finding> f = CheckNodeReceive(rows).findings;
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(std::get<std::string>(f[0].evidence.front().value), "c");
}

TEST(NodeReceive, NoInterfaceOrTooFewSamplesIsNoRate) {
  EXPECT_FALSE(ReceiveWhileSyncing(NodeTimeline("a", 0, "", 5e6)).bytes_per_s);
  Timeline t = NodeTimeline("a", 0, "eth1", 5e6);
  t.steps.resize(kNodeReceiveMinSamples * 4 - 4);  // steps in 2 samples only
  EXPECT_FALSE(ReceiveWhileSyncing(t).bytes_per_s);
  Timeline old = NodeTimeline("a", 0, "eth1", 5e6);
  old.node.reset();  // a file older than the node table
  EXPECT_FALSE(ReceiveWhileSyncing(old).bytes_per_s);
}

TEST(NodeReceiveSlow, FiresBelowHalfTheOthersMedianOnly) {
  std::vector<NodeRow> rows = {Row("a", 100e6), Row("b", 90e6), Row("c", 110e6),
                               Row("d", 0.49 * 100e6)};
  std::vector<Finding> f = CheckNodeReceive(rows).findings;
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].id, "network.node_receive_slow");
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_EQ(std::get<std::string>(f[0].evidence.front().value), "d");
  EXPECT_DOUBLE_EQ(Number(f[0], "others_median_receive_bytes_per_s"), 100e6);
  EXPECT_NE(f[0].summary.find("eth1"), std::string::npos) << f[0].summary;
  EXPECT_NE(f[0].next.find("on d"), std::string::npos) << f[0].next;
  // Just at half: not under it.
  rows[3].receive_bytes_per_s = kNodeReceiveShare * 100e6;
  EXPECT_TRUE(CheckNodeReceive(rows).findings.empty());
}

TEST(NodeReceiveSlow, AQuietJobOrANodeWithoutARateIsNotJudged) {
  // The others' median under the floor: the interface carries too little.
  std::vector<NodeRow> quiet = {Row("a", 0.9 * kNodeReceiveFloorBytesPerSecond), Row("b", 0)};
  EXPECT_TRUE(CheckNodeReceive(quiet).findings.empty());
  std::vector<NodeRow> loud = {Row("a", kNodeReceiveFloorBytesPerSecond), Row("b", 0)};
  EXPECT_EQ(CheckNodeReceive(loud).findings.size(), 1u);
  std::vector<NodeRow> unknown = {Row("a", 100e6), Row("b", std::nullopt)};
  EXPECT_TRUE(CheckNodeReceive(unknown).findings.empty());
}

TEST(CompareNodeIo, TheOtherNodesFiguresGoBesideAHostsInputBound) {
  std::vector<NodeRow> rows = {Row("a", 1), Row("b", 1), Row("c", 1)};
  rows[0].data_wait_fraction = 0.02;
  rows[1].data_wait_fraction = 0.40;
  rows[2].data_wait_fraction = 0.04;
  rows[0].data_device = rows[2].data_device = "vda";
  rows[0].disk_util_pct = 20;
  rows[2].disk_util_pct = 40;
  rows[0].disk_await_ms = 1;
  rows[2].disk_await_ms = 3;
  std::vector<Finding> findings = {
      HostFinding("io.input_bound", Layer::kIo, Severity::kCritical, "b: steps wait 40%", "b"),
      HostFinding("io.device_saturated", Layer::kIo, Severity::kWarning, "b: vda saturated", "b"),
      HostFinding("memory.swap_active", Layer::kMemory, Severity::kWarning, "b: swaps", "b")};
  CompareNodeIo(rows, findings);
  EXPECT_DOUBLE_EQ(Number(findings[0], "other_nodes_data_wait_fraction"), 0.03);
  EXPECT_NE(findings[0].summary.find("the other 2 nodes wait 3% (median): this node's input"),
            std::string::npos)
      << findings[0].summary;
  EXPECT_DOUBLE_EQ(Number(findings[1], "other_nodes_disk_util_pct"), 30);
  EXPECT_DOUBLE_EQ(Number(findings[1], "other_nodes_disk_await_ms"), 2);
  EXPECT_EQ(findings[2].evidence.size(), 1u);  // not an io finding: untouched
  // Every node waits: the job's input.
  std::vector<Finding> all = {
      HostFinding("io.input_bound", Layer::kIo, Severity::kCritical, "b: steps wait 40%", "b")};
  rows[0].data_wait_fraction = rows[2].data_wait_fraction = 0.35;
  CompareNodeIo(rows, all);
  EXPECT_NE(all[0].summary.find("the job's"), std::string::npos) << all[0].summary;
  // Said of every host already ("a, b, c"): nothing to compare with.
  std::vector<Finding> everywhere = {
      HostFinding("io.input_bound", Layer::kIo, Severity::kCritical, "a, b, c: wait", "a, b, c")};
  CompareNodeIo(rows, everywhere);
  EXPECT_EQ(everywhere[0].evidence.size(), 1u);
}

TEST(NodeReceiveSlow, AnalyzeJobNamesTheNodeFromItsTimeline) {
  std::vector<RunAnalysis> nodes;
  nodes.push_back(AnalyzeRun("a.db", NodeTimeline("node-a", 0, "veth-a", 40e6), std::nullopt,
                             FindingsWithNotes{}));
  nodes.push_back(AnalyzeRun("b.db", NodeTimeline("node-b", 1, "eth0", 0.2e6), std::nullopt,
                             FindingsWithNotes{}));
  Result<RunAnalysis> job = AnalyzeJob(std::move(nodes));
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  ASSERT_EQ(job->nodes.size(), 2u);
  EXPECT_EQ(job->nodes[0].net_interface, "veth-a");
  ASSERT_TRUE(job->nodes[0].receive_bytes_per_s.has_value());
  EXPECT_DOUBLE_EQ(*job->nodes[0].receive_bytes_per_s, 40e6);
  const Finding* slow = nullptr;
  for (const Finding& f : job->findings) {
    if (f.id == "network.node_receive_slow") slow = &f;
  }
  ASSERT_NE(slow, nullptr);
  EXPECT_EQ(std::get<std::string>(slow->evidence.front().value), "node-b");
  EXPECT_NE(std::find(job->checked.begin(), job->checked.end(), Layer::kNetwork),
            job->checked.end());
}

}  // namespace
}  // namespace stallscope
