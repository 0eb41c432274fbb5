// The network rules of a recorded run: the port counters the recorder keeps
// (record/port_counters.h), their way through the run file, the
// port_errors verdict over the run, and the host rules on the baseline
// snapshot the run file keeps.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "analyze/run/rules.h"
#include "core/file.h"
#include "probe/cgroup.h"
#include "probe/environment.h"
#include "probe/infiniband.h"
#include "probe/net_dev.h"
#include "record/port_counters.h"
#include "render/snapshot.h"
#include "store/run_reader.h"
#include "store/run_writer.h"

namespace stallscope {
namespace {

const std::string kFixtures = STALLSCOPE_FIXTURES;

NetDevCounters Nic(const std::string& name, uint64_t packets, uint64_t rx_errs, uint64_t drops) {
  NetDevCounters c;
  c.name = name;
  c.rx_packets = packets;
  c.tx_packets = packets;
  c.rx_errs = rx_errs;
  c.rx_drop = drops;
  return c;
}

TEST(PortCounterTracker, StoresFirstReadingsChangesAndTheEnd) {
  PortCounterTracker tracker;
  std::vector<PortCounterPoint> rows =
      tracker.Update(0, {Nic("lo", 10, 0, 0), Nic("eth0", 1000, 0, 0)}, {});
  ASSERT_EQ(rows.size(), 1u) << "lo is left out";
  EXPECT_EQ(rows[0].port, "eth0");
  EXPECT_EQ(rows[0].packets, 2000u);
  // Traffic alone is not stored; an error is.
  EXPECT_TRUE(tracker.Update(1, {Nic("eth0", 5000, 0, 0)}, {}).empty());
  rows = tracker.Update(2, {Nic("eth0", 9000, 4, 0)}, {});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].rx_errors, 4u);
  EXPECT_EQ(rows[0].t, 2);
  EXPECT_EQ(tracker.Update(3, {Nic("eth0", 9500, 4, 0)}, {}, /*all=*/true).size(), 1u);

  Result<std::vector<InfinibandDevice>> ib = ReadInfinibandDevices(Root(kFixtures + "/ib_host"));
  ASSERT_TRUE(ib.ok());
  PortCounterTracker rdma;
  rows = rdma.Update(0, {}, *ib);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].port, "mlx5_0:1");
  EXPECT_TRUE(rows[0].rdma);
  EXPECT_EQ(rows[0].symbol_errors, 3u);
  EXPECT_EQ(rows[0].link_downed, 1u);
}

class RunNetworkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/stallscope_runnet_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

// Ten seconds of a run in which eth1 counts CRC errors and mlx5_0:1 flaps
// once, written through the real run file and read back.
TEST_F(RunNetworkTest, PortErrorsOverARunThroughTheRunFile) {
  Result<RunWriter> writer = RunWriter::Create(dir_ + "/run.db", false);
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  RunInfo info;
  info.command = "train";
  ASSERT_TRUE(writer->WriteRunInfo(info).ok());
  PortCounterTracker tracker;
  Result<std::vector<InfinibandDevice>> ib = ReadInfinibandDevices(Root(kFixtures + "/ib_host"));
  ASSERT_TRUE(ib.ok());
  for (int i = 0; i <= 10; ++i) {
    std::vector<InfinibandDevice> rdma = *ib;
    if (i >= 6) *rdma[0].ports[0].link_downed += 1;
    uint64_t packets = 100000ull * static_cast<uint64_t>(i + 1);
    std::vector<NetDevCounters> nics = {
        Nic("eth0", packets, 0, 0),
        Nic("eth1", packets, i >= 3 ? 2u * static_cast<uint64_t>(i) : 0, 0)};
    std::vector<PortCounterPoint> rows = tracker.Update(i, nics, rdma, i == 10);
    TimelineSample sample;
    sample.t = i;
    ASSERT_TRUE(writer->AppendInterval(sample, {}, {}, {}, {}, rows).ok());
  }
  ASSERT_TRUE(writer->Close().ok());
  Result<Timeline> timeline = ReadRun(dir_ + "/run.db");
  ASSERT_TRUE(timeline.ok()) << timeline.status().ToString();
  // eth0: first + last; eth1: first, 3..10 (each a change), last is 10;
  // mlx5_0:1 and mlx5_1:1: first, 6 (mlx5_0 only) and last.
  EXPECT_EQ(timeline->port_counters.size(), 2u + 9u + 3u + 2u);

  std::vector<Finding> findings = CheckRunNetwork(*timeline).findings;
  ASSERT_EQ(findings.size(), 2u);
  const Finding& nic = findings[0];
  EXPECT_EQ(nic.id, "network.port_errors");
  EXPECT_NE(nic.summary.find("eth1 counted 20 errors"), std::string::npos) << nic.summary;
  EXPECT_NE(nic.summary.find("in 10.0 s"), std::string::npos) << nic.summary;
  EXPECT_EQ(nic.severity, Severity::kWarning);  // 20 of 2M packets
  const Finding& flap = findings[1];
  EXPECT_NE(flap.summary.find("mlx5_0:1"), std::string::npos);
  EXPECT_EQ(flap.severity, Severity::kCritical);

  // The same run's findings go through CheckRun with the others.
  std::vector<Finding> all = CheckRun(*timeline).findings;
  EXPECT_EQ(std::count_if(all.begin(), all.end(),
                          [](const Finding& f) { return f.id == "network.port_errors"; }),
            2);
}

TEST(RunNetwork, QuietRunAndNoCountersSayNothing) {
  Timeline t;
  EXPECT_TRUE(CheckRunNetwork(t).findings.empty());
  PortCounterTracker tracker;
  for (int i = 0; i <= 5; ++i) {
    for (PortCounterPoint& p : tracker.Update(
             i, {Nic("eth0", 1000ull * static_cast<uint64_t>(i + 1), 7, 3)}, {}, i == 5)) {
      t.port_counters.push_back(p);
    }
  }
  EXPECT_EQ(t.port_counters.size(), 2u);
  EXPECT_TRUE(CheckRunNetwork(t).findings.empty())
      << "errors counted before the run are not the run's";
}

// The baseline as `run` writes it (SnapshotToJson of a snapshot of the
// bridge_container fixture) gives the host rules what they need.
TEST(RunNetwork, HostRulesOnTheBaselineSnapshot) {
  Root root(kFixtures + "/bridge_container");
  Snapshot s;
  InterfaceAddresses a;
  a["eth0"].push_back({IpAddress::Family::kIpv4, "172.17.0.5", 16});
  Result<std::vector<NetInterface>> interfaces = ReadInterfaces(root, a);
  ASSERT_TRUE(interfaces.ok());
  s.interfaces = *interfaces;
  s.container = ReadContainerInfo(root);
  std::string env = std::string("WORLD_SIZE=16") + '\0' + "LOCAL_WORLD_SIZE=8" + '\0' +
                    "NCCL_SOCKET_IFNAME=ib0" + '\0';
  Result<TrainingEnvironment> parsed = ParseEnviron(env, "test");
  ASSERT_TRUE(parsed.ok());
  s.environment = *parsed;
  Result<NetworkObservation> o = NetworkFromBaseline(SnapshotToJson(s).dump());
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  ASSERT_EQ(o->interfaces.size(), 2u);
  EXPECT_EQ(o->interfaces[0].kind, InterfaceKind::kVeth);
  ASSERT_EQ(o->interfaces[0].addresses.size(), 1u);
  EXPECT_EQ(o->interfaces[0].addresses[0].address, "172.17.0.5");
  EXPECT_EQ(o->interfaces[0].addresses[0].prefix_length, 16);
  EXPECT_TRUE(o->container.in_container);
  EXPECT_EQ(o->environment.WorldSize(), 16);

  std::vector<Finding> findings = CheckNetwork(*o).findings;
  std::vector<std::string> ids;
  for (const Finding& f : findings) ids.push_back(f.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"network.container_bridge", "network.wrong_interface"}));
  EXPECT_EQ(findings[0].severity, Severity::kCritical);

  // RDMA ports survive the trip too: ib_host with IB disabled.
  Snapshot ib;
  Result<std::vector<InfinibandDevice>> devices =
      ReadInfinibandDevices(Root(kFixtures + "/ib_host"));
  ASSERT_TRUE(devices.ok());
  ib.infiniband = *devices;
  ib.environment.variables = {{"NCCL_IB_DISABLE", "1"}};
  o = NetworkFromBaseline(SnapshotToJson(ib).dump());
  ASSERT_TRUE(o.ok());
  ASSERT_EQ(o->infiniband.size(), 2u);
  EXPECT_EQ(o->infiniband[0].ports[0].state->code, 4);
  findings = CheckNetwork(*o).findings;
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].id, "network.rdma_unused");
}

TEST(RunNetwork, BaselineThatIsNotJsonOrOddlyTyped) {
  Result<NetworkObservation> o = NetworkFromBaseline("{not json");
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.status().code(), Status::Code::kParseError);
  o = NetworkFromBaseline(
      R"({"interfaces": [1, {"name": 5}, {"name": "eth0", "mtu": "big", "addresses": [7, "x"]}],
          "infiniband": {"no": "array"}, "environment": {"A": 1}, "container": []})");
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  ASSERT_EQ(o->interfaces.size(), 1u);
  EXPECT_EQ(o->interfaces[0].mtu_bytes, std::nullopt);
  EXPECT_TRUE(o->interfaces[0].addresses.empty());
  EXPECT_TRUE(o->environment.variables.empty());
}

}  // namespace
}  // namespace stallscope
