// CompareNodes on hand-made node summaries: several nodes, mixed GPUs, MTU
// 1500 against 9000, a missing interface, clock offsets; and one healthy
// node with several ranks, which must raise nothing.
#include "analyze/fleet/cluster_rules.h"

#include <gtest/gtest.h>

#include "finding_matchers.h"
#include "render/cluster.h"

namespace stallscope {
namespace {

NodeSummary Node(int rank, std::string host, std::string gpu = "NVIDIA A100-SXM4-80GB",
                 uint64_t mtu = 9000) {
  NodeSummary n;
  n.rank = rank;
  n.hostname = std::move(host);
  n.kernel = "6.1.0-18-amd64";
  n.cpu_model = "AMD EPYC 7763";
  n.cpu_count = 128;
  if (!gpu.empty()) n.gpus = {gpu, gpu, gpu, gpu};
  n.driver_version = "535.104.05";
  n.cuda_version = "12.2";
  n.interfaces = {{"lo", 65536, "loopback", "unknown", 0},
                  {"eth0", mtu, "ethernet", "up", 100000},
                  {"docker0", 1500, "docker", "down", 0}};
  n.route_interface = "eth0";
  n.route_peer = rank == 0 ? "node1" : "node0";
  return n;
}

const Finding* FindingOf(const ClusterComparison& c, std::string_view id) {
  return Find(c.findings, id);
}

size_t Column(const ClusterComparison& c, std::string_view name) {
  for (size_t k = 0; k < c.columns.size(); ++k)
    if (c.columns[k] == name) return k;
  ADD_FAILURE() << "no column " << name;
  return 0;
}

TEST(ClusterRules, HealthyNodeManyRanksOneRowNoFindings) {
  std::vector<NodeSummary> ranks;
  for (int r = 0; r < 3; ++r) {
    NodeSummary n = Node(r, "vm", "");
    n.gpu_note = "no NVIDIA GPU found";
    n.route_interface.clear();
    n.route_peer.clear();
    ranks.push_back(n);
  }
  ClusterComparison c = CompareNodes(ranks, {{0, 0, 0}, {1, 0.02, 0.1}, {2, -0.01, 0.1}});
  EXPECT_EQ(c.nodes, 1);
  EXPECT_EQ(c.ranks, 3);
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_EQ(RankRanges(c.rows[0].ranks), "0-2");
  EXPECT_TRUE(c.differing_columns.empty());
  EXPECT_TRUE(c.findings.empty());
  std::string text = RenderClusterText(c);
  EXPECT_NE(text.find("every rank reports the same facts"), std::string::npos) << text;
  EXPECT_EQ(text.find('*'), std::string::npos) << text;
}

TEST(ClusterRules, MixedGpusMarkedAndFound) {
  std::vector<NodeSummary> ranks = {Node(0, "node0"), Node(1, "node1"),
                                    Node(2, "node2", "NVIDIA V100-SXM2-32GB")};
  ClusterComparison c = CompareNodes(ranks, {});
  ASSERT_EQ(c.rows.size(), 3u);
  size_t gpus = Column(c, "gpus");
  EXPECT_FALSE(c.rows[0].differs[gpus]);
  EXPECT_FALSE(c.rows[1].differs[gpus]);
  EXPECT_TRUE(c.rows[2].differs[gpus]);  // the odd one out, not the majority
  EXPECT_EQ(c.rows[2].values[gpus], "4x NVIDIA V100-SXM2-32GB");
  const Finding* f = FindingOf(c, "distributed.heterogeneous_gpus");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kWarning);
  EXPECT_EQ(FindingOf(c, "network.mtu_mismatch"), nullptr);
  std::string text = RenderClusterText(c);
  EXPECT_NE(text.find("4x NVIDIA V100-SXM2-32GB*"), std::string::npos) << text;
  EXPECT_NE(text.find("(other nodes, or other ranks of one node): gpus"), std::string::npos)
      << text;
}

TEST(ClusterRules, GpuCountOnlyIsInfo) {
  std::vector<NodeSummary> ranks = {Node(0, "node0"), Node(1, "node1")};
  ranks[1].gpus.resize(2);
  const ClusterComparison c = CompareNodes(ranks, {});  // f points into it
  const Finding* f = FindingOf(c, "distributed.heterogeneous_gpus");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kInfo);
}

TEST(ClusterRules, Mtu1500Against9000) {
  std::vector<NodeSummary> ranks = {Node(0, "node0"), Node(1, "node0"), Node(2, "node1"),
                                    Node(3, "node2", "NVIDIA A100-SXM4-80GB", 1500)};
  ranks[1].route_peer = "node1";  // same node as rank 0
  ClusterComparison c = CompareNodes(ranks, {});
  EXPECT_EQ(c.nodes, 3);
  ASSERT_EQ(c.rows.size(), 3u);  // ranks 0 and 1 share node0's row
  EXPECT_EQ(RankRanges(c.rows[0].ranks), "0-1");
  const Finding* f = FindingOf(c, "network.mtu_mismatch");
  ASSERT_NE(f, nullptr);
  std::string evidence = std::get<std::string>(f->evidence[0].value);
  EXPECT_NE(evidence.find("1500 on node2:eth0"), std::string::npos) << evidence;
  EXPECT_NE(evidence.find("9000 on node0:eth0,node1:eth0"), std::string::npos) << evidence;
  size_t in_use = Column(c, "in use");
  EXPECT_TRUE(c.rows[2].differs[in_use]);
  EXPECT_EQ(c.rows[2].values[in_use], "eth0 mtu 1500");
  // The docker bridge's MTU is host plumbing, not compared.
  EXPECT_EQ(c.rows[0].values[Column(c, "nic mtu")], "eth0:9000");
}

TEST(ClusterRules, MissingInterfaceNamesRankAndNode) {
  std::vector<NodeSummary> ranks = {Node(0, "node0"), Node(1, "node1")};
  ranks[0].interfaces.push_back({"ib0", 2044, "infiniband", "up", 200000});
  for (NodeSummary& n : ranks) n.environment = {{"NCCL_SOCKET_IFNAME", "ib0"}};
  ClusterComparison c = CompareNodes(ranks, {});
  const Finding* f = FindingOf(c, "network.wrong_interface");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kCritical);  // nothing left on node1
  EXPECT_NE(f->summary.find("rank 1 on node1"), std::string::npos) << f->summary;
  bool named_elsewhere = false;
  for (const Evidence& e : f->evidence)
    if (e.name == "present_on_other_nodes")
      named_elsewhere = std::get<std::string>(e.value) == "ib0 (on node0)";
  EXPECT_TRUE(named_elsewhere);
  // Exactly one: node0 has ib0.
  int count = 0;
  for (const Finding& g : c.findings) count += g.id == "network.wrong_interface";
  EXPECT_EQ(count, 1);
}

TEST(ClusterRules, PartlyMissingListIsWarningAndExclusionsIgnored) {
  std::vector<NodeSummary> ranks = {Node(0, "node0")};
  ranks[0].environment = {{"NCCL_SOCKET_IFNAME", "=eth0,=ib9"}};
  ClusterComparison c = CompareNodes(ranks, {});  // f points into it
  const Finding* f = FindingOf(c, "network.wrong_interface");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kWarning);
  ranks[0].environment = {{"NCCL_SOCKET_IFNAME", "^docker,lo"}};
  EXPECT_EQ(FindingOf(CompareNodes(ranks, {}), "network.wrong_interface"), nullptr);
  ranks[0].environment = {{"NCCL_SOCKET_IFNAME", "eth"}};  // a prefix of eth0
  EXPECT_EQ(FindingOf(CompareNodes(ranks, {}), "network.wrong_interface"), nullptr);
  ranks[0].environment = {{"NCCL_IB_HCA", "mlx5_0"}};  // no RDMA port on the node
  c = CompareNodes(ranks, {});
  f = FindingOf(c, "network.wrong_interface");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->summary.find("NCCL_IB_HCA"), std::string::npos);
}

TEST(ClusterRules, EnvDiffersBetweenRanksOfOneNode) {
  std::vector<NodeSummary> ranks = {Node(0, "vm"), Node(1, "vm")};
  ranks[0].environment = {{"NCCL_SOCKET_IFNAME", "eth0"}};
  ranks[1].environment = {{"NCCL_SOCKET_IFNAME", "nosuch0"}};
  ClusterComparison c = CompareNodes(ranks, {});
  EXPECT_EQ(c.nodes, 1);
  ASSERT_EQ(c.rows.size(), 2u);
  size_t env = Column(c, "nccl/gloo env");
  EXPECT_FALSE(c.rows[0].differs[env]);  // rank 0's value wins the tie
  EXPECT_TRUE(c.rows[1].differs[env]);
  const Finding* f = FindingOf(c, "network.wrong_interface");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->summary.find("rank 1 on vm"), std::string::npos);
  EXPECT_EQ(FindingOf(c, "network.mtu_mismatch"), nullptr);
}

TEST(ClusterRules, ClockOffsetBeyondItsErrorBound) {
  std::vector<NodeSummary> ranks = {Node(0, "node0"), Node(1, "node1"), Node(2, "node2")};
  // node1: 12 ms off but a 6 ms round trip: within 10 ms + 3 ms. node2: 250 ms.
  ClusterComparison c = CompareNodes(ranks, {{0, 0, 0}, {1, 12, 6}, {2, -250, 0.2}});
  int count = 0;
  for (const Finding& f : c.findings) {
    if (f.id != "distributed.clock_offset") continue;
    ++count;
    EXPECT_NE(f.summary.find("node2 (rank 2)"), std::string::npos);
    EXPECT_EQ(f.severity, Severity::kWarning);
  }
  EXPECT_EQ(count, 1);
  size_t clock = Column(c, "clock");
  EXPECT_TRUE(c.rows[2].differs[clock]);
  EXPECT_FALSE(c.rows[1].differs[clock]);
  EXPECT_EQ(c.rows[2].values[clock], "-250.000 ms");
}

TEST(ClusterRules, JsonCarriesRowsAndRanks) {
  std::vector<NodeSummary> ranks = {Node(0, "node0"), Node(1, "node1", "NVIDIA V100-SXM2-32GB")};
  std::vector<ClockOffset> offsets = {{0, 0, 0}, {1, 0.5, 0.1}};
  ClusterComparison c = CompareNodes(ranks, offsets);
  nlohmann::ordered_json j = ClusterToJson(c, ranks, offsets);
  EXPECT_EQ(j["schema"], "stallscope.cluster/1");
  EXPECT_EQ(j["nodes"], 2);
  ASSERT_EQ(j["rows"].size(), 2u);
  EXPECT_EQ(j["rows"][1]["host"], "node1");
  EXPECT_EQ(j["per_rank"][1]["clock_offset_ms"], 0.5);
  EXPECT_EQ(j["per_rank"][0]["interface_in_use"], "eth0");
}

}  // namespace
}  // namespace stallscope
