// Unit tests of the distributed pieces that need no MPI: launcher
// detection, the all-reduce plan / fill / check arithmetic, the node summary
// wire format, and the line-rate judgement.
#include <gtest/gtest.h>

#include <map>

#include "analyze/fleet/allreduce_rules.h"
#include "bench/allreduce.h"
#include "dist/launcher.h"
#include "dist/node_summary.h"

namespace stallscope {
namespace {

EnvLookup MapEnv(std::map<std::string, std::string> vars) {
  return [vars](std::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(Launcher, NoneWithoutVariables) {
  EXPECT_FALSE(DetectLauncher(MapEnv({{"PATH", "/bin"}, {"RANK", "0"}})).has_value());
}

TEST(Launcher, OpenMpi) {
  auto l = DetectLauncher(MapEnv({{"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_RANK", "2"}}));
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->name, "mpirun (Open MPI)");
  EXPECT_EQ(l->rank, 2);
  EXPECT_EQ(l->size, 4);
}

TEST(Launcher, PmixAndPmi) {
  auto pmix = DetectLauncher(MapEnv({{"PMIX_RANK", "3"}, {"SLURM_NTASKS", "8"}}));
  ASSERT_TRUE(pmix.has_value());
  EXPECT_EQ(pmix->name, "PMIx");
  EXPECT_EQ(pmix->size, 8);
  auto pmi = DetectLauncher(MapEnv({{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}}));
  ASSERT_TRUE(pmi.has_value());
  EXPECT_EQ(pmi->name, "PMI");
}

TEST(Launcher, SrunStepButNotBatchScript) {
  // The batch script has SLURM_PROCID=0 and SLURM_NTASKS but no step of its own.
  EXPECT_FALSE(DetectLauncher(MapEnv({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "16"}})));
  EXPECT_FALSE(DetectLauncher(
      MapEnv({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "16"}, {"SLURM_STEP_ID", "4294967294"}})));
  auto l = DetectLauncher(
      MapEnv({{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "16"}, {"SLURM_STEP_ID", "0"}}));
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->name, "srun (Slurm)");
  EXPECT_EQ(l->rank, 5);
}

TEST(Launcher, NonNumericSizeIsNotALauncher) {
  EXPECT_FALSE(DetectLauncher(MapEnv({{"OMPI_COMM_WORLD_SIZE", "four"}})));
}

TEST(Launcher, MessageShowsTheCommandLines) {
  std::string m = NotUnderLauncherMessage("bench allreduce");
  EXPECT_NE(m.find("mpirun -np 4 stallscope bench allreduce"), std::string::npos);
  EXPECT_NE(m.find("srun -N2 --ntasks-per-node=8 stallscope bench allreduce"), std::string::npos);
}

TEST(AllreducePlan, SizesAsNcclTests) {
  AllreducePlan plan;
  plan.begin_bytes = 8;
  plan.end_bytes = 1 << 20;
  plan.factor = 4;
  std::vector<uint64_t> sizes = AllreduceSizes(plan);
  std::vector<uint64_t> want = {8, 32, 128, 512, 2048, 8192, 32768, 131072, 524288};
  EXPECT_EQ(sizes, want);
  plan.begin_bytes = 6;  // rounded down to whole floats
  plan.end_bytes = 6;
  EXPECT_EQ(AllreduceSizes(plan), std::vector<uint64_t>{4});
}

TEST(AllreducePlan, BadFlagsNamed) {
  AllreducePlan plan;
  plan.factor = 1;
  Status s = ValidateAllreducePlan(plan);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("-f 1"), std::string::npos);
  plan = {};
  plan.begin_bytes = 1 << 20;
  plan.end_bytes = 8;
  EXPECT_NE(ValidateAllreducePlan(plan).message().find("-e 8 is below -b"), std::string::npos);
  plan = {};
  plan.iterations = 0;
  EXPECT_FALSE(ValidateAllreducePlan(plan).ok());
}

TEST(AllreducePlan, BusBandwidth) {
  EXPECT_DOUBLE_EQ(BusBandwidth(10.0, 4), 15.0);  // 2*3/4
  EXPECT_DOUBLE_EQ(BusBandwidth(10.0, 2), 10.0);
  EXPECT_DOUBLE_EQ(BusBandwidth(10.0, 1), 0.0);
}

// Simulates the reduction in the test: the sum of every rank's input must
// match the expected table exactly, and a missing or doubled rank must not.
TEST(AllreduceCheck, ExactSumsAndWrongOnesCounted) {
  for (int ranks : {1, 2, 3, 4, 7, 64}) {
    const size_t n = 5000;
    std::vector<float> sum(n, 0.0f), input(n);
    for (int r = 0; r < ranks; ++r) {
      FillAllreduceInput(r, ranks, input);
      for (size_t i = 0; i < n; ++i) {
        EXPECT_EQ(input[i], AllreduceFillValue(r, ranks, i));
        sum[i] += input[i];
      }
    }
    std::vector<float> expected = AllreduceExpectedTable(ranks);
    EXPECT_EQ(CountWrongElements(sum, expected), 0u) << ranks;
    // Rank 0's contribution missing: its values are 0 only where i % 1021 == 0.
    std::vector<float> partial(n, 0.0f);
    for (int r = 1; r < ranks; ++r) {
      FillAllreduceInput(r, ranks, input);
      for (size_t i = 0; i < n; ++i) partial[i] += input[i];
    }
    EXPECT_GT(CountWrongElements(partial, expected), n * 9 / 10) << ranks;
  }
  std::vector<float> expected = AllreduceExpectedTable(4);
  std::vector<float> result(3000);
  for (size_t i = 0; i < result.size(); ++i) result[i] = expected[i % expected.size()];
  result[17] += 1;
  result[2999] = -1;  // the sentinel: never written
  EXPECT_EQ(CountWrongElements(result, expected), 2u);
}

TEST(AllreduceCheck, RankValuesDiffer) {
  // Rank-dependent: a rank that sent another rank's buffer would be caught.
  EXPECT_NE(AllreduceFillValue(0, 4, 5), AllreduceFillValue(1, 4, 5));
}

NodeSummary SampleNode() {
  NodeSummary n;
  n.rank = 3;
  n.hostname = "node2";
  n.kernel = "6.1.0-18-amd64";
  n.cpu_model = "AMD EPYC 7763 64-Core Processor";
  n.cpu_count = 128;
  n.gpus = {"NVIDIA A100-SXM4-80GB", "NVIDIA A100-SXM4-80GB"};
  n.driver_version = "535.104.05";
  n.cuda_version = "12.2";
  n.interfaces = {{"eth0", 9000, "ethernet", "up", 100000},
                  {"lo", 65536, "loopback", "unknown", 0}};
  n.rdma_ports = {{"mlx5_0:1", "ACTIVE"}};
  n.environment = {{"NCCL_SOCKET_IFNAME", "eth0"}, {"NCCL_WEIRD", "a\tb\\c\nd"}};
  n.route_interface = "eth0";
  n.route_peer = "node1";
  n.topology = "8 GPUs NV18/NV17, 5 NICs, closest PIX";
  return n;
}

TEST(NodeSummaryWire, RoundTrip) {
  NodeSummary n = SampleNode();
  std::string wire = SerializeNodeSummary(n);
  EXPECT_EQ(wire.rfind("stallscope.node/1\n", 0), 0u);
  Result<NodeSummary> back = ParseNodeSummary(wire, "test");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, n);
}

TEST(NodeSummaryWire, ErrorsNameTheLine) {
  EXPECT_FALSE(ParseNodeSummary("", "rank 2 summary").ok());
  Result<NodeSummary> bad = ParseNodeSummary(
      "stallscope.node/1\nrank\t1\nhost\th\nif\teth0\tx\tethernet\tup\t0\n", "rank 1 summary");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("rank 1 summary:4"), std::string::npos)
      << bad.status().message();
  EXPECT_NE(bad.status().message().find("not a number"), std::string::npos);
  Result<NodeSummary> fields =
      ParseNodeSummary("stallscope.node/1\nrank\t1\nhost\th\textra\n", "s");
  ASSERT_FALSE(fields.ok());
  EXPECT_NE(fields.status().message().find("s:3"), std::string::npos);
  EXPECT_FALSE(ParseNodeSummary("stallscope.node/1\nhost\th\n", "s").ok());  // no rank
  EXPECT_FALSE(ParseNodeSummary("stallscope.node/1\nrank\t1\nhost\th\\x\n", "s").ok());
}

TEST(NodeSummaryWire, UnknownKeysSkipped) {
  Result<NodeSummary> n =
      ParseNodeSummary("stallscope.node/1\nrank\t0\nhost\ta\nfuture\tthing\t1\n", "s");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->hostname, "a");
}

TEST(NodeSummaryParsers, CpuModelAndDriver) {
  EXPECT_EQ(ParseCpuModel("processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7763 "
                          "64-Core Processor\n"),
            "AMD EPYC 7763 64-Core Processor");
  EXPECT_EQ(ParseCpuModel("processor : 0\n"), "");
  EXPECT_EQ(ParseNvidiaDriverVersion("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  "
                                     "Sat Aug 19 01:15:15 UTC 2023\nGCC version: gcc 12\n"),
            "535.104.05");
  EXPECT_EQ(ParseNvidiaDriverVersion("garbage"), "");
}

NetInterface Nic(std::string name, InterfaceKind kind, std::optional<uint64_t> speed) {
  NetInterface i;
  i.name = std::move(name);
  i.kind = kind;
  i.operstate = "up";
  i.speed_mbps = speed;
  return i;
}

TEST(AllreduceLinkChoice, NcclPrefersActiveRdmaPort) {
  AllreduceLinkInput in;
  in.backend = "nccl";
  in.interfaces = {Nic("eth0", InterfaceKind::kEthernet, 25000)};
  InfinibandDevice d;
  d.name = "mlx5_0";
  InfinibandPort p;
  p.port = 1;
  p.state = IbPortState{4, "ACTIVE"};
  p.rate = IbRate{200, "200 Gb/sec (4X HDR)"};
  d.ports = {p};
  in.infiniband = {d};
  in.route_interface = "eth0";
  in.route_peer = "node2";
  auto link = ChooseAllreduceLink(in);
  ASSERT_TRUE(link.has_value());
  EXPECT_EQ(link->name, "mlx5_0:1");
  EXPECT_EQ(link->line_rate_gbps, 200.0);
  in.nccl_ib_disable = "1";
  link = ChooseAllreduceLink(in);
  ASSERT_TRUE(link.has_value());
  EXPECT_EQ(link->name, "eth0");
  EXPECT_EQ(link->chosen_by, "the route to node2");
  EXPECT_EQ(link->line_rate_gbps, 25.0);
  in.backend = "mpi";  // MPI ignores the HCA; its own variable pins the NIC
  in.interfaces.push_back(Nic("eth1", InterfaceKind::kEthernet, 100000));
  in.ompi_tcp_if_include = "eth1";
  link = ChooseAllreduceLink(in);
  ASSERT_TRUE(link.has_value());
  EXPECT_EQ(link->name, "eth1");
  EXPECT_EQ(link->chosen_by, "OMPI_MCA_btl_tcp_if_include=eth1");
}

TEST(AllreduceJudge, OneHostIsNotCompared) {
  AllreduceJudgeInput in;
  in.ranks = 4;
  in.hosts = 1;
  in.largest_bytes = 1 << 30;
  in.largest_busbw_gbps = 0.1;
  AllreduceJudgement j = JudgeAllreduce(in);
  EXPECT_TRUE(j.findings.empty());
  EXPECT_FALSE(j.percent_of_line_rate.has_value());
  EXPECT_NE(j.note.find("shared memory or loopback"), std::string::npos);
}

TEST(AllreduceJudge, SlowAcrossHostsFires) {
  AllreduceJudgeInput in;
  in.ranks = 16;
  in.hosts = 2;
  in.largest_bytes = 1ull << 30;
  in.largest_busbw_gbps = 1.0;  // 8 Gbit/s on a 25 Gbit/s NIC: 32%
  in.link = AllreduceLink{"eth0", "interface", "the route to node2", 25.0};
  AllreduceJudgement j = JudgeAllreduce(in);
  ASSERT_EQ(j.findings.size(), 1u);
  EXPECT_EQ(j.findings[0].id, "network.allreduce_slow");
  EXPECT_EQ(j.findings[0].severity, Severity::kWarning);
  EXPECT_NEAR(*j.percent_of_line_rate, 32.0, 1e-9);
  in.largest_busbw_gbps = 0.5;  // 16%: critical
  EXPECT_EQ(JudgeAllreduce(in).findings[0].severity, Severity::kCritical);
  in.largest_busbw_gbps = 2.75;  // 88%: healthy
  EXPECT_TRUE(JudgeAllreduce(in).findings.empty());
  in.largest_busbw_gbps = 0.5;
  in.largest_bytes = 1 << 20;  // latency-bound: compared, not judged
  j = JudgeAllreduce(in);
  EXPECT_TRUE(j.findings.empty());
  EXPECT_NE(j.note.find("not judged"), std::string::npos);
  in.link->line_rate_gbps.reset();  // a virtual NIC
  EXPECT_NE(JudgeAllreduce(in).note.find("reports no line rate"), std::string::npos);
}

TEST(AllreduceJudge, WrongElementsAreCritical) {
  AllreduceJudgeInput in;
  in.ranks = 4;
  in.hosts = 1;
  in.wrong_total = 3;
  in.sizes_with_wrong = 1;
  AllreduceJudgement j = JudgeAllreduce(in);
  ASSERT_EQ(j.findings.size(), 1u);
  EXPECT_EQ(j.findings[0].id, "distributed.allreduce_wrong");
  EXPECT_EQ(j.findings[0].severity, Severity::kCritical);
}

}  // namespace
}  // namespace stallscope
