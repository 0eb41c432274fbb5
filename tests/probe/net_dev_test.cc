#include "probe/net_dev.h"

#include <gtest/gtest.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "core/file.h"

namespace stallscope {
namespace {

const std::string kFixtures = STALLSCOPE_FIXTURES;

const NetInterface* Find(const std::vector<NetInterface>& list, const std::string& name) {
  for (const NetInterface& i : list) {
    if (i.name == name) return &i;
  }
  return nullptr;
}

const NetDevCounters* Find(const std::vector<NetDevCounters>& list, const std::string& name) {
  for (const NetDevCounters& c : list) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

std::vector<std::string> Names(const std::vector<NetInterface>& list) {
  std::vector<std::string> names;
  for (const NetInterface& i : list) names.push_back(i.name);
  return names;
}

// A throwaway tree under /tmp for inputs no real host shows (a broken mtu).
class TempTree {
 public:
  TempTree() {
    char pattern[] = "/tmp/stallscope_net_XXXXXX";
    dir_ = ::mkdtemp(pattern);
  }
  ~TempTree() { std::filesystem::remove_all(dir_); }
  void Write(const std::string& relative, const std::string& text) {
    std::filesystem::path path = dir_ + "/" + relative;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
};

// ---- /proc/net/dev -------------------------------------------------------

TEST(ParseNetDev, LiveCaptureMatchesTheFile) {
  Result<std::vector<NetDevCounters>> dev = ReadNetDev(Root(kFixtures + "/live_debian12"));
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  ASSERT_EQ(dev->size(), 4u);
  EXPECT_EQ((*dev)[0].name, "lo");
  EXPECT_EQ((*dev)[1].name, "ifb0");
  EXPECT_EQ((*dev)[2].name, "ifb1");
  EXPECT_EQ((*dev)[3].name, "eth0");
  const NetDevCounters& eth0 = (*dev)[3];
  EXPECT_EQ(eth0.rx_bytes, 19852937u);
  EXPECT_EQ(eth0.rx_packets, 804u);
  EXPECT_EQ(eth0.tx_bytes, 50474u);
  EXPECT_EQ(eth0.tx_packets, 678u);
  EXPECT_EQ(eth0.rx_errs, 0u);
  const NetDevCounters& lo = (*dev)[0];
  EXPECT_EQ(lo.rx_bytes, 4267u);
  EXPECT_EQ(lo.tx_bytes, 4267u);
  EXPECT_EQ(lo.rx_packets, 49u);
}

TEST(ParseNetDev, EveryColumnLandsInItsField) {
  Result<std::vector<NetDevCounters>> dev = ReadNetDev(Root(kFixtures + "/docker_host"));
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  ASSERT_EQ(dev->size(), 5u);
  const NetDevCounters* eth0 = Find(*dev, "eth0");
  ASSERT_NE(eth0, nullptr);
  EXPECT_EQ(eth0->rx_bytes, 987654321012u);
  EXPECT_EQ(eth0->rx_packets, 812345678u);
  EXPECT_EQ(eth0->rx_errs, 3u);
  EXPECT_EQ(eth0->rx_drop, 17u);
  EXPECT_EQ(eth0->rx_fifo, 0u);
  EXPECT_EQ(eth0->rx_frame, 1u);
  EXPECT_EQ(eth0->rx_multicast, 40212u);
  EXPECT_EQ(eth0->tx_bytes, 123456789012u);
  EXPECT_EQ(eth0->tx_packets, 98765432u);
  EXPECT_EQ(eth0->tx_drop, 2u);
  const NetDevCounters* veth = Find(*dev, "vethd41c2a7");
  ASSERT_NE(veth, nullptr);
  EXPECT_EQ(veth->rx_drop, 5u);
  EXPECT_NE(Find(*dev, "br-5f3c2a1b9d7e"), nullptr);
}

TEST(ParseNetDev, AllSixteenColumnsInOrder) {
  const char* text =
      "Inter-|   Receive |  Transmit\n"
      " face |bytes ... |bytes ...\n"
      "  eth1: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n";
  Result<std::vector<NetDevCounters>> dev = ParseNetDev(text, "dev");
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  ASSERT_EQ(dev->size(), 1u);
  const NetDevCounters& c = (*dev)[0];
  EXPECT_EQ(c.rx_bytes, 1u);
  EXPECT_EQ(c.rx_packets, 2u);
  EXPECT_EQ(c.rx_errs, 3u);
  EXPECT_EQ(c.rx_drop, 4u);
  EXPECT_EQ(c.rx_fifo, 5u);
  EXPECT_EQ(c.rx_frame, 6u);
  EXPECT_EQ(c.rx_compressed, 7u);
  EXPECT_EQ(c.rx_multicast, 8u);
  EXPECT_EQ(c.tx_bytes, 9u);
  EXPECT_EQ(c.tx_packets, 10u);
  EXPECT_EQ(c.tx_errs, 11u);
  EXPECT_EQ(c.tx_drop, 12u);
  EXPECT_EQ(c.tx_fifo, 13u);
  EXPECT_EQ(c.tx_colls, 14u);
  EXPECT_EQ(c.tx_carrier, 15u);
  EXPECT_EQ(c.tx_compressed, 16u);
}

TEST(ParseNetDev, OldKernelsGlueTheCountToTheColon) {
  const char* text =
      "Inter-|\n face |\n"
      "  eth0:123456789012 1 0 0 0 0 0 0 5 6 0 0 0 0 0 0\n";
  Result<std::vector<NetDevCounters>> dev = ParseNetDev(text, "dev");
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  ASSERT_EQ(dev->size(), 1u);
  EXPECT_EQ((*dev)[0].name, "eth0");
  EXPECT_EQ((*dev)[0].rx_bytes, 123456789012u);
  EXPECT_EQ((*dev)[0].tx_bytes, 5u);
}

TEST(ParseNetDev, HeaderOnlyIsNoInterfaces) {
  Result<std::vector<NetDevCounters>> dev = ParseNetDev("Inter-|\n face |\n", "dev");
  ASSERT_TRUE(dev.ok());
  EXPECT_TRUE(dev->empty());
}

void ExpectParseError(std::string_view text, const std::string& where, const std::string& what) {
  Result<std::vector<NetDevCounters>> dev = ParseNetDev(text, "/proc/net/dev");
  ASSERT_FALSE(dev.ok()) << "accepted: " << text;
  EXPECT_EQ(dev.status().code(), Status::Code::kParseError);
  EXPECT_NE(dev.status().message().find(where), std::string::npos) << dev.status().message();
  EXPECT_NE(dev.status().message().find(what), std::string::npos) << dev.status().message();
}

TEST(ParseNetDev, MalformedInputNamesFileAndLine) {
  ExpectParseError("", "/proc/net/dev:", "header");
  ExpectParseError("Inter-|   Receive\n", "/proc/net/dev:", "header");
  ExpectParseError("Inter-\n face |\n", "/proc/net/dev:1:", "header");
  ExpectParseError(
      "Inter-|\n face |\n  eth0: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n  eth1: 1 2 3",
      "/proc/net/dev:4:", "expected 16 counters, got 3");
  ExpectParseError("Inter-|\n face |\n  eth0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n",
                   "/proc/net/dev:3:", "expected '<interface>: <counters>'");
  ExpectParseError("Inter-|\n face |\n  : 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n",
                   "/proc/net/dev:3:", "empty interface name");
  ExpectParseError("Inter-|\n face |\n  eth0: 1 2 3 4 5 6 7 x 9 10 11 12 13 14 15 16\n",
                   "/proc/net/dev:3:", "counter 8 is not a number");
  ExpectParseError("Inter-|\n face |\n  eth0: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 -16\n",
                   "/proc/net/dev:3:", "counter 16");
  ExpectParseError("Inter-|\n face |\n  eth0: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17\n",
                   "/proc/net/dev:3:", "got 17");
}

TEST(ReadNetDev, MissingFileIsNotFound) {
  Result<std::vector<NetDevCounters>> dev = ReadNetDev(Root(kFixtures + "/no_such_host"));
  ASSERT_FALSE(dev.ok());
  EXPECT_TRUE(dev.status().IsNotFound());
}

// ---- /sys/class/net ------------------------------------------------------

TEST(ReadInterfaces, LiveCapture) {
  Result<std::vector<NetInterface>> list =
      ReadInterfaces(Root(kFixtures + "/live_debian12"), InterfaceAddresses{});
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  EXPECT_EQ(Names(*list), (std::vector<std::string>{"eth0", "ifb0", "ifb1", "lo"}));

  const NetInterface* eth0 = Find(*list, "eth0");
  ASSERT_NE(eth0, nullptr);
  EXPECT_EQ(eth0->mtu_bytes, 1400u);
  EXPECT_EQ(eth0->speed_mbps, std::nullopt) << "virtio reports speed -1";
  EXPECT_EQ(eth0->operstate, "up");
  EXPECT_EQ(eth0->mac_address, "02:fc:00:00:00:01");
  EXPECT_EQ(eth0->arp_type, 1u);
  EXPECT_EQ(eth0->carrier, true);
  EXPECT_EQ(eth0->ifindex, 4);
  EXPECT_EQ(eth0->iflink, 4);
  EXPECT_EQ(eth0->kind, InterfaceKind::kEthernet);
  EXPECT_EQ(eth0->kind_evidence, "has device link");
  // device -> ../../../virtio2, which sits under the PCI function 0000:00:03.0.
  EXPECT_EQ(eth0->pci_address, "0000:00:03.0");
  EXPECT_EQ(eth0->master, "");
  EXPECT_TRUE(eth0->addresses.empty());

  const NetInterface* ifb0 = Find(*list, "ifb0");
  ASSERT_NE(ifb0, nullptr);
  EXPECT_EQ(ifb0->mtu_bytes, 1500u);
  EXPECT_EQ(ifb0->speed_mbps, std::nullopt);
  EXPECT_EQ(ifb0->carrier, std::nullopt) << "the kernel answers EINVAL when down";
  EXPECT_EQ(ifb0->operstate, "down");
  EXPECT_EQ(ifb0->kind, InterfaceKind::kOther);
  EXPECT_EQ(ifb0->pci_address, "");

  const NetInterface* lo = Find(*list, "lo");
  ASSERT_NE(lo, nullptr);
  EXPECT_EQ(lo->mtu_bytes, 65536u);
  EXPECT_EQ(lo->arp_type, 772u);
  EXPECT_EQ(lo->kind, InterfaceKind::kLoopback);
  EXPECT_STREQ(InterfaceKindName(lo->kind), "loopback");
}

TEST(ReadInterfaces, DockerHost) {
  InterfaceAddresses addresses;
  addresses["docker0"].push_back({IpAddress::Family::kIpv4, "172.17.0.1", 16});
  addresses["eth0"].push_back({IpAddress::Family::kIpv4, "10.1.2.3", 24});
  addresses["eth0"].push_back({IpAddress::Family::kIpv6, "fe80::ba59:9fff:fed4:1e2a", 64});
  addresses["gone0"].push_back({IpAddress::Family::kIpv4, "10.9.9.9", 8});
  Result<std::vector<NetInterface>> list =
      ReadInterfaces(Root(kFixtures + "/docker_host"), addresses);
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  // bonding_masters is a file beside the interfaces, not an interface.
  EXPECT_EQ(Names(*list),
            (std::vector<std::string>{"br-5f3c2a1b9d7e", "docker0", "eth0", "lo", "vethd41c2a7"}));

  const NetInterface* eth0 = Find(*list, "eth0");
  ASSERT_NE(eth0, nullptr);
  EXPECT_EQ(eth0->kind, InterfaceKind::kEthernet);
  EXPECT_EQ(eth0->speed_mbps, 25000u);
  EXPECT_EQ(eth0->mtu_bytes, 9000u);
  EXPECT_EQ(eth0->pci_address, "0000:3b:00.0");
  ASSERT_EQ(eth0->addresses.size(), 2u);
  EXPECT_EQ(eth0->addresses[1].family, IpAddress::Family::kIpv6);

  const NetInterface* docker0 = Find(*list, "docker0");
  ASSERT_NE(docker0, nullptr);
  EXPECT_EQ(docker0->kind, InterfaceKind::kDocker);
  EXPECT_EQ(docker0->kind_evidence, "has bridge/, Docker's name");
  EXPECT_EQ(docker0->mtu_bytes, 1500u);
  EXPECT_EQ(docker0->speed_mbps, std::nullopt);
  EXPECT_EQ(docker0->pci_address, "");
  ASSERT_EQ(docker0->addresses.size(), 1u);
  EXPECT_EQ(docker0->addresses[0].address, "172.17.0.1");
  EXPECT_EQ(docker0->addresses[0].prefix_length, 16);

  const NetInterface* veth = Find(*list, "vethd41c2a7");
  ASSERT_NE(veth, nullptr);
  EXPECT_EQ(veth->kind, InterfaceKind::kDocker);
  EXPECT_EQ(veth->master, "docker0");
  EXPECT_EQ(veth->ifindex, 5);
  EXPECT_EQ(veth->iflink, 4);
  EXPECT_EQ(veth->speed_mbps, 10000u);
  EXPECT_NE(veth->kind_evidence.find("master docker0"), std::string::npos);

  const NetInterface* user_net = Find(*list, "br-5f3c2a1b9d7e");
  ASSERT_NE(user_net, nullptr);
  EXPECT_EQ(user_net->kind, InterfaceKind::kDocker);
  EXPECT_EQ(user_net->carrier, false);
  EXPECT_EQ(user_net->operstate, "down");

  EXPECT_EQ(Find(*list, "lo")->kind, InterfaceKind::kLoopback);
}

TEST(ReadInterfaces, InfinibandHost) {
  Result<std::vector<NetInterface>> list =
      ReadInterfaces(Root(kFixtures + "/ib_host"), InterfaceAddresses{});
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  EXPECT_EQ(Names(*list), (std::vector<std::string>{"ens1f1", "ib0", "lo"}));
  const NetInterface* ib0 = Find(*list, "ib0");
  ASSERT_NE(ib0, nullptr);
  EXPECT_EQ(ib0->kind, InterfaceKind::kInfiniband);
  EXPECT_EQ(ib0->arp_type, 32u);
  EXPECT_EQ(ib0->mtu_bytes, 4092u);
  EXPECT_EQ(ib0->pci_address, "0000:3b:00.0");
  EXPECT_EQ(ib0->mac_address.size(), 59u) << "IPoIB hardware addresses are 20 bytes";
  const NetInterface* ens1f1 = Find(*list, "ens1f1");
  ASSERT_NE(ens1f1, nullptr);
  EXPECT_EQ(ens1f1->kind, InterfaceKind::kEthernet);
  EXPECT_EQ(ens1f1->speed_mbps, std::nullopt) << "speed -1 when the link is down";
  EXPECT_EQ(ens1f1->carrier, false);
  EXPECT_EQ(ens1f1->pci_address, "0000:3b:00.1");
}

TEST(ReadInterfaces, MissingSysClassNetIsNotFound) {
  Result<std::vector<NetInterface>> list =
      ReadInterfaces(Root(kFixtures + "/no_such_host"), InterfaceAddresses{});
  ASSERT_FALSE(list.ok());
  EXPECT_TRUE(list.status().IsNotFound());
}

TEST(ReadInterfaces, GarbledAttributeIsAParseErrorNamingTheFile) {
  TempTree tree;
  tree.Write("sys/class/net/eth9/mtu", "nine thousand\n");
  tree.Write("sys/class/net/eth9/type", "1\n");
  Result<std::vector<NetInterface>> list = ReadInterfaces(Root(tree.dir()), InterfaceAddresses{});
  ASSERT_FALSE(list.ok());
  EXPECT_EQ(list.status().code(), Status::Code::kParseError);
  EXPECT_NE(list.status().message().find("/sys/class/net/eth9/mtu:1:"), std::string::npos)
      << list.status().message();
}

TEST(ReadInterfaces, MissingAttributesAreUnknownNotErrors) {
  TempTree tree;
  tree.Write("sys/class/net/dummy0/operstate", "unknown\n");
  Result<std::vector<NetInterface>> list = ReadInterfaces(Root(tree.dir()), InterfaceAddresses{});
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].mtu_bytes, std::nullopt);
  EXPECT_EQ((*list)[0].arp_type, std::nullopt);
  EXPECT_EQ((*list)[0].kind, InterfaceKind::kOther);
}

// ---- the kind rule -------------------------------------------------------

InterfaceEvidence Ether(std::string name, int64_t ifindex, int64_t iflink) {
  InterfaceEvidence e;
  e.name = std::move(name);
  e.arp_type = 1;
  e.ifindex = ifindex;
  e.iflink = iflink;
  return e;
}

TEST(ClassifyInterface, EachKindFromItsEvidence) {
  InterfaceEvidence e = Ether("eth0.100", 7, 2);
  e.devtype = "vlan";
  EXPECT_EQ(ClassifyInterface(e).kind, InterfaceKind::kVlan) << "vlan beats iflink != ifindex";

  e = Ether("tap0", 8, 8);
  e.has_tun_flags = true;
  EXPECT_EQ(ClassifyInterface(e).kind, InterfaceKind::kTun);

  e = Ether("wlp2s0", 3, 3);
  e.has_device = true;
  e.has_wireless_dir = true;
  EXPECT_EQ(ClassifyInterface(e).kind, InterfaceKind::kWireless) << "wireless beats device";

  e = Ether("wlan0", 3, 3);
  e.devtype = "wlan";
  EXPECT_EQ(ClassifyInterface(e).kind, InterfaceKind::kWireless);

  e = Ether("bond0", 9, 9);
  e.has_bonding_dir = true;
  EXPECT_EQ(ClassifyInterface(e).kind, InterfaceKind::kBond);

  e = Ether("br0", 10, 10);
  e.has_bridge_dir = true;
  EXPECT_EQ(ClassifyInterface(e).kind, InterfaceKind::kBridge);

  e = Ether("br-lan", 10, 10);
  e.devtype = "bridge";
  InterfaceClass c = ClassifyInterface(e);
  EXPECT_EQ(c.kind, InterfaceKind::kBridge) << "br-lan is not a Docker network id";
  EXPECT_EQ(c.evidence, "DEVTYPE=bridge");

  e = Ether("veth0", 11, 12);
  e.master = "br0";
  EXPECT_EQ(ClassifyInterface(e).kind, InterfaceKind::kVeth);
  e.master = "br-0123456789ab";
  EXPECT_EQ(ClassifyInterface(e).kind, InterfaceKind::kDocker);

  e = Ether("vethXYZ", 11, 11);  // iflink unknown-equal, still named veth
  EXPECT_EQ(ClassifyInterface(e).kind, InterfaceKind::kVeth);

  e = Ether("enp1s0", 2, 2);
  e.has_device = true;
  e.master = "bond0";
  EXPECT_EQ(ClassifyInterface(e).kind, InterfaceKind::kEthernet) << "a bond slave is still a NIC";

  e = Ether("tunl0", 5, 0);
  e.arp_type = 768;  // ARPHRD_TUNNEL: iflink 0 but not a veth
  EXPECT_EQ(ClassifyInterface(e).kind, InterfaceKind::kOther);

  e = InterfaceEvidence{};
  e.name = "ib1";
  EXPECT_EQ(ClassifyInterface(e).kind, InterfaceKind::kInfiniband) << "name when type unreadable";
  e.arp_type = 1;
  EXPECT_EQ(ClassifyInterface(e).kind, InterfaceKind::kOther);
}

TEST(IsDockerBridgeName, DockerNamesOnly) {
  EXPECT_TRUE(IsDockerBridgeName("docker0"));
  EXPECT_TRUE(IsDockerBridgeName("br-5f3c2a1b9d7e"));
  EXPECT_FALSE(IsDockerBridgeName("br-lan"));
  EXPECT_FALSE(IsDockerBridgeName("br-5f3c2a1b9d7"));
  EXPECT_FALSE(IsDockerBridgeName("br-5f3c2a1b9d7g"));
  EXPECT_FALSE(IsDockerBridgeName("docker1"));
  EXPECT_FALSE(IsDockerBridgeName(""));
}

TEST(PciAddressFromDevicePath, LastPciComponent) {
  EXPECT_EQ(PciAddressFromDevicePath("../../../0000:3b:00.0"), "0000:3b:00.0");
  EXPECT_EQ(PciAddressFromDevicePath("/sys/devices/pci0000:00/0000:00:03.0/virtio2"),
            "0000:00:03.0");
  EXPECT_EQ(PciAddressFromDevicePath("/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.1"),
            "0000:3b:00.1");
  EXPECT_EQ(PciAddressFromDevicePath("/sys/devices/pci10000:00/10000:01:00.0"), "10000:01:00.0");
  EXPECT_EQ(PciAddressFromDevicePath("../../../virtio2"), "");
  EXPECT_EQ(PciAddressFromDevicePath("/sys/devices/platform/usb1/1-1"), "");
  EXPECT_EQ(PciAddressFromDevicePath("0000:3b:00.8"), "") << "functions are 0-7";
  EXPECT_EQ(PciAddressFromDevicePath(""), "");
}

// ---- the live host against the classic tool -------------------------------

std::string RunCommand(const char* command) {
  std::string out;
  FILE* pipe = ::popen(command, "r");
  if (pipe == nullptr) return out;
  char buffer[4096];
  size_t n;
  while ((n = ::fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  ::pclose(pipe);
  return out;
}

// `"key":` followed by a number or a quoted string, from position `from`.
std::optional<std::string> JsonValueAfter(const std::string& json, const std::string& key,
                                          size_t from, size_t until) {
  size_t at = json.find("\"" + key + "\":", from);
  if (at == std::string::npos || at >= until) return std::nullopt;
  at += key.size() + 3;
  if (at < json.size() && json[at] == '"') {
    size_t end = json.find('"', at + 1);
    return json.substr(at + 1, end - at - 1);
  }
  size_t end = json.find_first_of(",}]", at);
  return json.substr(at, end - at);
}

// ifname -> the text of the object that follows it in `ip -j` output.
std::map<std::string, std::pair<size_t, size_t>> SplitByIfname(const std::string& json) {
  std::map<std::string, std::pair<size_t, size_t>> spans;
  size_t at = json.find("\"ifname\":");
  while (at != std::string::npos) {
    size_t next = json.find("\"ifname\":", at + 1);
    std::optional<std::string> name = JsonValueAfter(json, "ifname", at, at + 1);
    // "ifindex" precedes "ifname" in the object; the span covers what follows.
    if (name) spans[*name] = {at, next == std::string::npos ? json.size() : next};
    at = next;
  }
  return spans;
}

TEST(LiveHost, InterfacesAndMtusAgreeWithIpLink) {
  std::string json = RunCommand("ip -j link 2>/dev/null");
  if (json.find("\"ifname\"") == std::string::npos) GTEST_SKIP() << "no `ip -j link` here";
  Result<InterfaceAddresses> addresses = ReadLiveAddresses();
  ASSERT_TRUE(addresses.ok()) << addresses.status().ToString();
  Result<std::vector<NetInterface>> list = ReadInterfaces(Root("/"), *addresses);
  ASSERT_TRUE(list.ok()) << list.status().ToString();

  std::map<std::string, std::pair<size_t, size_t>> spans = SplitByIfname(json);
  std::set<std::string> ours;
  for (const NetInterface& i : *list) ours.insert(i.name);
  std::set<std::string> theirs;
  for (const auto& [name, span] : spans) theirs.insert(name);
  EXPECT_EQ(ours, theirs);
  for (const NetInterface& i : *list) {
    auto span = spans.find(i.name);
    if (span == spans.end()) continue;
    std::optional<std::string> mtu =
        JsonValueAfter(json, "mtu", span->second.first, span->second.second);
    ASSERT_TRUE(mtu) << i.name;
    ASSERT_TRUE(i.mtu_bytes) << i.name;
    EXPECT_EQ(std::to_string(*i.mtu_bytes), *mtu) << i.name;
    std::optional<std::string> mac =
        JsonValueAfter(json, "address", span->second.first, span->second.second);
    if (mac) {
      EXPECT_EQ(i.mac_address, *mac) << i.name;
    }
  }

  // /proc/net/dev lists the same interfaces.
  Result<std::vector<NetDevCounters>> dev = ReadNetDev(Root("/"));
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  std::set<std::string> counted;
  for (const NetDevCounters& c : *dev) counted.insert(c.name);
  EXPECT_EQ(counted, ours);
}

TEST(LiveHost, AddressesAgreeWithIpAddr) {
  std::string json = RunCommand("ip -j addr 2>/dev/null");
  if (json.find("\"ifname\"") == std::string::npos) GTEST_SKIP() << "no `ip -j addr` here";
  Result<InterfaceAddresses> addresses = ReadLiveAddresses();
  ASSERT_TRUE(addresses.ok()) << addresses.status().ToString();
  std::set<std::string> ours;
  for (const auto& [name, list] : *addresses) {
    for (const IpAddress& a : list) {
      ours.insert(name + " " + a.address + "/" + std::to_string(a.prefix_length));
    }
  }
  std::set<std::string> theirs;
  for (const auto& [name, span] : SplitByIfname(json)) {
    size_t at = span.first;
    while (std::optional<std::string> local = JsonValueAfter(json, "local", at, span.second)) {
      at = json.find("\"local\":", at) + 1;
      std::optional<std::string> prefix = JsonValueAfter(json, "prefixlen", at, span.second);
      if (prefix) theirs.insert(name + " " + *local + "/" + *prefix);
    }
  }
  EXPECT_EQ(ours, theirs);
}

}  // namespace
}  // namespace stallscope
