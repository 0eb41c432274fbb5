#include "probe/topology.h"

#include <gtest/gtest.h>

#include "core/file.h"
#ifdef STALLSCOPE_HAVE_HWLOC
#include <dlfcn.h>

#include "probe/hwloc_api.h"
#endif

namespace stallscope {
namespace {

const std::string kFixtures = STALLSCOPE_FIXTURES;

TEST(ParseCpuListCount, Ranges) {
  EXPECT_EQ(*ParseCpuListCount("0-15\n", "c"), 16);
  EXPECT_EQ(*ParseCpuListCount("0-15,32-47", "c"), 32);
  EXPECT_EQ(*ParseCpuListCount("3", "c"), 1);
  EXPECT_EQ(*ParseCpuListCount("0,2,4-5", "c"), 4);
  EXPECT_EQ(*ParseCpuListCount("\n", "c"), 0);  // a memory-only node
}

TEST(ParseCpuListCount, MalformedNamesFile) {
  Result<int> reversed = ParseCpuListCount("15-0", "node0/cpulist");
  ASSERT_FALSE(reversed.ok());
  EXPECT_EQ(reversed.status().message(), "node0/cpulist:1: bad CPU range '15-0'");
  EXPECT_FALSE(ParseCpuListCount("0-", "c").ok());
  EXPECT_FALSE(ParseCpuListCount("a-b", "c").ok());
  EXPECT_FALSE(ParseCpuListCount("0,,1", "c").ok());
  EXPECT_FALSE(ParseCpuListCount("0-4000000000", "c").ok());
}

TEST(ParseNodeMemTotal, BytesAndErrors) {
  EXPECT_EQ(*ParseNodeMemTotal("Node 1 MemTotal:  1024 kB\nNode 1 MemFree: 5 kB\n", "m"),
            1024u * 1024);
  Result<uint64_t> bad =
      ParseNodeMemTotal("Node 0 MemFree: 5 kB\nNode 0 MemTotal: x kB\n", "node0/meminfo");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "node0/meminfo:2: MemTotal is not '<number> kB'");
  Result<uint64_t> missing = ParseNodeMemTotal("Node 0 MemFree: 5 kB\n", "node0/meminfo");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), "node0/meminfo: no MemTotal line");
}

TEST(IsPciAddress, Shapes) {
  EXPECT_TRUE(IsPciAddress("0000:17:00.0"));
  EXPECT_TRUE(IsPciAddress("0000:b1:00.1"));
  EXPECT_FALSE(IsPciAddress("virtio2"));
  EXPECT_FALSE(IsPciAddress("pci0000:00"));
  EXPECT_FALSE(IsPciAddress("0000:B1:00.0"));
}

TEST(ReadSysfsTopology, TwoSocketHost) {
  Result<Topology> topology = ReadSysfsTopology(Root(kFixtures + "/numa2_host"));
  ASSERT_TRUE(topology.ok()) << topology.status().ToString();
  EXPECT_EQ(topology->source, "sysfs");
  ASSERT_EQ(topology->numa_nodes.size(), 2u);
  EXPECT_EQ(topology->numa_nodes[0].id, 0);
  EXPECT_EQ(topology->numa_nodes[0].cpulist, "0-15");
  EXPECT_EQ(topology->numa_nodes[0].cpu_count, 16);
  EXPECT_EQ(topology->numa_nodes[0].mem_total_bytes, 131072000ull * 1024);
  EXPECT_EQ(topology->numa_nodes[1].id, 1);
  EXPECT_EQ(topology->numa_nodes[1].cpulist, "16-31");
  EXPECT_EQ(topology->numa_nodes[1].cpu_count, 16);
  EXPECT_EQ(topology->numa_nodes[1].mem_total_bytes, 132096000ull * 1024);

  // lo and docker0 have no device and are left out; eth1 is a virtio NIC
  // whose numa_node comes from its PCI function.
  ASSERT_EQ(topology->nics.size(), 2u);
  EXPECT_EQ(topology->nics[0].name, "eth0");
  EXPECT_EQ(topology->nics[0].pci_address, "0000:18:00.0");
  EXPECT_EQ(topology->nics[0].numa_node, 0);
  EXPECT_EQ(topology->nics[1].name, "eth1");
  EXPECT_EQ(topology->nics[1].pci_address, "0000:00:03.0");
  EXPECT_EQ(topology->nics[1].numa_node, 0);

  ASSERT_EQ(topology->hcas.size(), 1u);
  EXPECT_EQ(topology->hcas[0].name, "mlx5_0");
  EXPECT_EQ(topology->hcas[0].pci_address, "0000:ca:00.0");
  EXPECT_EQ(topology->hcas[0].numa_node, 1);

  // A 3D controller and a VGA controller; the GPU's audio function is not a GPU.
  ASSERT_EQ(topology->gpus.size(), 2u);
  EXPECT_EQ(topology->gpus[0].pci_address, "0000:17:00.0");
  EXPECT_EQ(topology->gpus[0].numa_node, 0);
  EXPECT_EQ(topology->gpus[1].pci_address, "0000:b1:00.0");
  EXPECT_EQ(topology->gpus[1].numa_node, 1);
}

TEST(ReadSysfsTopology, LiveCapture) {
  Result<Topology> topology = ReadSysfsTopology(Root(kFixtures + "/live_debian12"));
  ASSERT_TRUE(topology.ok()) << topology.status().ToString();
  ASSERT_EQ(topology->numa_nodes.size(), 1u);
  EXPECT_EQ(topology->numa_nodes[0].cpulist, "0-1");
  EXPECT_EQ(topology->numa_nodes[0].cpu_count, 2);
  EXPECT_EQ(topology->numa_nodes[0].mem_total_bytes, 14903072ull * 1024);
  ASSERT_EQ(topology->nics.size(), 1u);  // eth0 on virtio; lo and ifb* are virtual
  EXPECT_EQ(topology->nics[0].name, "eth0");
  EXPECT_EQ(topology->nics[0].pci_address, "0000:00:03.0");
  EXPECT_EQ(topology->nics[0].numa_node, -1);
  EXPECT_TRUE(topology->gpus.empty());
}

TEST(ReadSysfsTopology, EmptyRootHasNothing) {
  Result<Topology> topology = ReadSysfsTopology(Root(kFixtures + "/proc_tree"));
  ASSERT_TRUE(topology.ok()) << topology.status().ToString();
  EXPECT_TRUE(topology->numa_nodes.empty());
  EXPECT_TRUE(topology->nics.empty());
  EXPECT_TRUE(topology->gpus.empty());
}

TEST(ReadTopology, HwlocAndSysfsAgreeOnThisMachine) {
  Result<Topology> sysfs = ReadSysfsTopology(Root("/"));
  ASSERT_TRUE(sysfs.ok()) << sysfs.status().ToString();
  Result<Topology> live = ReadTopology(Root("/"));
  ASSERT_TRUE(live.ok()) << live.status().ToString();
#ifdef STALLSCOPE_HAVE_HWLOC
  Result<Topology> hwloc = ReadHwlocTopology();
  ASSERT_TRUE(hwloc.ok()) << hwloc.status().ToString();
  EXPECT_EQ(hwloc->source, "hwloc");
  EXPECT_EQ(live->source, "hwloc");
  if (!sysfs->numa_nodes.empty()) {
    EXPECT_EQ(hwloc->numa_nodes.size(), sysfs->numa_nodes.size());
    for (size_t i = 0; i < std::min(hwloc->numa_nodes.size(), sysfs->numa_nodes.size()); ++i) {
      EXPECT_EQ(hwloc->numa_nodes[i].id, sysfs->numa_nodes[i].id);
      EXPECT_EQ(hwloc->numa_nodes[i].cpu_count, sysfs->numa_nodes[i].cpu_count);
    }
  }
  EXPECT_EQ(hwloc->gpus.size(), sysfs->gpus.size());
#else
  EXPECT_EQ(live->source, "sysfs");
  EXPECT_FALSE(ReadHwlocTopology().ok());
#endif
}

#ifdef STALLSCOPE_HAVE_HWLOC
TEST(ReadTopology, HwlocIsOpenedOnFirstUseWithEveryFunction) {
  std::string why;
  const HwlocApi* api = Hwloc(why);
  ASSERT_NE(api, nullptr) << why;
#define STALLSCOPE_CHECK(name) EXPECT_NE(api->name, nullptr) << #name;
  STALLSCOPE_HWLOC_FUNCTIONS(STALLSCOPE_CHECK)
#undef STALLSCOPE_CHECK
  EXPECT_EQ(Hwloc(why), api);  // filled once
  // Opened with its symbols global: its plugins, which link against them,
  // load (RTLD_NOLOAD finds the library already there, and a plugin's
  // symbol of hwloc's resolves).
  EXPECT_NE(dlopen("libhwloc.so.15", RTLD_NOW | RTLD_NOLOAD), nullptr);
  EXPECT_NE(dlsym(RTLD_DEFAULT, "hwloc_topology_init"), nullptr)
      << "hwloc's symbols are not global: its plugins cannot load";
}
#endif

}  // namespace
}  // namespace stallscope
