// network.nic_far_from_gpu over the topology fixture roots
// (tests/fixtures/topology): which NICs the job uses (NCCL log, then
// NCCL_IB_HCA / NCCL_SOCKET_IFNAME, then all) against each GPU's closest.
#include "analyze/host/nic_placement_rules.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "probe/topology.h"

namespace stallscope {
namespace {

const std::string kTrees = std::string(STALLSCOPE_FIXTURES) + "/topology";

NicPlacementInputs Inputs(const std::string& tree,
                          std::vector<EnvironmentVariable> variables = {}) {
  NicPlacementInputs in;
  Result<Topology> topology = ReadSysfsTopology(Root(kTrees + "/" + tree));
  EXPECT_TRUE(topology.ok());
  if (topology.ok()) in.topology = *topology;
  std::sort(
      variables.begin(), variables.end(),
      [](const EnvironmentVariable& a, const EnvironmentVariable& b) { return a.name < b.name; });
  in.environment.variables = std::move(variables);
  return in;
}

std::string Evidence(const Finding& f, const std::string& name) {
  for (const stallscope::Evidence& e : f.evidence) {
    if (e.name == name) return std::get<std::string>(e.value);
  }
  return "";
}

TEST(NicFarFromGpu, HcaOnTheFarSocketIsSys) {
  std::optional<Finding> f = CheckNicFarFromGpu(Inputs("pcie_far_nic"));
  ASSERT_TRUE(f);
  EXPECT_EQ(f->id, "network.nic_far_from_gpu");
  EXPECT_EQ(f->severity, Severity::kWarning);
  EXPECT_NE(f->summary.find("GPU0 (0000:19:00.0), GPU1"), std::string::npos) << f->summary;
  EXPECT_NE(f->summary.find("GPUDirect RDMA off"), std::string::npos);
  EXPECT_EQ(Evidence(*f, "GPU3_closest_nic"), "mlx5_0");
  EXPECT_EQ(Evidence(*f, "GPU3_closest_nic_path"), "SYS");
}

TEST(NicFarFromGpu, EachGpuOnItsOwnRailIsQuiet) {
  EXPECT_FALSE(CheckNicFarFromGpu(Inputs("nvswitch8")));
  // A prefix that allows every rail is as good as no list.
  EXPECT_FALSE(CheckNicFarFromGpu(Inputs("nvswitch8", {{"NCCL_IB_HCA", "mlx5"}})));
  EXPECT_FALSE(CheckNicFarFromGpu(Inputs("nvswitch8", {{"NCCL_IB_HCA",
                                                        "=mlx5_0:1,mlx5_1:1,"
                                                        "mlx5_2:1,mlx5_3:1"}})));
}

TEST(NicFarFromGpu, OneHcaForAllSendsSixGpusAcrossTheHost) {
  std::optional<Finding> f = CheckNicFarFromGpu(Inputs("nvswitch8", {{"NCCL_IB_HCA", "mlx5_0"}}));
  ASSERT_TRUE(f);
  EXPECT_NE(f->summary.find("6 GPU(s)"), std::string::npos) << f->summary;
  EXPECT_EQ(Evidence(*f, "nics_from"), "NCCL_IB_HCA=mlx5_0");
  EXPECT_EQ(Evidence(*f, "GPU1_nic"), "");  // GPU1 shares mlx5_0's switch
  EXPECT_EQ(Evidence(*f, "GPU2_nic_path"), "NODE");
  EXPECT_EQ(Evidence(*f, "GPU7_nic_path"), "SYS");
  EXPECT_EQ(Evidence(*f, "GPU7_closest_nic"), "mlx5_3");
}

TEST(NicFarFromGpu, ExcludedRailMovesItsGpusToTheNextNearest) {
  std::optional<Finding> f = CheckNicFarFromGpu(Inputs("nvswitch8", {{"NCCL_IB_HCA", "^mlx5_3"}}));
  ASSERT_TRUE(f);
  EXPECT_NE(f->summary.find("2 GPU(s)"), std::string::npos) << f->summary;
  EXPECT_EQ(Evidence(*f, "GPU6_nic"), "mlx5_2");
  EXPECT_EQ(Evidence(*f, "GPU6_nic_path"), "NODE");
}

TEST(NicFarFromGpu, TheNcclLogOutranksTheEnvironment) {
  NicPlacementInputs in = Inputs("nvswitch8", {{"NCCL_IB_HCA", "mlx5"}});
  in.nccl_log_nics = {"mlx5_1", "eth9"};  // a name not on this host is ignored
  in.nccl_log_name = "nccl.log";
  std::optional<Finding> f = CheckNicFarFromGpu(in);
  ASSERT_TRUE(f);
  EXPECT_EQ(Evidence(*f, "nics_from"), "nccl.log");
  EXPECT_EQ(Evidence(*f, "GPU0_nic"), "mlx5_1");
  EXPECT_EQ(Evidence(*f, "GPU0_nic_path"), "NODE");
}

TEST(NicFarFromGpu, SocketTransportJudgesTheInterfaces) {
  // IB off: NCCL_SOCKET_IFNAME decides, and eno1 is on socket 0's host bridge.
  std::optional<Finding> f = CheckNicFarFromGpu(
      Inputs("nvswitch8", {{"NCCL_IB_DISABLE", "1"}, {"NCCL_SOCKET_IFNAME", "eno1"}}));
  ASSERT_TRUE(f);
  EXPECT_NE(f->summary.find("8 GPU(s)"), std::string::npos) << f->summary;
  EXPECT_EQ(Evidence(*f, "GPU0_nic_path"), "NODE");
  EXPECT_EQ(Evidence(*f, "GPU4_nic_path"), "SYS");
  // An HCA's own netdev is its HCA: the GPU's own rail.
  EXPECT_FALSE(CheckNicFarFromGpu(
      Inputs("nvswitch8", {{"NCCL_IB_DISABLE", "1"}, {"NCCL_SOCKET_IFNAME", "ibp"}})));
}

TEST(NicFarFromGpu, NothingToJudgeWithoutGpusOrNics) {
  NicPlacementInputs in = Inputs("pcie_far_nic");
  in.topology.hcas.clear();
  in.topology.nics.clear();
  EXPECT_FALSE(CheckNicFarFromGpu(in));
  in = Inputs("pcie_far_nic");
  in.topology.gpus.clear();
  EXPECT_FALSE(CheckNicFarFromGpu(in));
  // Only a socket NIC across the sockets: no GPUDirect RDMA to lose.
  in = Inputs("pcie_far_nic");
  in.topology.hcas.clear();
  in.topology.nics.erase(in.topology.nics.begin());  // ens5f0 leaves with its HCA
  EXPECT_FALSE(CheckNicFarFromGpu(in));
}

}  // namespace
}  // namespace stallscope
