// PCIe links from sysfs: the text forms kernels write, and the links of the
// gpu_health_host fixture (a GPU at x8 of x16, one at Gen3 of Gen4, an idle
// one at 2.5 GT/s, a healthy NIC, an HCA at x4 of x16) with their ports.
#include "probe/pcie_link.h"

#include <gtest/gtest.h>

#include "probe/topology.h"

namespace stallscope {
namespace {

const Root kHost(STALLSCOPE_FIXTURES "/gpu_health_host");

TEST(PcieLinkText, EveryKernelsSpeedForm) {
  EXPECT_EQ(ParseLinkSpeed("16.0 GT/s PCIe\n"), 16.0);  // 5.x and later
  EXPECT_EQ(ParseLinkSpeed("8 GT/s\n"), 8.0);           // 4.x
  EXPECT_EQ(ParseLinkSpeed("2.5 GT/s"), 2.5);
  EXPECT_EQ(ParseLinkSpeed("64.0 GT/s PCIe"), 64.0);
  EXPECT_FALSE(ParseLinkSpeed("Unknown").has_value());
  EXPECT_FALSE(ParseLinkSpeed("Unknown speed").has_value());
  EXPECT_FALSE(ParseLinkSpeed(" GT/s").has_value());
  EXPECT_FALSE(ParseLinkSpeed("-8 GT/s").has_value());
  EXPECT_FALSE(ParseLinkSpeed("").has_value());
  EXPECT_EQ(ParseLinkWidth("16\n"), 16);
  EXPECT_EQ(ParseLinkWidth("0"), 0);
  EXPECT_FALSE(ParseLinkWidth("x16").has_value());
  EXPECT_FALSE(ParseLinkWidth("99").has_value());
  EXPECT_FALSE(ParseLinkWidth("").has_value());
}

TEST(PcieLinkText, CeilingsAndGenerations) {
  EXPECT_EQ(PcieGeneration(8.0), 3);
  EXPECT_EQ(PcieGeneration(32.0), 5);
  EXPECT_EQ(PcieGeneration(7.0), 0);
  // x16 Gen4: 16 GT/s x 128/130 / 8 bits x 16 lanes = 31.5 GB/s.
  std::optional<double> gen4 = PcieCeilingBytesPerSecond({16.0, 16});
  ASSERT_TRUE(gen4.has_value());
  EXPECT_NEAR(*gen4, 31.51e9, 0.01e9);
  // Gen1's 8b/10b: 250 MB/s a lane.
  EXPECT_NEAR(PcieLaneBytesPerSecond(2.5), 250e6, 1);
  EXPECT_FALSE(PcieCeilingBytesPerSecond({16.0, std::nullopt}).has_value());
  EXPECT_EQ(PcieEndText({16.0, 8}), "x8 16 GT/s (Gen4)");
  EXPECT_EQ(PcieEndText({std::nullopt, std::nullopt}), "unknown");
}

TEST(PcieLinks, FixtureHostsDevicesWithTheirPorts) {
  Result<Topology> topology = ReadSysfsTopology(kHost);
  ASSERT_TRUE(topology.ok()) << topology.status().ToString();
  std::vector<std::string> notes;
  std::vector<PcieLink> links = ReadPcieLinks(kHost, *topology, &notes);
  EXPECT_TRUE(notes.empty());
  ASSERT_EQ(links.size(), 5u);  // 3 GPUs, the HCA with its netdev once, eth0
  auto at = [&](const std::string& address) -> const PcieLink* {
    for (const PcieLink& l : links) {
      if (l.pci_address == address) return &l;
    }
    return nullptr;
  };
  const PcieLink* gpu0 = at("0000:17:00.0");
  ASSERT_NE(gpu0, nullptr);
  EXPECT_EQ(gpu0->kind, PcieDeviceKind::kGpu);
  EXPECT_EQ(gpu0->current.width, 8);
  EXPECT_EQ(gpu0->max.width, 16);
  EXPECT_EQ(gpu0->port_address, "0000:16:01.0");
  EXPECT_EQ(gpu0->port_max.width, 16);
  const PcieLink* gpu2 = at("0000:3b:00.0");
  ASSERT_NE(gpu2, nullptr);
  EXPECT_EQ(gpu2->max.speed_gts, 32.0);
  EXPECT_EQ(gpu2->port_max.speed_gts, 16.0);
  EXPECT_EQ(PcieExpected(*gpu2).speed_gts, 16.0);  // the slot is the limit
  const PcieLink* hca = at("0000:ca:00.0");
  ASSERT_NE(hca, nullptr);
  EXPECT_EQ(hca->kind, PcieDeviceKind::kHca);
  EXPECT_EQ(hca->name, "mlx5_0/ens1f0np0");
  EXPECT_EQ(hca->current.width, 4);
}

TEST(PcieLinks, AGpuWithoutLinkFiguresIsANoteANicIsNot) {
  Topology t;
  t.gpus.push_back({"0000:99:00.0", "0000:99:00.0", -1, ""});
  t.nics.push_back({"eth9", "0000:98:00.0", -1, ""});
  std::vector<std::string> notes;
  EXPECT_TRUE(ReadPcieLinks(kHost, t, &notes).empty());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("gpu 0000:99:00.0"), std::string::npos) << notes[0];
  EXPECT_NE(notes[0].find("current_link_speed"), std::string::npos) << notes[0];
}

}  // namespace
}  // namespace stallscope
