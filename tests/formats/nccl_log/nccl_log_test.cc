// The NCCL log parser and its findings, on fixture logs written from NCCL's
// own message formats (tests/fixtures/nccl_logs/, one per NCCL generation).
#include "formats/nccl_log/nccl_log.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analyze/nccl_log/rules.h"
#include "core/file.h"
#include "finding_matchers.h"

namespace stallscope {
namespace {

std::string Fixture(const std::string& name) {
  Result<std::string> text = ReadFile(std::string(STALLSCOPE_FIXTURES) + "/nccl_logs/" + name);
  EXPECT_TRUE(text.ok()) << text.status().message();
  return text.ok() ? *text : "";
}

std::string EvidenceString(const Finding& f, std::string_view name) {
  for (const Evidence& e : f.evidence) {
    if (e.name == name) {
      if (auto* s = std::get_if<std::string>(&e.value)) return *s;
      if (auto* i = std::get_if<int64_t>(&e.value)) return std::to_string(*i);
      if (auto* b = std::get_if<bool>(&e.value)) return *b ? "true" : "false";
    }
  }
  return "<missing " + std::string(name) + ">";
}

const NcclProcess* ProcessByPid(const NcclLogSummary& log, int64_t pid) {
  for (const NcclProcess& p : log.processes) {
    if (p.pid == pid) return &p;
  }
  return nullptr;
}

TEST(NcclLinePrefix, InfoWarnTraceCallAndLauncherTags) {
  auto info = ParseNcclLinePrefix("dgx1:20411:20450 [3] NCCL INFO Connected all rings");
  ASSERT_TRUE(info);
  EXPECT_EQ(info->host, "dgx1");
  EXPECT_EQ(info->pid, 20411);
  EXPECT_EQ(info->tid, 20450);
  EXPECT_EQ(info->cuda_dev, 3);
  EXPECT_EQ(info->level, NcclLinePrefix::Level::kInfo);
  EXPECT_EQ(info->message, "Connected all rings");

  auto warn = ParseNcclLinePrefix(
      "[2025-10-14 09:12:44] node-y:8101:8101 [0] bootstrap.cc:763 (bootstrapInit) NCCL WARN "
      "Bootstrap: remote process exited");
  ASSERT_TRUE(warn);
  EXPECT_EQ(warn->host, "node-y");
  EXPECT_EQ(warn->level, NcclLinePrefix::Level::kWarn);
  EXPECT_EQ(warn->message, "Bootstrap: remote process exited");

  auto trace =
      ParseNcclLinePrefix("h:1:2 [1] 1234.567890 ncclProxyProgress:120 NCCL TRACE Received data");
  ASSERT_TRUE(trace);
  EXPECT_EQ(trace->level, NcclLinePrefix::Level::kTrace);
  EXPECT_EQ(trace->cuda_dev, 1);

  auto call = ParseNcclLinePrefix("h:1:2 NCCL CALL ncclCommInitRank(0x1, 4, 0x2, 0, 0)");
  ASSERT_TRUE(call);
  EXPECT_EQ(call->level, NcclLinePrefix::Level::kCall);
  EXPECT_EQ(call->cuda_dev, -1);

  auto tagged = ParseNcclLinePrefix("[default1]:h100-07:30012:30061 [1] NCCL INFO Trees [0] x");
  ASSERT_TRUE(tagged);
  EXPECT_EQ(tagged->host, "h100-07");
  auto slurm = ParseNcclLinePrefix("3: gpu-b:3877:3940 [0] NCCL INFO Using network IB");
  ASSERT_TRUE(slurm);
  EXPECT_EQ(slurm->host, "gpu-b");

  EXPECT_FALSE(ParseNcclLinePrefix("NCCL version 2.10.3+cuda11.4"));
  EXPECT_FALSE(ParseNcclLinePrefix("RuntimeError: NCCL error in: x.cpp:1, unhandled system error"));
  EXPECT_FALSE(ParseNcclLinePrefix("epoch 1 NCCL INFO-like text without a prefix"));
  EXPECT_FALSE(ParseNcclLinePrefix(""));
}

// The fast prefix reader takes the common shape and gives up on the rest;
// where it answers, the general reader must answer the same.
TEST(NcclLinePrefix, FastPathAgreesWithTheGeneralOne) {
  const std::vector<std::string> accepted = {
      "node007:4115:4175 [3] NCCL INFO cudaDriverVersion 12020",
      "h:1:2 [-1] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via NET/Socket/0",
      "h:1:2 [1048575] NCCL WARN Connect to 1.2.3.4<5> failed : Connection refused",
      "h:1:2 [0] NCCL INFO",  // an empty message
      "x:1:999999999999999999 [0] NCCL INFO eighteen digits",
  };
  for (const std::string& line : accepted) {
    NcclLinePrefix fast;
    size_t at = FastNcclLinePrefix(line, &fast);
    ASSERT_GT(at, 0u) << line;
    std::optional<NcclLinePrefix> general = ParseNcclLinePrefix(line);
    ASSERT_TRUE(general) << line;
    EXPECT_EQ(fast.host, general->host) << line;
    EXPECT_EQ(fast.pid, general->pid) << line;
    EXPECT_EQ(fast.tid, general->tid) << line;
    EXPECT_EQ(fast.cuda_dev, general->cuda_dev) << line;
    EXPECT_EQ(fast.level, general->level) << line;
    EXPECT_EQ(fast.message, general->message) << line;
    EXPECT_EQ(line.substr(at), general->message) << line;
  }
  NcclLinePrefix fast;
  // A host name has no ':': what is glued before one is a launcher's, and
  // the general reader strips it.
  EXPECT_EQ(FastNcclLinePrefix("a:b:1:2 [1] NCCL INFO x", &fast), 0u);
  // NCCL cuts its host names at '.': one with a '.' is the general reader's.
  EXPECT_EQ(FastNcclLinePrefix("gpu-a.cluster:1:2 [0] NCCL INFO Using network IB", &fast), 0u);
  // So is a console's repeat after " | ".
  EXPECT_EQ(FastNcclLinePrefix("h:1:2 [0] NCCL INFO a | h:1:2 [0] NCCL INFO a", &fast), 0u);
  auto glued = ParseNcclLinePrefix("a:b:1:2 [1] NCCL INFO x");
  ASSERT_TRUE(glued);
  EXPECT_EQ(glued->host, "b");
  // The rest of a buffer: the prefix stops at the line's end.
  EXPECT_EQ(FastNcclLinePrefix("host\nh:1:2 [0] NCCL INFO x", &fast), 0u);
  EXPECT_EQ(FastNcclLinePrefix("h:1:2\n[0] NCCL INFO x", &fast), 0u);
  // Other shapes are left to the general reader (some of them it accepts).
  for (const char* other :
       {"[default0]:h:1:2 [0] NCCL INFO x",         // a launcher's tag
        "h:1:2 [0] misc/socket.cc:49 NCCL WARN x",  // WARN's file:line
        "h:1:2 [0] 12.5 init.cc:1 NCCL TRACE x",    // TRACE
        "h:1:2 NCCL CALL ncclAllReduce",            // no [dev]
        "h:1:2 [1048576] NCCL INFO x",              // a device number past the cap
        "x:1:9999999999999999999 [0] NCCL INFO x",  // 19 digits
        "x::2 [0] NCCL INFO x", ":1:2 [0] NCCL INFO x", "x:1:2  [0] NCCL INFO x",
        "x:1:2 [0] NCCL INFOx", "x:1:2 [0] NCCL INFO\r", "epoch 1 NCCL INFO x", ""}) {
    EXPECT_EQ(FastNcclLinePrefix(other, &fast), 0u) << other;
  }
  EXPECT_TRUE(ParseNcclLinePrefix("[default0]:h:1:2 [0] NCCL INFO x"));
  EXPECT_TRUE(ParseNcclLinePrefix("h:1:2 [0] misc/socket.cc:49 NCCL WARN x"));
}

// The backward reader (behind a launcher's prefix) reads its numbers eight
// bytes and its host sixteen bytes at a time where the line has them before
// the marker: every length of host, pid and tid, behind prefixes long and
// short, must read as the general reader reads it.
TEST(NcclLinePrefix, BackwardReaderAgreesWithTheGeneralOneAtEveryLength) {
  const std::vector<std::string> prefixes = {
      "", "3: ", "[1,5]<stdout>:", "2024-03-04 05:06:07.123456 [1,123]<stdout>:"};
  const std::vector<std::string> hosts = {"h",
                                          "node7",
                                          "gpu-a_01",
                                          "abcdefghijklmno",
                                          "abcdefghijklmnop",
                                          "ABCDEFGHIJKLMNOPQ",
                                          "ip-10-0-1-23_compute-node-000123",
                                          "x9-Y_z"};
  const std::vector<std::string> numbers = {
      "1", "12", "1234", "1234567", "12345678", "123456789", "100000000000000000"};
  size_t read = 0;
  for (const std::string& prefix : prefixes) {
    for (const std::string& host : hosts) {
      for (const std::string& pid : numbers) {
        for (const std::string& tid : {std::string("7"), std::string("4175"), pid}) {
          const std::string line = prefix + host + ":" + pid + ":" + tid + " [3] NCCL INFO x y";
          const size_t marker = line.find("NCCL INFO");
          NcclLinePrefix back;
          std::optional<NcclLinePrefix> general = ParseNcclLinePrefix(line);
          ASSERT_TRUE(general) << line;
          if (BackwardNcclLinePrefix(line, marker, &back) == 0) continue;
          ++read;
          EXPECT_EQ(back.host, general->host) << line;
          EXPECT_EQ(back.host, host) << line;
          EXPECT_EQ(back.host_at, prefix.size()) << line;
          EXPECT_EQ(back.pid, general->pid) << line;
          EXPECT_EQ(back.tid, general->tid) << line;
          EXPECT_EQ(back.pid, std::stoll(pid)) << line;
          EXPECT_EQ(back.cuda_dev, 3) << line;
          EXPECT_EQ(back.message, "x y") << line;
        }
      }
    }
  }
  // Only a prefix glued to the host ("[1,5]<stdout>:h" reads back to 'h'
  // alone, as NCCL's host) or one that begins with a digit is left over.
  EXPECT_GE(read, prefixes.size() * hosts.size() * 7 * 3 - hosts.size() * 7 * 3);
  NcclLinePrefix back;
  // Host bytes end at any other byte, also sixteen and more bytes back.
  const std::string slash = "xxxxxxxxxxxxxxxxxxxxxx/abcdefghijklmnopqrstu:1:2 [0] NCCL INFO m";
  EXPECT_GT(BackwardNcclLinePrefix(slash, slash.find("NCCL"), &back), 0u);
  EXPECT_EQ(back.host, "abcdefghijklmnopqrstu");
  const std::string dot = "xxxxxxxxxxxxxxxxxxxxxx.abcdefghijklmnopqrstu:1:2 [0] NCCL INFO m";
  EXPECT_EQ(BackwardNcclLinePrefix(dot, dot.find("NCCL"), &back), 0u);  // NCCL cuts hosts at '.'
  // NCCL's own '|' is read back; a console's repeat after " | " is left to
  // the general reader, which cuts it.
  const std::string own =
      "[1,0]<stdout>:node4:4070:4130 [6] NCCL INFO threadThresholds 8/8/64 | 512/8/64 | 512";
  ASSERT_GT(BackwardNcclLinePrefix(own, own.find("NCCL"), &back, true), 0u);
  EXPECT_EQ(back.message, "threadThresholds 8/8/64 | 512/8/64 | 512");
  const std::string repeat =
      "[1,0]<stdout>:node4:4070:4130 [6] NCCL INFO Using network IB | 2024-03-04 05:06:07 "
      "node4:4070:4130 [6] NCCL INFO Using network IB";
  EXPECT_EQ(BackwardNcclLinePrefix(repeat, repeat.find("NCCL"), &back, true), 0u);
  std::optional<NcclLinePrefix> cut = ParseNcclLinePrefix(repeat);
  ASSERT_TRUE(cut);
  EXPECT_EQ(cut->message, "Using network IB");
}

// The fast reader (a line that starts with NCCL's own prefix) checks the
// host's bytes sixteen at a time: every length, and a byte NCCL's host
// names never hold at every place, is read as byte-by-byte reading would.
TEST(NcclLinePrefix, FastReaderChecksEveryHostByte) {
  for (size_t length = 1; length <= 20; ++length) {
    std::string host;
    for (size_t i = 0; i < length; ++i) host += "aZ9-_"[i % 5];
    const std::string tail = ":4098:4158 [2] NCCL INFO Using network IB";
    NcclLinePrefix fast;
    const std::string line = host + tail;
    ASSERT_GT(FastNcclLinePrefix(line, &fast), 0u) << host;
    EXPECT_EQ(fast.host, host);
    EXPECT_EQ(fast.pid, 4098);
    EXPECT_EQ(fast.tid, 4158);
    for (size_t at = 0; at < length; ++at) {
      for (char bad : {'.', '/', '@', '\x80', '`', '{'}) {
        std::string other = host;
        other[at] = bad;
        EXPECT_EQ(FastNcclLinePrefix(other + tail, &fast), 0u) << other;
      }
    }
  }
  NcclLinePrefix fast;
  EXPECT_EQ(FastNcclLinePrefix("h:1:2 [0] NCCL", &fast), 0u);  // shorter than sixteen bytes
  EXPECT_GT(FastNcclLinePrefix("h:1:2 [0] NCCL INFO", &fast), 0u);
}

TEST(NcclInterfaces, Ipv4Ipv6AliasesAndIbDevices) {
  auto two = ParseNcclInterfaces(" [0]eth0:10.0.0.1<0> [1]ib0:192.168.1.1<0>");
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0], (NcclInterface{"eth0", "10.0.0.1"}));
  EXPECT_EQ(two[1], (NcclInterface{"ib0", "192.168.1.1"}));
  auto v6 = ParseNcclInterfaces(" [0]veth0:fe80::e866:19ff:fe1e:a688%veth0<0>");
  ASSERT_EQ(v6.size(), 1u);
  EXPECT_EQ(v6[0].name, "veth0");
  EXPECT_EQ(v6[0].address, "fe80::e866:19ff:fe1e:a688%veth0");
  auto alias = ParseNcclInterfaces(" eno1:avahi:10.1.2.3<0>");
  ASSERT_EQ(alias.size(), 1u);
  EXPECT_EQ(alias[0], (NcclInterface{"eno1:avahi", "10.1.2.3"}));
  auto ib = ParseNcclInterfaces(" [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; ");
  ASSERT_EQ(ib.size(), 2u);
  EXPECT_EQ(ib[1].name, "mlx5_1:1/RoCE");
  EXPECT_TRUE(ib[1].address.empty());
  EXPECT_TRUE(ParseNcclInterfaces("").empty());
  // A redacted address is what the log shows, before the port; an empty one stays empty.
  EXPECT_EQ(ParseNcclInterfaces(" eth0:<ip><0>")[0], (NcclInterface{"eth0", "<ip>"}));
  EXPECT_EQ(ParseNcclInterfaces(" [0]eth0:<ip_addr><0>")[0], (NcclInterface{"eth0", "<ip_addr>"}));
  EXPECT_EQ(ParseNcclInterfaces(" eth0:<ip>")[0], (NcclInterface{"eth0", "<ip>"}));
  EXPECT_EQ(ParseNcclInterfaces(" [0]eth0:<0>")[0], (NcclInterface{"eth0", ""}));
  EXPECT_EQ(ParseNcclVersion("2.18.3+cuda12.2\r"), "2.18.3+cuda12.2");
  EXPECT_EQ(ParseNcclVersion("unknown"), "");
}

TEST(NcclLog, V210SingleNodeHealthy) {
  NcclLogSummary log = ParseNcclLog(Fixture("v2_10_single_node_healthy.log"));
  ASSERT_EQ(log.processes.size(), 4u);
  ASSERT_EQ(log.ranks.size(), 4u);
  EXPECT_EQ(NcclJobNodes(log), 1);
  // The bare version line follows pid 20411's lines and goes to it.
  EXPECT_EQ(ProcessByPid(log, 20411)->version, "2.10.3+cuda11.4");
  EXPECT_TRUE(log.unattributed_versions.empty());
  const NcclProcess& p = log.processes[0];
  ASSERT_EQ(p.bootstrap.size(), 1u);
  EXPECT_EQ(p.bootstrap[0], (NcclInterface{"enp1s0f0", "10.10.1.11"}));
  EXPECT_TRUE(p.ib_no_device);
  EXPECT_EQ(p.network, "Socket");
  uint64_t p2p = 0;
  for (const NcclRank& r : log.ranks) {
    EXPECT_EQ(r.init_completed, 1u);
    EXPECT_EQ(r.nranks, 4);
    EXPECT_EQ(r.transports.net_socket + r.transports.net_ib, 0u);
    p2p += r.transports.p2p;
  }
  EXPECT_EQ(p2p, 11u);
  EXPECT_EQ(log.ranks[3].rank, 3);
  ASSERT_EQ(log.rings.size(), 2u);
  EXPECT_EQ(log.rings[0], "00/02: 0 1 2 3");
  EXPECT_EQ(log.ranks[0].trees, "[0] 1/-1/-1->0->-1 [1] 1/-1/-1->0->-1");
  // One host, sockets never used between hosts: nothing to report, even
  // with RDMA ports on this host.
  EXPECT_TRUE(CheckNcclLog(log, HostRdmaPorts{"dgx1", {"mlx5_0:1 InfiniBand"}}).findings.empty());
}

TEST(NcclLog, V214DockerBridgeTimeouts) {
  NcclLogSummary log = ParseNcclLog(Fixture("v2_14_multinode_docker_bridge.log"));
  EXPECT_EQ(NcclJobNodes(log), 2);
  EXPECT_EQ(log.ranks.size(), 4u);
  EXPECT_EQ(log.warn_lines, 4u);
  EXPECT_EQ(log.connect_retries, 2u);
  EXPECT_EQ(log.system_errors, 1u);
  ASSERT_EQ(log.peer_failures.size(), 2u);  // the proxy WARN names no peer
  EXPECT_EQ(log.peer_failures[0].peer, "172.17.0.2<41527>");
  EXPECT_EQ(log.peer_failures[0].reason, "Connection timed out");
  EXPECT_EQ(log.peer_failures[0].count, 2u);
  EXPECT_EQ(log.peer_failures[0].first_seen_by, "trainer-1:59");
  EXPECT_EQ(log.peer_failures[1].peer, "172.17.0.3<39211>");

  auto findings = CheckNcclLog(log, HostRdmaPorts{"trainer-0", {"mlx5_0:1 InfiniBand"}}).findings;
  const Finding* wrong = Find(findings, "network.wrong_interface");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->severity, Severity::kCritical);
  EXPECT_EQ(EvidenceString(*wrong, "kind"), "Docker default bridge address");
  EXPECT_NE(EvidenceString(*wrong, "processes").find("trainer-0:61"), std::string::npos);
  const Finding* connect = Find(findings, "network.connect_failed");
  ASSERT_TRUE(connect);
  EXPECT_EQ(connect->severity, Severity::kCritical);
  EXPECT_NE(EvidenceString(*connect, "peers").find("172.17.0.2<41527> (Connection timed out, 2x)"),
            std::string::npos);
  EXPECT_EQ(EvidenceString(*connect, "docker_bridge_peers"), "2");
  EXPECT_NE(connect->next.find("--network host"), std::string::npos);
  const Finding* init = Find(findings, "distributed.init_incomplete");
  ASSERT_TRUE(init);
  EXPECT_EQ(EvidenceString(*init, "incomplete_ranks"), "4");
  // WARNs explain it (not a cut log), and a critical cause is there: the
  // init that stopped is its consequence, no longer critical beside it.
  EXPECT_EQ(init->severity, Severity::kInfo);
  EXPECT_FALSE(EvidenceString(*init, "consequence_of").empty());
  // This host (trainer-0) has Active RDMA ports, NCCL found none: the
  // container does not see them.
  const Finding* rdma = Find(findings, "network.rdma_unused");
  ASSERT_TRUE(rdma);
  EXPECT_NE(EvidenceString(*rdma, "why").find("/dev/infiniband"), std::string::npos);
  EXPECT_EQ(EvidenceString(*rdma, "processes_on_sockets"), "trainer-0:61, trainer-0:62");
  // Without the host's ports the log alone does not show RDMA.
  EXPECT_FALSE(Find(CheckNcclLog(log, std::nullopt).findings, "network.rdma_unused"));
}

TEST(NcclLog, V218MultiNodeIbHealthy) {
  NcclLogSummary log = ParseNcclLog(Fixture("v2_18_multinode_ib_healthy.log"));
  EXPECT_EQ(NcclJobNodes(log), 2);
  ASSERT_EQ(log.processes.size(), 4u);
  for (const NcclProcess& p : log.processes) {
    EXPECT_EQ(p.version, "2.18.3+cuda12.2") << p.Name();
    EXPECT_EQ(p.cuda_driver, 12020);
    EXPECT_EQ(p.network, "IB");
    ASSERT_EQ(p.ib_devices.size(), 2u);
    EXPECT_EQ(p.ib_devices[0].name, "mlx5_0:1/IB");
    ASSERT_EQ(p.ib_oob.size(), 1u);
    EXPECT_EQ(p.ib_oob[0].name, "ens1f0np0");
  }
  uint64_t ib = 0, gdr = 0, p2p = 0;
  for (const NcclRank& r : log.ranks) {
    EXPECT_EQ(r.init_started, 1u);
    EXPECT_EQ(r.init_completed, 1u);
    ib += r.transports.net_ib;
    gdr += r.transports.gdrdma;
    p2p += r.transports.p2p;
  }
  EXPECT_EQ(ib, 8u);
  EXPECT_EQ(gdr, 8u);
  EXPECT_EQ(p2p, 4u);
  EXPECT_TRUE(CheckNcclLog(log, HostRdmaPorts{"gpu-a", {"mlx5_0:1 InfiniBand"}}).findings.empty());
}

TEST(NcclLog, V218SocketWhileIbFound) {
  NcclLogSummary log = ParseNcclLog(Fixture("v2_18_socket_while_ib_found.log"));
  auto findings = CheckNcclLog(log, std::nullopt).findings;
  ASSERT_EQ(findings.size(), 1u) << findings[0].id;
  const Finding& f = findings[0];
  EXPECT_EQ(f.id, "network.rdma_unused");
  EXPECT_EQ(f.severity, Severity::kWarning);  // 2 hosts: RDMA is a must from 8
  EXPECT_EQ(EvidenceString(f, "socket_connections"), "8");
  EXPECT_EQ(EvidenceString(f, "rdma_devices_in_log"), "mlx5_0:1/IB, mlx5_1:1/IB");
  EXPECT_EQ(EvidenceString(f, "process_count"), "4");
}

TEST(NcclLog, V221VersionMismatchAndInitHang) {
  NcclLogSummary log = ParseNcclLog(Fixture("v2_21_version_mismatch_init_hang.log"));
  EXPECT_EQ(ProcessByPid(log, 9120)->version, "2.21.5+cuda12.4");
  EXPECT_EQ(ProcessByPid(log, 5531)->version, "2.19.3+cuda12.2");
  EXPECT_EQ(ProcessByPid(log, 9120)->nnodes, 2);
  EXPECT_EQ(ProcessByPid(log, 5530)->ib_devices[0].name, "mlx5_2:1/RoCE");
  EXPECT_EQ(log.timeouts, 1u);
  EXPECT_EQ(log.connect_retries, 2u);
  EXPECT_EQ(log.connect_retry_reason, "Connection refused");
  ASSERT_EQ(log.algorithms.size(), 3u);
  EXPECT_EQ(log.algorithms[0].text, "env NCCL_ALGO=Ring");
  EXPECT_EQ(log.algorithms[1].text, "Ring/Simple");
  EXPECT_EQ(log.algorithms[1].count, 2u);
  EXPECT_EQ(log.algorithms[2].text, "Ring/LL");

  auto findings = CheckNcclLog(log, std::nullopt).findings;
  const Finding* version = Find(findings, "distributed.nccl_version_mismatch");
  ASSERT_TRUE(version);
  EXPECT_EQ(version->severity, Severity::kCritical);
  EXPECT_EQ(EvidenceString(*version, "distinct_versions"), "2");
  EXPECT_NE(EvidenceString(*version, "versions").find("2.19.3+cuda12.2 on gpu-d:5530, gpu-d:5531"),
            std::string::npos);
  const Finding* init = Find(findings, "distributed.init_incomplete");
  ASSERT_TRUE(init);
  // The other ranks finished and wait: a consequence of the mismatch.
  EXPECT_EQ(init->severity, Severity::kInfo);
  EXPECT_EQ(EvidenceString(*init, "consequence_of"), "distributed.nccl_version_mismatch");
  EXPECT_NE(EvidenceString(*version, "consequences").find("distributed.init_incomplete"),
            std::string::npos);
  EXPECT_EQ(EvidenceString(*init, "ranks"), "gpu-d:5530 [0] rank 2, gpu-d:5531 [1] rank 3");
  EXPECT_EQ(EvidenceString(*init, "completed_ranks"), "2");
  // INFO retries alone are not a failed connection.
  EXPECT_FALSE(Find(findings, "network.connect_failed"));
}

TEST(NcclLog, V224SingleNodeLoopbackNvlsTimings) {
  NcclLogSummary log = ParseNcclLog(Fixture("v2_24_single_node_lo_nvls.log"));
  ASSERT_EQ(log.ranks.size(), 2u);
  EXPECT_EQ(log.processes[0].host, "h100-07");
  EXPECT_EQ(log.processes[0].version, "2.24.3+cuda12.6");
  EXPECT_EQ(log.processes[0].socket_ifname, "lo");
  ASSERT_TRUE(log.ranks[0].init_seconds);
  EXPECT_DOUBLE_EQ(*log.ranks[0].init_seconds, 0.94);
  EXPECT_DOUBLE_EQ(*log.ranks[1].init_seconds, 0.97);
  EXPECT_EQ(log.ranks[0].transports.nvls_channels, 16u);
  EXPECT_EQ(log.ranks[0].transports.p2p, 2u);
  ASSERT_EQ(log.algorithms.size(), 2u);
  EXPECT_EQ(log.algorithms[0].text, "AllReduce NVLS/Simple");
  EXPECT_EQ(log.algorithms[0].count, 2u);
  EXPECT_EQ(log.algorithms[1].text, "AllGather RING/LL128");
  auto findings = CheckNcclLog(log, std::nullopt).findings;
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].id, "network.wrong_interface");
  EXPECT_EQ(findings[0].severity, Severity::kInfo);  // one host: harmless today
  EXPECT_EQ(EvidenceString(findings[0], "interface"), "lo:127.0.0.1");
  EXPECT_EQ(EvidenceString(findings[0], "used_for"), "NET/Socket, bootstrap");
}

TEST(NcclLog, V228MultiNodeLoopbackRefused) {
  NcclLogSummary log = ParseNcclLog(Fixture("v2_28_multinode_lo_refused.log"));
  EXPECT_EQ(NcclJobNodes(log), 2);
  EXPECT_EQ(log.remote_errors, 1u);  // PyTorch's error line (NCCL 2.28 WARNs no such words)
  auto findings = CheckNcclLog(log, std::nullopt).findings;
  const Finding* wrong = Find(findings, "network.wrong_interface");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->severity, Severity::kCritical);
  EXPECT_EQ(EvidenceString(*wrong, "kind"), "loopback");
  const Finding* connect = Find(findings, "network.connect_failed");
  ASSERT_TRUE(connect);
  EXPECT_EQ(EvidenceString(*connect, "peers"), "127.0.0.1<39321> (Connection refused)");
  EXPECT_EQ(EvidenceString(*connect, "first_seen_by"), "node-y:8101");
  const Finding* init = Find(findings, "distributed.init_incomplete");
  ASSERT_TRUE(init);
  EXPECT_EQ(EvidenceString(*init, "incomplete_ranks"), "2");
}

// Cut anywhere, a log parses to the same summary: chunk boundaries mid-line.
TEST(NcclLog, ChunkedFeedEqualsWhole) {
  for (const char* name :
       {"v2_10_single_node_healthy.log", "v2_14_multinode_docker_bridge.log",
        "v2_21_version_mismatch_init_hang.log", "v2_24_single_node_lo_nvls.log"}) {
    std::string text = Fixture(name);
    NcclLogSummary whole = ParseNcclLog(text);
    for (size_t step : {1u, 7u, 64u, 4093u}) {
      NcclLogParser parser;
      for (size_t at = 0; at < text.size(); at += step) {
        parser.Feed(std::string_view(text).substr(at, step));
      }
      NcclLogSummary chunked = parser.Finish();
      EXPECT_EQ(chunked.nccl_lines, whole.nccl_lines) << name << " step " << step;
      EXPECT_EQ(chunked.ranks.size(), whole.ranks.size()) << name;
      EXPECT_EQ(chunked.peer_failures.size(), whole.peer_failures.size()) << name;
      EXPECT_EQ(chunked.rings, whole.rings) << name;
      EXPECT_EQ(chunked.bytes, text.size());
      EXPECT_EQ(CheckNcclLog(chunked, std::nullopt).findings.size(),
                CheckNcclLog(whole, std::nullopt).findings.size())
          << name << " step " << step;
    }
  }
}

TEST(NcclLog, MemoryStaysBoundedAndLongLinesAreCut) {
  // More processes than the cap: the rest are counted, not kept.
  std::string text;
  for (size_t pid = 1; pid <= kNcclMaxProcesses + 100; ++pid) {
    text += "h:" + std::to_string(pid) + ":1 [0] NCCL INFO Using network Socket\n";
  }
  // More distinct warnings than the cap.
  for (size_t i = 0; i < kNcclMaxWarnings + 10; ++i) {
    text += "h:1:1 [0] x.cc:1 NCCL WARN problem number " + std::to_string(i) + "\n";
  }
  // A 100 KB line holding NCCL only far past the cut, and one holding it early.
  text += std::string(100000, 'x') + " NCCL INFO late\n";
  text += "h:1:1 [0] NCCL INFO Trees " + std::string(100000, '1') + "\n";
  text += "h:1:1 [0] NCCL INFO NCCL version 2.18.3+cuda12.2";  // no final newline
  NcclLogSummary log = ParseNcclLog(text);
  EXPECT_EQ(log.processes.size(), kNcclMaxProcesses);
  EXPECT_EQ(log.warnings.size(), kNcclMaxWarnings);
  EXPECT_GE(log.dropped, 100u + 10u + 2u);
  EXPECT_EQ(log.processes[0].version, "2.18.3+cuda12.2");
  EXPECT_EQ(log.ranks[0].trees.size(), 256u);
}

TEST(NcclLog, CrlfAndEmptyInput) {
  NcclLogSummary log = ParseNcclLog(
      "a:1:1 [0] NCCL INFO Using network IB\r\n"
      "a:1:1 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\r\n");
  ASSERT_EQ(log.processes.size(), 1u);
  EXPECT_EQ(log.processes[0].network, "IB");
  EXPECT_EQ(log.processes[0].version, "2.21.5+cuda12.4");
  NcclLogSummary empty = ParseNcclLog("");
  EXPECT_EQ(empty.nccl_lines, 0u);
  EXPECT_TRUE(CheckNcclLog(empty, std::nullopt).findings.empty());
}

}  // namespace
}  // namespace stallscope
