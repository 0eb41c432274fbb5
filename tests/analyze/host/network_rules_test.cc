#include "analyze/host/network_rules.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/file.h"
#include "finding_matchers.h"
#include "probe/cgroup.h"
#include "probe/infiniband.h"
#include "probe/net_dev.h"

namespace stallscope {
namespace {

const std::string kFixtures = STALLSCOPE_FIXTURES;

// A fixture host with the given addresses and environment ("A=1 B=2").
NetworkObservation Host(const std::string& host, const InterfaceAddresses& addresses,
                        const std::vector<std::string>& env) {
  Root root(kFixtures + "/" + host);
  NetworkObservation o;
  Result<std::vector<NetInterface>> interfaces = ReadInterfaces(root, addresses);
  EXPECT_TRUE(interfaces.ok()) << interfaces.status().ToString();
  if (interfaces.ok()) o.interfaces = *interfaces;
  Result<std::vector<InfinibandDevice>> ib = ReadInfinibandDevices(root);
  EXPECT_TRUE(ib.ok()) << ib.status().ToString();
  if (ib.ok()) o.infiniband = *ib;
  o.container = ReadContainerInfo(root);
  std::string block;
  for (const std::string& e : env) block += e + '\0';
  Result<TrainingEnvironment> parsed = ParseEnviron(block, "test");
  EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
  if (parsed.ok()) o.environment = *parsed;
  return o;
}

InterfaceAddresses DockerHostAddresses() {
  InterfaceAddresses a;
  a["lo"].push_back({IpAddress::Family::kIpv4, "127.0.0.1", 8});
  a["eth0"].push_back({IpAddress::Family::kIpv4, "10.1.2.3", 24});
  a["docker0"].push_back({IpAddress::Family::kIpv4, "172.17.0.1", 16});
  return a;
}

InterfaceAddresses IbHostAddresses() {
  InterfaceAddresses a;
  a["lo"].push_back({IpAddress::Family::kIpv4, "127.0.0.1", 8});
  a["ib0"].push_back({IpAddress::Family::kIpv4, "192.168.50.7", 24});
  return a;
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(InterfaceList, NcclSyntax) {
  InterfaceList plain = ParseInterfaceList("eth");
  EXPECT_FALSE(plain.exclude);
  EXPECT_FALSE(plain.exact);
  EXPECT_TRUE(ListSelects(plain, "eth0", std::nullopt));
  EXPECT_TRUE(ListSelects(plain, "eth12", std::nullopt));
  EXPECT_FALSE(ListSelects(plain, "ens1f0", std::nullopt));

  InterfaceList exact = ParseInterfaceList("=eth0,ib0");
  EXPECT_TRUE(exact.exact);
  ASSERT_EQ(exact.entries.size(), 2u);
  EXPECT_TRUE(ListSelects(exact, "eth0", std::nullopt));
  EXPECT_FALSE(ListSelects(exact, "eth01", std::nullopt));
  EXPECT_TRUE(ListSelects(exact, "ib0", std::nullopt));

  InterfaceList exclude = ParseInterfaceList("^docker,lo");
  EXPECT_TRUE(exclude.exclude);
  EXPECT_FALSE(ListSelects(exclude, "docker0", std::nullopt));
  EXPECT_FALSE(ListSelects(exclude, "lo", std::nullopt));
  EXPECT_TRUE(ListSelects(exclude, "eth0", std::nullopt));

  InterfaceList both = ParseInterfaceList("^=eth0");
  EXPECT_TRUE(both.exclude && both.exact);
  EXPECT_TRUE(ListSelects(both, "eth01", std::nullopt));
  EXPECT_FALSE(ListSelects(both, "eth0", std::nullopt));

  InterfaceList hcas = ParseInterfaceList("mlx5_0:1, mlx5_1");
  ASSERT_EQ(hcas.entries.size(), 2u);
  EXPECT_EQ(hcas.entries[0].port, 1);
  EXPECT_EQ(hcas.entries[1].port, std::nullopt);
  EXPECT_TRUE(ListSelects(hcas, "mlx5_0", 1));
  EXPECT_FALSE(ListSelects(hcas, "mlx5_0", 2));
  EXPECT_TRUE(ListSelects(hcas, "mlx5_1", 2));
  EXPECT_TRUE(ParseInterfaceList(" , ").entries.empty());
}

TEST(WrongInterface, DockerHostDefaultsRaiseNothing) {
  NetworkObservation o = Host("docker_host", DockerHostAddresses(), {"WORLD_SIZE=8"});
  EXPECT_FALSE(FindCopy(CheckNetwork(o).findings, "network.wrong_interface"));
  o = Host("docker_host", DockerHostAddresses(), {"NCCL_SOCKET_IFNAME=eth0"});
  EXPECT_FALSE(FindCopy(CheckNetwork(o).findings, "network.wrong_interface"));
  o = Host("docker_host", DockerHostAddresses(), {"NCCL_SOCKET_IFNAME=^docker,lo"});
  EXPECT_FALSE(FindCopy(CheckNetwork(o).findings, "network.wrong_interface"));
}

TEST(WrongInterface, NamedDockerBridgeIsCritical) {
  NetworkObservation o = Host("docker_host", DockerHostAddresses(), {"NCCL_SOCKET_IFNAME=docker0"});
  auto findings = CheckNetwork(o).findings;
  std::optional<Finding> f = FindCopy(findings, "network.wrong_interface");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kCritical);
  EXPECT_EQ(f->layer, Layer::kNetwork);
  EXPECT_EQ(EvidenceOf<std::string>(*f, "variable"), "NCCL_SOCKET_IFNAME");
  EXPECT_TRUE(Has(EvidenceOf<std::string>(*f, "problems"), "docker0 is a Docker bridge"));
  EXPECT_EQ(EvidenceOf<int64_t>(*f, "usable_count"), 0);
  EXPECT_TRUE(Has(f->next, "eth0")) << f->next;
}

TEST(WrongInterface, MissingDownAndAddresslessNames) {
  // "ens" matches nothing on docker_host; =eth1 does not exist; br- is a
  // Docker network that is down; eth0 without an address is unusable.
  InterfaceAddresses no_eth0 = DockerHostAddresses();
  no_eth0.erase("eth0");
  struct Case {
    std::string value;
    InterfaceAddresses addresses;
    std::string problem;
  };
  std::vector<Case> cases = {
      {"ens", DockerHostAddresses(), "no interface starts with 'ens' exists"},
      {"=eth1", DockerHostAddresses(), "no interface named 'eth1' exists"},
      {"=br-5f3c2a1b9d7e", DockerHostAddresses(), "br-5f3c2a1b9d7e is a Docker bridge"},
      {"eth0", no_eth0, "eth0 has no IP address"},
      {"lo", DockerHostAddresses(), "lo is loopback"},
      {"^eth,lo,docker,br-,veth", DockerHostAddresses(), "excludes every usable interface"},
  };
  for (const Case& c : cases) {
    NetworkObservation o = Host("docker_host", c.addresses, {"NCCL_SOCKET_IFNAME=" + c.value});
    auto findings = CheckNetwork(o).findings;
    std::optional<Finding> f = FindCopy(findings, "network.wrong_interface");
    ASSERT_TRUE(f) << c.value;
    EXPECT_EQ(f->severity, Severity::kCritical) << c.value;
    EXPECT_TRUE(Has(f->summary, c.problem)) << c.value << ": " << f->summary;
  }
}

TEST(WrongInterface, OneBadNameBesideAGoodOneWarns) {
  NetworkObservation o =
      Host("docker_host", DockerHostAddresses(), {"NCCL_SOCKET_IFNAME==eth0,eth9"});
  auto findings = CheckNetwork(o).findings;
  std::optional<Finding> f = FindCopy(findings, "network.wrong_interface");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kWarning);
  EXPECT_EQ(EvidenceOf<std::string>(*f, "usable"), "eth0");
  EXPECT_TRUE(Has(f->summary, "'eth9'"));
}

TEST(WrongInterface, DownInterfaceOnIbHost) {
  // ens1f1 exists but its link is down (carrier 0, operstate down).
  InterfaceAddresses a = IbHostAddresses();
  a["ens1f1"].push_back({IpAddress::Family::kIpv4, "10.0.0.9", 24});
  NetworkObservation o = Host("ib_host", a, {"GLOO_SOCKET_IFNAME=ens1f1"});
  auto findings = CheckNetwork(o).findings;
  std::optional<Finding> f = FindCopy(findings, "network.wrong_interface");
  ASSERT_TRUE(f);
  EXPECT_EQ(EvidenceOf<std::string>(*f, "variable"), "GLOO_SOCKET_IFNAME");
  EXPECT_TRUE(Has(f->summary, "ens1f1 is down")) << f->summary;
  // Gloo takes exact names: "ib" is not ib0.
  o = Host("ib_host", IbHostAddresses(), {"GLOO_SOCKET_IFNAME=ib"});
  f = FindCopy(CheckNetwork(o).findings, "network.wrong_interface");
  ASSERT_TRUE(f);
  EXPECT_TRUE(Has(EvidenceOf<std::string>(*f, "problems"), "no interface named 'ib'"));
  o = Host("ib_host", IbHostAddresses(), {"GLOO_SOCKET_IFNAME=ib0", "NCCL_SOCKET_IFNAME=ib"});
  EXPECT_FALSE(FindCopy(CheckNetwork(o).findings, "network.wrong_interface"));
}

TEST(WrongInterface, IbHcaNamesADownPortOrNothing) {
  // mlx5_1 (RoCE) is DOWN on ib_host; mlx5_0:1 is ACTIVE.
  NetworkObservation o = Host("ib_host", IbHostAddresses(), {"NCCL_IB_HCA=mlx5_1"});
  auto findings = CheckNetwork(o).findings;
  std::optional<Finding> f = FindCopy(findings, "network.wrong_interface");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kCritical);
  EXPECT_TRUE(Has(f->summary, "mlx5_1:1 is DOWN")) << f->summary;
  EXPECT_TRUE(Has(f->summary, "falls back to TCP"));

  o = Host("ib_host", IbHostAddresses(), {"NCCL_IB_HCA=mlx5_0:2"});
  f = FindCopy(CheckNetwork(o).findings, "network.wrong_interface");
  ASSERT_TRUE(f);
  EXPECT_TRUE(Has(f->summary, "no RDMA device starting with 'mlx5_0' with port 2")) << f->summary;

  for (const char* fine : {"mlx5_0:1", "mlx5", "=mlx5_0", "^mlx5_1"}) {
    o = Host("ib_host", IbHostAddresses(), {std::string("NCCL_IB_HCA=") + fine});
    EXPECT_FALSE(FindCopy(CheckNetwork(o).findings, "network.wrong_interface")) << fine;
  }
  o = Host("ib_host", IbHostAddresses(), {"NCCL_IB_HCA=^mlx5_0"});
  f = FindCopy(CheckNetwork(o).findings, "network.wrong_interface");
  ASSERT_TRUE(f);
  EXPECT_TRUE(Has(f->summary, "excludes every active RDMA port"));
  // IB disabled: NCCL never reads NCCL_IB_HCA.
  o = Host("ib_host", IbHostAddresses(), {"NCCL_IB_HCA=mlx5_1", "NCCL_IB_DISABLE=1"});
  EXPECT_FALSE(FindCopy(CheckNetwork(o).findings, "network.wrong_interface"));
}

TEST(WrongInterface, RouteToMasterLeavesThroughAnotherInterface) {
  InterfaceAddresses a = DockerHostAddresses();
  NetworkObservation o = Host("docker_host", a, {"NCCL_SOCKET_IFNAME=eth0", "WORLD_SIZE=16"});
  o.routes.push_back({"MASTER_ADDR=node0", "172.17.0.9", "172.17.0.1", "docker0", ""});
  auto findings = CheckNetwork(o).findings;
  std::optional<Finding> f = FindCopy(findings, "network.wrong_interface");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kWarning);  // eth0 itself is usable
  EXPECT_TRUE(
      Has(f->summary, "the kernel routes to MASTER_ADDR=node0 (172.17.0.9) through docker0"))
      << f->summary;
  EXPECT_EQ(EvidenceOf<std::string>(*f, "route_172.17.0.9"), "docker0");

  // The same route through the interface NCCL was told to use: fine.
  o.routes[0] = {"MASTER_ADDR=node0", "10.1.2.1", "10.1.2.3", "eth0", ""};
  EXPECT_FALSE(FindCopy(CheckNetwork(o).findings, "network.wrong_interface"));
  // The master is this host: its route goes through lo and says nothing.
  o.routes[0] = {"MASTER_ADDR=localhost", "127.0.0.1", "127.0.0.1", "lo", ""};
  EXPECT_FALSE(FindCopy(CheckNetwork(o).findings, "network.wrong_interface"));
  // A route that could not be found is not held against the variable.
  o.routes[0] = {"MASTER_ADDR=nowhere", "", "", "", "cannot resolve"};
  EXPECT_FALSE(FindCopy(CheckNetwork(o).findings, "network.wrong_interface"));
}

TEST(ContainerBridge, BridgedContainerSeverityFollowsTheJobsSize) {
  InterfaceAddresses a;
  a["lo"].push_back({IpAddress::Family::kIpv4, "127.0.0.1", 8});
  a["eth0"].push_back({IpAddress::Family::kIpv4, "172.17.0.5", 16});
  NetworkObservation single = Host("bridge_container", a, {});
  auto findings = CheckNetwork(single).findings;
  std::optional<Finding> f = FindCopy(findings, "network.container_bridge");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kInfo);
  EXPECT_EQ(EvidenceOf<std::string>(*f, "interface"), "eth0");
  EXPECT_EQ(EvidenceOf<std::string>(*f, "address"), "172.17.0.5");
  EXPECT_TRUE(EvidenceOf<bool>(*f, "in_container"));
  std::string clues = EvidenceOf<std::string>(*f, "clues");
  EXPECT_TRUE(Has(clues, "eth0 is a veth")) << clues;
  EXPECT_TRUE(Has(clues, "172.17.0.0/16")) << clues;
  EXPECT_TRUE(Has(clues, "/.dockerenv")) << clues;
  EXPECT_TRUE(Has(f->summary, "Connect to 172.17.0.5 timed out"));
  EXPECT_TRUE(Has(f->next, "--network host"));

  NetworkObservation local = Host("bridge_container", a, {"WORLD_SIZE=4"});
  EXPECT_EQ(FindCopy(CheckNetwork(local).findings, "network.container_bridge")->severity,
            Severity::kWarning);

  NetworkObservation multi =
      Host("bridge_container", a, {"WORLD_SIZE=16", "LOCAL_WORLD_SIZE=8", "NODE_RANK=1"});
  f = FindCopy(CheckNetwork(multi).findings, "network.container_bridge");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kCritical);
  EXPECT_EQ(EvidenceOf<std::string>(*f, "multi_node_hint"), "WORLD_SIZE=16 > LOCAL_WORLD_SIZE=8");

  // Multi-node told by the route: MASTER_ADDR is reached off this host.
  NetworkObservation routed = Host("bridge_container", a, {"WORLD_SIZE=2"});
  routed.routes.push_back({"MASTER_ADDR=10.0.0.1", "10.0.0.1", "172.17.0.5", "eth0", ""});
  EXPECT_EQ(FindCopy(CheckNetwork(routed).findings, "network.container_bridge")->severity,
            Severity::kCritical);
}

TEST(ContainerBridge, HostNetworkOrNoContainerIsQuiet) {
  // docker_host is the host side: it has eth0 (a NIC) and docker0.
  NetworkObservation host = Host("docker_host", DockerHostAddresses(), {"WORLD_SIZE=16"});
  host.container.in_container = true;  // --network host: the host's interfaces are visible
  EXPECT_FALSE(FindCopy(CheckNetwork(host).findings, "network.container_bridge"));
  // A veth outside Docker's range and no container clue: a namespace, not Docker.
  InterfaceAddresses a;
  a["eth0"].push_back({IpAddress::Family::kIpv4, "10.200.0.2", 24});
  NetworkObservation ns = Host("bridge_container", a, {});
  ns.container = ContainerInfo{};
  EXPECT_FALSE(FindCopy(CheckNetwork(ns).findings, "network.container_bridge"));
  // A Kubernetes pod: its CNI address is routable between nodes.
  ns.container.in_container = true;
  ns.container.runtime = "kubernetes";
  EXPECT_FALSE(FindCopy(CheckNetwork(ns).findings, "network.container_bridge"));
  ns.container.runtime = "docker";
  EXPECT_TRUE(FindCopy(CheckNetwork(ns).findings, "network.container_bridge"));
}

TEST(RdmaUnused, ActivePortWithIbDisabled) {
  NetworkObservation o = Host("ib_host", IbHostAddresses(), {"NCCL_IB_DISABLE=1"});
  auto findings = CheckNetwork(o).findings;
  std::optional<Finding> f = FindCopy(findings, "network.rdma_unused");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kWarning);
  EXPECT_EQ(EvidenceOf<int64_t>(*f, "active_port_count"), 1);  // mlx5_1 is DOWN
  EXPECT_TRUE(Has(EvidenceOf<std::string>(*f, "active_ports"), "mlx5_0:1 (InfiniBand, 200 Gb/sec"));
  EXPECT_EQ(EvidenceOf<std::string>(*f, "setting"), "NCCL_IB_DISABLE=1");

  o = Host("ib_host", IbHostAddresses(), {"NCCL_NET=Socket"});
  ASSERT_TRUE(FindCopy(CheckNetwork(o).findings, "network.rdma_unused"));
  for (const char* quiet : {"NCCL_IB_DISABLE=0", "NCCL_NET=IB", "WORLD_SIZE=2"}) {
    o = Host("ib_host", IbHostAddresses(), {quiet});
    EXPECT_FALSE(FindCopy(CheckNetwork(o).findings, "network.rdma_unused")) << quiet;
  }
  // No RDMA at all: nothing to leave unused.
  o = Host("docker_host", DockerHostAddresses(), {"NCCL_IB_DISABLE=1"});
  EXPECT_FALSE(FindCopy(CheckNetwork(o).findings, "network.rdma_unused"));
}

TEST(PortErrors, NicErrorsAndDropsOverAWindow) {
  NetworkObservation o;
  o.window_seconds = 2.0;
  NetRates quiet;
  quiet.name = "eth0";
  quiet.seconds = 2;
  quiet.rx_packets_per_s = 50000;
  quiet.tx_packets_per_s = 50000;
  quiet.rx_drops = 5;  // a few drops: normal
  NetRates erring = quiet;
  erring.name = "eth1";
  erring.rx_errors = 3;  // 3 of 200000: warning
  NetRates dropping = quiet;
  dropping.name = "eth2";
  dropping.rx_drops = 4000;  // 2%: critical
  NetRates loopback = quiet;
  loopback.name = "lo";
  loopback.rx_errors = 99;
  NetRates reset = erring;
  reset.name = "eth3";
  reset.counters_reset = true;
  o.port_deltas = NicErrorDeltas({quiet, erring, dropping, loopback, reset});
  ASSERT_EQ(o.port_deltas.size(), 3u);  // lo and the reset interface are left out
  EXPECT_EQ(o.port_deltas[0].packets, 200000u);
  auto findings = FindAllCopies(CheckNetwork(o).findings, "network.port_errors");
  ASSERT_EQ(findings.size(), 2u);
  EXPECT_EQ(EvidenceOf<std::string>(findings[0], "interface"), "eth1");
  EXPECT_EQ(findings[0].severity, Severity::kWarning);
  EXPECT_EQ(EvidenceOf<int64_t>(findings[0], "rx_errors"), 3);
  EXPECT_EQ(EvidenceOf<std::string>(findings[1], "interface"), "eth2");
  EXPECT_EQ(findings[1].severity, Severity::kCritical);
  EXPECT_NEAR(EvidenceOf<double>(findings[1], "drop_fraction"), 0.02, 1e-9);
  // Without a window (nothing sampled) there is no verdict on counters.
  o.window_seconds.reset();
  EXPECT_TRUE(FindAllCopies(CheckNetwork(o).findings, "network.port_errors").empty());
}

TEST(PortErrors, RdmaSymbolErrorsAndLinkDowned) {
  Result<std::vector<InfinibandDevice>> before =
      ReadInfinibandDevices(Root(kFixtures + "/ib_host"));
  ASSERT_TRUE(before.ok());
  std::vector<InfinibandDevice> after = *before;
  NetworkObservation o;
  o.window_seconds = 1.0;
  o.port_deltas = RdmaErrorDeltas(*before, after);
  EXPECT_TRUE(FindAllCopies(CheckNetwork(o).findings, "network.port_errors").empty())
      << "nothing grew";

  *after[0].ports[0].symbol_errors += 12;
  o.port_deltas = RdmaErrorDeltas(*before, after);
  auto findings = FindAllCopies(CheckNetwork(o).findings, "network.port_errors");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(EvidenceOf<std::string>(findings[0], "port"), "mlx5_0:1");
  EXPECT_EQ(EvidenceOf<int64_t>(findings[0], "symbol_errors"), 12);
  EXPECT_EQ(findings[0].severity, Severity::kWarning);

  *after[0].ports[0].link_downed += 1;
  o.port_deltas = RdmaErrorDeltas(*before, after);
  findings = FindAllCopies(CheckNetwork(o).findings, "network.port_errors");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].severity, Severity::kCritical);
  EXPECT_EQ(EvidenceOf<int64_t>(findings[0], "link_downed"), 1);
}

TEST(PathMtu, EqualMtusRaiseNothing) {
  MtuObservation o{"10.0.0.2", "eth0", 9000, 9000, 9000, "eth1", 9000};
  EXPECT_FALSE(CheckPathMtu(o));
  o.local_mtu = o.path_mtu = o.peer_mtu = 1500;
  o.kernel_mtu = 1500;
  EXPECT_FALSE(CheckPathMtu(o));
}

TEST(PathMtu, JumboHereStandardThereIsABlackHole) {
  // 9000 locally, the peer at 1500, large datagrams vanish, the kernel never heard.
  MtuObservation o{"10.0.0.2", "veth-a", 9000, 1500, 9000, "veth-b", 1500};
  std::optional<Finding> f = CheckPathMtu(o);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->id, "network.mtu_mismatch");
  EXPECT_EQ(f->severity, Severity::kCritical);
  EXPECT_EQ(EvidenceOf<int64_t>(*f, "local_mtu_bytes"), 9000);
  EXPECT_EQ(EvidenceOf<int64_t>(*f, "path_mtu_bytes"), 1500);
  EXPECT_EQ(EvidenceOf<int64_t>(*f, "peer_mtu_bytes"), 1500);
  EXPECT_TRUE(Has(f->summary, "9000") && Has(f->summary, "1500")) << f->summary;
  EXPECT_TRUE(Has(f->next, "ping -M do -s 8972 10.0.0.2")) << f->next;
  EXPECT_TRUE(Has(f->next, "ip link set dev veth-a mtu 1500")) << f->next;
}

TEST(PathMtu, PeerWithLargerMtuOrKnownSmallerPathWarns) {
  // Standard here, jumbo there: everything this side sends arrives.
  MtuObservation o{"10.0.0.1", "veth-b", 1500, 1500, 1500, "veth-a", 9000};
  std::optional<Finding> f = CheckPathMtu(o);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kWarning);
  EXPECT_EQ(EvidenceOf<int64_t>(*f, "peer_mtu_bytes"), 9000);
  // A router that sends "fragmentation needed": the kernel learnt 1400.
  MtuObservation learnt{"10.0.0.9", "eth0", 1500, 1400, 1400, "", std::nullopt};
  f = CheckPathMtu(learnt);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kWarning);
  // Not measured: nothing to say.
  MtuObservation unmeasured{"10.0.0.9", "eth0", 1500, std::nullopt, std::nullopt, "", 9000};
  EXPECT_FALSE(CheckPathMtu(unmeasured));
}

// The NICs' congestion counters over doctor's window: the fabric pushing
// back (pause, ECN, CNP) against the host dropping (buffers, allowances).
NetworkObservation CongestionWindow(NicCongestion growth, double seconds = 2) {
  NetworkObservation o;
  o.window_seconds = seconds;
  growth.counters_used = {"rx_pause_ctrl_phy", "rp_cnp_handled"};
  o.nic_congestion.push_back({"ens1f0np0", growth});
  return o;
}

TEST(NicCongestion, PauseAndCnpsAreTheFabricPushingBack) {
  NicCongestion g;
  g.pause_rx = 100;  // 50/s
  g.cnp_handled = 40;
  auto findings = FindAllCopies(CheckNetwork(CongestionWindow(g)).findings, "network.congestion");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].severity, Severity::kWarning);
  EXPECT_NE(findings[0].summary.find("ens1f0np0"), std::string::npos);
  EXPECT_NE(findings[0].summary.find("50 pause frames/s"), std::string::npos)
      << findings[0].summary;
  EXPECT_NE(findings[0].summary.find("20 CNPs/s"), std::string::npos);
  EXPECT_TRUE(
      FindAllCopies(CheckNetwork(CongestionWindow(g)).findings, "network.drops_buffer").empty());
  g.pause_rx = 2 * static_cast<uint64_t>(kPauseStormPerSecond);
  findings = FindAllCopies(CheckNetwork(CongestionWindow(g)).findings, "network.congestion");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].severity, Severity::kCritical);
}

TEST(NicCongestion, AFewBurstsAndPausesSentAreNotTheFabric) {
  NicCongestion g;
  g.pause_rx = 10;    // 5/s: under the floor
  g.pause_tx = 5000;  // this NIC asking its peer to stop is the host side
  EXPECT_TRUE(
      FindAllCopies(CheckNetwork(CongestionWindow(g)).findings, "network.congestion").empty());
  // No window, nothing judged.
  NetworkObservation o = CongestionWindow(g);
  o.window_seconds.reset();
  g.pause_rx = 100000;
  EXPECT_TRUE(FindAllCopies(CheckNetwork(o).findings, "network.congestion").empty());
}

TEST(NicCongestion, DropsAndAllowancesAreTheHostSide) {
  NicCongestion g;
  g.buffer_drops = 30;
  auto findings = FindAllCopies(CheckNetwork(CongestionWindow(g)).findings, "network.drops_buffer");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].severity, Severity::kWarning);
  EXPECT_NE(findings[0].next.find("ethtool -G"), std::string::npos);
  g = {};
  g.allowance_exceeded = 1000;  // 500/s
  findings = FindAllCopies(CheckNetwork(CongestionWindow(g)).findings, "network.drops_buffer");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].severity, Severity::kCritical);
  EXPECT_NE(findings[0].summary.find("allowance"), std::string::npos);
  g = {};
  g.buffer_drops = kBufferDropsMinCount - 1;
  EXPECT_TRUE(
      FindAllCopies(CheckNetwork(CongestionWindow(g)).findings, "network.drops_buffer").empty());
}

}  // namespace
}  // namespace stallscope
