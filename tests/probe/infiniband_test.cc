#include "probe/infiniband.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/file.h"
#include "core/text.h"

namespace stallscope {
namespace {

const std::string kFixtures = STALLSCOPE_FIXTURES;

// A throwaway tree under /tmp for inputs no real host shows.
class TempTree {
 public:
  TempTree() {
    char pattern[] = "/tmp/stallscope_ib_XXXXXX";
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

TEST(ReadInfinibandDevices, IbHostHasAnActiveHdrPortAndADownRocePort) {
  Result<std::vector<InfinibandDevice>> devices =
      ReadInfinibandDevices(Root(kFixtures + "/ib_host"));
  ASSERT_TRUE(devices.ok()) << devices.status().ToString();
  ASSERT_EQ(devices->size(), 2u);

  const InfinibandDevice& hdr = (*devices)[0];
  EXPECT_EQ(hdr.name, "mlx5_0");
  EXPECT_EQ(hdr.hca_type, "MT4123");
  EXPECT_EQ(hdr.firmware_version, "20.31.1014");
  EXPECT_EQ(hdr.node_guid, "b859:9f03:00d4:1e2a");
  ASSERT_EQ(hdr.ports.size(), 1u);
  const InfinibandPort& p = hdr.ports[0];
  EXPECT_EQ(p.port, 1u);
  ASSERT_TRUE(p.state);
  EXPECT_EQ(p.state->code, 4);
  EXPECT_EQ(p.state->name, "ACTIVE");
  ASSERT_TRUE(p.phys_state);
  EXPECT_EQ(p.phys_state->code, 5);
  EXPECT_EQ(p.phys_state->name, "LinkUp");
  ASSERT_TRUE(p.rate);
  EXPECT_DOUBLE_EQ(p.rate->gbps, 200.0);
  EXPECT_EQ(p.rate->text, "200 Gb/sec (4X HDR)");
  EXPECT_EQ(p.link_layer, "InfiniBand");
  EXPECT_FALSE(p.roce);
  EXPECT_EQ(p.lid, 0x1au);
  // port_xmit_data/port_rcv_data count 4-byte words.
  EXPECT_EQ(p.xmit_bytes, 30864197532ull * 4);
  EXPECT_EQ(p.rcv_bytes, 24691358024ull * 4);
  EXPECT_EQ(p.rcv_errors, 2u);
  EXPECT_EQ(p.symbol_errors, 3u);
  EXPECT_EQ(p.link_downed, 1u);
  EXPECT_EQ(p.xmit_discards, 7u);
  // No gid_attrs netdev for an IB port: found through device/net/ib0 (dev_port 0).
  EXPECT_EQ(p.netdev, "ib0");

  const InfinibandDevice& roce = (*devices)[1];
  EXPECT_EQ(roce.name, "mlx5_1");
  ASSERT_EQ(roce.ports.size(), 1u);
  const InfinibandPort& r = roce.ports[0];
  EXPECT_EQ(r.state->code, 1);
  EXPECT_EQ(r.state->name, "DOWN");
  EXPECT_EQ(r.phys_state->name, "Disabled");
  EXPECT_DOUBLE_EQ(r.rate->gbps, 40.0);
  EXPECT_EQ(r.link_layer, "Ethernet");
  EXPECT_TRUE(r.roce);
  EXPECT_EQ(r.lid, 0u);
  EXPECT_EQ(r.xmit_bytes, 0u);
  EXPECT_EQ(r.netdev, "ens1f1");
}

TEST(ReadInfinibandDevices, NoRdmaIsAnEmptyList) {
  for (const char* host : {"/live_debian12", "/docker_host", "/no_such_host"}) {
    Result<std::vector<InfinibandDevice>> devices = ReadInfinibandDevices(Root(kFixtures + host));
    ASSERT_TRUE(devices.ok()) << host << ": " << devices.status().ToString();
    EXPECT_TRUE(devices->empty()) << host;
  }
}

TEST(ReadInfinibandDevices, LiveHostReads) {
  Result<std::vector<InfinibandDevice>> devices = ReadInfinibandDevices(Root("/"));
  ASSERT_TRUE(devices.ok()) << devices.status().ToString();
  for (const InfinibandDevice& d : *devices) EXPECT_FALSE(d.name.empty());
}

TEST(ReadInfinibandDevices, PortsInNumericOrderAndMissingFilesAreUnknown) {
  TempTree tree;
  tree.Write("sys/class/infiniband/rxe0/ports/10/state", "4: ACTIVE\n");
  tree.Write("sys/class/infiniband/rxe0/ports/2/state", "1: DOWN\n");
  tree.Write("sys/class/infiniband/rxe0/ports/2/link_layer", "Ethernet\n");
  Result<std::vector<InfinibandDevice>> devices = ReadInfinibandDevices(Root(tree.dir()));
  ASSERT_TRUE(devices.ok()) << devices.status().ToString();
  ASSERT_EQ(devices->size(), 1u);
  const InfinibandDevice& d = (*devices)[0];
  EXPECT_EQ(d.firmware_version, "");
  ASSERT_EQ(d.ports.size(), 2u);
  EXPECT_EQ(d.ports[0].port, 2u);
  EXPECT_TRUE(d.ports[0].roce);
  EXPECT_EQ(d.ports[1].port, 10u);
  EXPECT_EQ(d.ports[1].rate, std::nullopt);
  EXPECT_EQ(d.ports[1].lid, std::nullopt);
  EXPECT_EQ(d.ports[1].xmit_bytes, std::nullopt);
  EXPECT_EQ(d.ports[1].netdev, "");
}

TEST(ReadInfinibandDevices, GarbledFilesAreParseErrorsNamingTheFile) {
  {
    TempTree tree;
    tree.Write("sys/class/infiniband/mlx5_0/ports/1/state", "ACTIVE\n");
    Result<std::vector<InfinibandDevice>> devices = ReadInfinibandDevices(Root(tree.dir()));
    ASSERT_FALSE(devices.ok());
    EXPECT_EQ(devices.status().code(), Status::Code::kParseError);
    EXPECT_NE(devices.status().message().find("mlx5_0/ports/1/state:1:"), std::string::npos)
        << devices.status().message();
  }
  {
    TempTree tree;
    // 2^62 words is 2^64 bytes: does not fit, must not wrap.
    tree.Write("sys/class/infiniband/mlx5_0/ports/1/counters/port_rcv_data",
               "4611686018427387904\n");
    Result<std::vector<InfinibandDevice>> devices = ReadInfinibandDevices(Root(tree.dir()));
    ASSERT_FALSE(devices.ok());
    EXPECT_NE(devices.status().message().find("port_rcv_data:1:"), std::string::npos)
        << devices.status().message();
  }
  {
    TempTree tree;
    tree.Write("sys/class/infiniband/mlx5_0/ports/1/counters/symbol_error", "lots\n");
    Result<std::vector<InfinibandDevice>> devices = ReadInfinibandDevices(Root(tree.dir()));
    ASSERT_FALSE(devices.ok());
    EXPECT_NE(devices.status().message().find("symbol_error:1:"), std::string::npos)
        << devices.status().message();
  }
}

TEST(ParseIbPortState, StatesAndPhysicalStates) {
  struct Case {
    const char* text;
    int code;
    const char* name;
  };
  for (const Case& c :
       {Case{"4: ACTIVE\n", 4, "ACTIVE"}, Case{"1: DOWN", 1, "DOWN"}, Case{"2: INIT\n", 2, "INIT"},
        Case{"5: LinkUp\n", 5, "LinkUp"}, Case{"2: Polling\n", 2, "Polling"},
        Case{"4: Phy Test", 4, "Phy Test"}, Case{"0: <unknown>", 0, "<unknown>"}}) {
    Result<IbPortState> state = ParseIbPortState(c.text, "state");
    ASSERT_TRUE(state.ok()) << c.text << ": " << state.status().ToString();
    EXPECT_EQ(state->code, c.code);
    EXPECT_EQ(state->name, c.name);
  }
}

TEST(ParseIbPortState, MalformedNamesTheFile) {
  for (const char* text : {"", "\n", "ACTIVE", "4:", "4:   \n", "x: ACTIVE", "-1: DOWN", "999: BIG",
                           ": ACTIVE", "4: ACTIVE\n5: LinkUp\n"}) {
    Result<IbPortState> state = ParseIbPortState(text, "/sys/class/infiniband/x/ports/1/state");
    ASSERT_FALSE(state.ok()) << "accepted '" << text << "'";
    EXPECT_EQ(state.status().code(), Status::Code::kParseError);
    EXPECT_EQ(state.status().message().rfind("/sys/class/infiniband/x/ports/1/state:", 0), 0u)
        << state.status().message();
  }
}

TEST(ParseIbRate, KernelFormats) {
  struct Case {
    const char* text;
    double gbps;
  };
  for (const Case& c :
       {Case{"100 Gb/sec (4X EDR)\n", 100}, Case{"200 Gb/sec (4X HDR)", 200},
        Case{"2.5 Gb/sec (1X SDR)", 2.5}, Case{"56 Gb/sec (4X FDR)", 56},
        Case{"400 Gb/sec (4X NDR)", 400}, Case{"10 Gb/sec (4X)", 10}, Case{"25 Gb/sec", 25}}) {
    Result<IbRate> rate = ParseIbRate(c.text, "rate");
    ASSERT_TRUE(rate.ok()) << c.text << ": " << rate.status().ToString();
    EXPECT_DOUBLE_EQ(rate->gbps, c.gbps);
    EXPECT_EQ(rate->text, std::string(Trim(c.text)));
  }
}

TEST(ParseIbRate, MalformedNamesTheFile) {
  for (const char* text :
       {"", "100", "100Gb/sec", "fast Gb/sec (4X EDR)", "100 Mb/sec (4X EDR)", "100 Gb/sec 4X EDR",
        "100 Gb/sec (4X EDR", "nan Gb/sec", "inf Gb/sec (4X)", "-100 Gb/sec (4X)", "1e999 Gb/sec",
        "100 Gb/sec (4X EDR)\nmore"}) {
    Result<IbRate> rate = ParseIbRate(text, "/sys/x/rate");
    ASSERT_FALSE(rate.ok()) << "accepted '" << text << "'";
    EXPECT_EQ(rate.status().code(), Status::Code::kParseError);
    EXPECT_EQ(rate.status().message().rfind("/sys/x/rate:", 0), 0u) << rate.status().message();
  }
}

TEST(ParseIbLid, HexSixteenBits) {
  EXPECT_EQ(*ParseIbLid("0x1a\n", "lid"), 26u);
  EXPECT_EQ(*ParseIbLid("0x0", "lid"), 0u);
  EXPECT_EQ(*ParseIbLid("0xffff", "lid"), 0xffffu);
  for (const char* text : {"", "26", "0x", "0x10000", "0xzz", "0x-1", "0x1 0x2"}) {
    Result<uint32_t> lid = ParseIbLid(text, "/sys/x/lid");
    ASSERT_FALSE(lid.ok()) << "accepted '" << text << "'";
    EXPECT_EQ(lid.status().message().rfind("/sys/x/lid:", 0), 0u) << lid.status().message();
  }
}

// The congestion counters: port_xmit_wait in ticks (never scaled), the two
// link error counters, and of hw_counters/ only the four that speak of
// congestion (lifespan is a setting, rx_write_requests traffic).
TEST(ReadInfinibandDevices, CongestionHostHasXmitWaitAndRoceHwCounters) {
  Result<std::vector<InfinibandDevice>> devices =
      ReadInfinibandDevices(Root(kFixtures + "/congestion_host"));
  ASSERT_TRUE(devices.ok()) << devices.status().ToString();
  ASSERT_EQ(devices->size(), 2u);
  const InfinibandPort& ib = (*devices)[0].ports.at(0);
  EXPECT_EQ(ib.xmit_wait, 93456781234u);
  EXPECT_EQ(ib.xmit_bytes, 812345678901u * 4);
  EXPECT_EQ(ib.excessive_buffer_overrun_errors, 0u);
  EXPECT_EQ(ib.local_link_integrity_errors, 0u);
  EXPECT_TRUE(ib.hw_counters.empty());
  const InfinibandPort& roce = (*devices)[1].ports.at(0);
  EXPECT_TRUE(roce.roce);
  EXPECT_EQ(roce.netdev, "ens1f0np0");
  std::vector<std::string> names;
  for (const NicCounter& c : roce.hw_counters)
    names.push_back(c.name + "=" + std::to_string(c.value));
  EXPECT_EQ(names, (std::vector<std::string>{"out_of_buffer=4821", "np_cnp_sent=91234",
                                             "rp_cnp_handled=187654",
                                             "np_ecn_marked_roce_packets=90876"}));
}

TEST(ReadInfinibandDevices, AnXmitWaitOrHwCounterThatIsNotANumberNamesItsFile) {
  TempTree tree;
  tree.Write("sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_wait", "-1\n");
  Result<std::vector<InfinibandDevice>> devices = ReadInfinibandDevices(Root(tree.dir()));
  ASSERT_FALSE(devices.ok());
  EXPECT_NE(devices.status().message().find("counters/port_xmit_wait"), std::string::npos)
      << devices.status().message();
  TempTree other;
  other.Write("sys/class/infiniband/mlx5_0/ports/1/hw_counters/out_of_buffer", "many\n");
  devices = ReadInfinibandDevices(Root(other.dir()));
  ASSERT_FALSE(devices.ok());
  EXPECT_NE(devices.status().message().find("hw_counters/out_of_buffer"), std::string::npos);
}

}  // namespace
}  // namespace stallscope
