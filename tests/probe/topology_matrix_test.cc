// The GPU/NIC path matrix (sample/topology_matrix.h) over the sysfs trees of
// tests/fixtures/topology (written by make_trees.py there): a DGX-like
// NVSwitch node and a PCIe-only node with its HCA on the far socket.
#include "sample/topology_matrix.h"

#include <gtest/gtest.h>

#include "probe/topology.h"

namespace stallscope {
namespace {

const std::string kTrees = std::string(STALLSCOPE_FIXTURES) + "/topology";

TopologyMatrix MatrixOf(const std::string& tree) {
  Result<Topology> topology = ReadSysfsTopology(Root(kTrees + "/" + tree));
  EXPECT_TRUE(topology.ok()) << topology.status().message();
  return BuildTopologyMatrix(topology.ok() ? *topology : Topology{});
}

std::string Cell(const TopologyMatrix& m, const std::string& a, const std::string& b) {
  auto index = [&](const std::string& label) {
    for (size_t i = 0; i < m.devices.size(); ++i)
      if (m.devices[i].label == label) return i;
    ADD_FAILURE() << "no " << label;
    return size_t{0};
  };
  return m.cells[index(a)][index(b)].Name();
}

TEST(TopologyMatrix, PcieOnlyNodeNamesEveryPathAsNccl) {
  TopologyMatrix m = MatrixOf("pcie_far_nic");
  ASSERT_EQ(m.gpu_count, 4u);
  ASSERT_EQ(m.devices.size(), 6u);  // mlx5_0 (with ens5f0), eth1
  EXPECT_EQ(m.devices[0].name, "0000:19:00.0");
  EXPECT_EQ(m.devices[4].name, "mlx5_0");
  EXPECT_EQ(m.devices[4].interfaces, std::vector<std::string>{"ens5f0"});
  EXPECT_EQ(m.devices[5].name, "eth1");
  EXPECT_EQ(Cell(m, "GPU0", "GPU0"), "X");
  EXPECT_EQ(Cell(m, "GPU0", "GPU1"), "PIX");  // one switch
  EXPECT_EQ(Cell(m, "GPU0", "GPU2"), "PXB");  // a second switch under the same root port
  EXPECT_EQ(Cell(m, "GPU1", "GPU2"), "PXB");
  EXPECT_EQ(Cell(m, "GPU0", "GPU3"), "NODE");  // another host bridge, same socket
  EXPECT_EQ(Cell(m, "GPU0", "NIC0"), "SYS");   // the other socket
  EXPECT_EQ(Cell(m, "NIC0", "GPU3"), "SYS");
  // No NUMA node on a two-node host cannot be shown local.
  EXPECT_EQ(Cell(m, "GPU0", "NIC1"), "SYS");
  // An HCA is there, so NCCL's net is IB: the closest NIC is the HCA.
  for (size_t g = 0; g < m.gpu_count; ++g) EXPECT_EQ(m.closest_nic[g], std::optional<size_t>(4));
  EXPECT_EQ(FindMatrixNic(m, "ens5f0"), std::optional<size_t>(4));
  EXPECT_EQ(FindMatrixNic(m, "eth1"), std::optional<size_t>(5));
  EXPECT_EQ(FindMatrixNic(m, "eth9"), std::nullopt);
}

TEST(TopologyMatrix, NvSwitchNodePairsEachGpuWithTheHcaOnItsSwitch) {
  TopologyMatrix m = MatrixOf("nvswitch8");
  ASSERT_EQ(m.gpu_count, 8u);                 // the NVSwitch bridge is not a GPU
  ASSERT_EQ(m.devices.size(), 13u);           // 8 GPUs, 4 HCAs, eno1
  EXPECT_EQ(Cell(m, "GPU0", "GPU1"), "PIX");  // no NVML answers here: PCIe only
  EXPECT_EQ(Cell(m, "GPU0", "GPU2"), "NODE");
  EXPECT_EQ(Cell(m, "GPU0", "GPU4"), "SYS");
  for (size_t g = 0; g < 8; ++g) {
    ASSERT_TRUE(m.closest_nic[g]);
    EXPECT_EQ(m.devices[*m.closest_nic[g]].name, "mlx5_" + std::to_string(g / 2));
    EXPECT_EQ(m.cells[g][*m.closest_nic[g]].Name(), "PIX");
  }
}

TEST(TopologyMatrix, NvLinksThroughSwitchesShowAsNvN) {
  Result<Topology> topology = ReadSysfsTopology(Root(kTrees + "/nvswitch8"));
  ASSERT_TRUE(topology.ok());
  for (const DevicePlacement& gpu : topology->gpus) {
    topology->nvlinks.push_back({gpu.pci_address, "0000:05:00.0", 18, true});
  }
  TopologyMatrix m = BuildTopologyMatrix(*topology);
  EXPECT_EQ(Cell(m, "GPU0", "GPU7"), "NV18");
  EXPECT_EQ(Cell(m, "GPU3", "GPU3"), "X");
  EXPECT_EQ(Cell(m, "GPU0", "NIC0"), "PIX");  // NVLink is GPU to GPU only
}

TEST(TopologyMatrix, DirectNvLinksCountPerPair) {
  Topology t;
  t.gpus = {{"0000:01:00.0", "0000:01:00.0", 0, "pci0000:00/0000:00:01.0/0000:01:00.0"},
            {"0000:02:00.0", "0000:02:00.0", 0, "pci0000:00/0000:00:02.0/0000:02:00.0"},
            {"0000:03:00.0", "0000:03:00.0", 0, ""}};
  t.nvlinks = {{"0000:01:00.0", "0000:02:00.0", 4, false}};
  TopologyMatrix m = BuildTopologyMatrix(t);
  ASSERT_EQ(m.devices.size(), 2u);
  EXPECT_EQ(m.left_out, std::vector<std::string>{"0000:03:00.0"});
  EXPECT_EQ(Cell(m, "GPU0", "GPU1"), "NV4");
  EXPECT_EQ(Cell(m, "GPU1", "GPU0"), "NV4");  // reported from GPU0 only, still both ways
  EXPECT_EQ(m.closest_nic, (std::vector<std::optional<size_t>>{std::nullopt, std::nullopt}));
}

TEST(TopologyDigest, NamesTheDistinctPathsNearestFirst) {
  EXPECT_EQ(TopologyDigest(MatrixOf("pcie_far_nic")), "4 GPUs PIX/PXB/NODE, 2 NICs, closest SYS");
  EXPECT_EQ(TopologyDigest(MatrixOf("nvswitch8")), "8 GPUs PIX/NODE/SYS, 5 NICs, closest PIX");
  Result<Topology> t = ReadSysfsTopology(Root(kTrees + "/nvswitch8"));
  ASSERT_TRUE(t.ok());
  for (const DevicePlacement& gpu : t->gpus)
    t->nvlinks.push_back(
        {gpu.pci_address, "0000:05:00.0", gpu.pci_address == "0000:bb:00.0" ? 17 : 18, true});
  EXPECT_EQ(TopologyDigest(BuildTopologyMatrix(*t)), "8 GPUs NV18/NV17, 5 NICs, closest PIX");
  EXPECT_EQ(TopologyDigest(BuildTopologyMatrix(Topology{})), "-");
}

}  // namespace
}  // namespace stallscope
