// NamePciPath's edges, on sysfs paths shaped as real hosts lay them out: one
// switch, two switches under one root port, two root ports of one host
// bridge, two host bridges of one NUMA node, the other socket, and a device
// the kernel gives no NUMA node.
#include "sample/pci_path.h"

#include <gtest/gtest.h>

namespace stallscope {
namespace {

PciPlace Place(std::string_view path, int numa_node = 0) {
  std::optional<PciPlace> place = ParsePciPlace(path, numa_node);
  EXPECT_TRUE(place.has_value()) << path;
  return place.value_or(PciPlace{});
}

// Root port 00:01.0, switch upstream 01:00.0, downstream ports 02:08.0 and 02:10.0.
constexpr std::string_view kSwitch = "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0";

TEST(PciPath, ParsesHostBridgeAndFunctionsAndDropsNonPciTail) {
  PciPlace place = Place("/sys/devices/pci0000:00/0000:00:03.0/virtio2", 1);
  EXPECT_EQ(place.host_bridge, "pci0000:00");
  ASSERT_EQ(place.functions.size(), 1u);
  EXPECT_EQ(place.functions[0], "0000:00:03.0");
  EXPECT_EQ(place.numa_node, 1);
}

TEST(PciPath, RejectsPathsWithoutAPciDevice) {
  EXPECT_FALSE(ParsePciPlace("/sys/devices/virtual/net/lo", 0).has_value());
  EXPECT_FALSE(ParsePciPlace("/sys/devices/pci0000:00", 0).has_value());
  EXPECT_FALSE(ParsePciPlace("", 0).has_value());
}

TEST(PciPath, SameDeviceIsSelf) {
  PciPlace gpu = Place(std::string(kSwitch) + "/0000:02:08.0/0000:03:00.0");
  EXPECT_EQ(NamePciPath(gpu, gpu, 2), PciPathKind::kSelf);
  EXPECT_STREQ(PciPathKindName(PciPathKind::kSelf), "X");
}

TEST(PciPath, SameSwitchIsPix) {
  PciPlace gpu = Place(std::string(kSwitch) + "/0000:02:08.0/0000:03:00.0");
  PciPlace nic = Place(std::string(kSwitch) + "/0000:02:10.0/0000:04:00.0");
  EXPECT_EQ(NamePciPath(gpu, nic, 2), PciPathKind::kPix);
  EXPECT_EQ(NamePciPath(nic, gpu, 2), PciPathKind::kPix);
}

TEST(PciPath, TwoFunctionsOfOneCardArePix) {
  PciPlace port0 = Place("/sys/devices/pci0000:00/0000:00:02.0/0000:05:00.0");
  PciPlace port1 = Place("/sys/devices/pci0000:00/0000:00:02.0/0000:05:00.1");
  EXPECT_EQ(NamePciPath(port0, port1, 1), PciPathKind::kPix);
}

TEST(PciPath, TwoSwitchesUnderOneRootPortArePxb) {
  std::string root = "/sys/devices/pci0000:00/0000:00:01.0";
  PciPlace gpu = Place(root + "/0000:01:00.0/0000:02:00.0/0000:03:00.0/0000:04:00.0/0000:05:00.0");
  PciPlace nic = Place(root + "/0000:01:00.0/0000:02:10.0/0000:06:00.0");
  EXPECT_EQ(NamePciPath(gpu, nic, 2), PciPathKind::kPxb);
  PciPlace other =
      Place(root + "/0000:01:00.0/0000:02:00.0/0000:03:00.0/0000:04:08.0/0000:0a:00.0");
  EXPECT_EQ(NamePciPath(gpu, other, 2), PciPathKind::kPix);
}

TEST(PciPath, TwoRootPortsOfOneHostBridgeArePhb) {
  PciPlace gpu = Place("/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0");
  PciPlace nic = Place("/sys/devices/pci0000:00/0000:00:02.0/0000:02:00.0");
  EXPECT_EQ(NamePciPath(gpu, nic, 2), PciPathKind::kPhb);
}

TEST(PciPath, TwoHostBridgesOfOneNumaNodeAreNode) {
  PciPlace gpu = Place("/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0", 0);
  PciPlace nic = Place("/sys/devices/pci0000:40/0000:40:01.0/0000:41:00.0", 0);
  EXPECT_EQ(NamePciPath(gpu, nic, 2), PciPathKind::kNode);
}

TEST(PciPath, OtherSocketIsSys) {
  PciPlace gpu = Place("/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0", 0);
  PciPlace nic = Place("/sys/devices/pci0000:80/0000:80:01.0/0000:81:00.0", 1);
  EXPECT_EQ(NamePciPath(gpu, nic, 2), PciPathKind::kSys);
  EXPECT_STREQ(PciPathKindName(NamePciPath(nic, gpu, 2)), "SYS");
}

TEST(PciPath, NoNumaNodeIsLocalOnlyOnASingleNodeHost) {
  PciPlace gpu = Place("/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0", -1);
  PciPlace nic = Place("/sys/devices/pci0000:40/0000:40:01.0/0000:41:00.0", 0);
  EXPECT_EQ(NamePciPath(gpu, nic, 1), PciPathKind::kNode);
  EXPECT_EQ(NamePciPath(gpu, nic, 0), PciPathKind::kNode);
  EXPECT_EQ(NamePciPath(gpu, nic, 2), PciPathKind::kSys);
  // Under one host bridge the NUMA node does not matter.
  PciPlace near = Place("/sys/devices/pci0000:00/0000:00:02.0/0000:02:00.0", -1);
  EXPECT_EQ(NamePciPath(gpu, near, 2), PciPathKind::kPhb);
}

}  // namespace
}  // namespace stallscope
