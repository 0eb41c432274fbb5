// The causes an NCCL log names (analyze/nccl_log/causes.h) and the
// positive-evidence rule of distributed.init_incomplete: for each rule, a log
// that must raise it (with its severity and evidence) and the false alarms
// it must not raise; and the verdict that names the cause first.
#include "analyze/nccl_log/causes.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analyze/catalog.h"
#include "analyze/nccl_log/rules.h"
#include "analyze/report.h"
#include "finding_matchers.h"
#include "formats/nccl_log/nccl_log.h"

namespace stallscope {
namespace {

FindingsWithNotes Check(const std::string& text) {
  return CheckNcclLog(ParseNcclLog(text), std::nullopt, "job.log");
}

const Finding* Of(const FindingsWithNotes& r, std::string_view id) { return Find(r.findings, id); }

// Two hosts, both through init: the base the failures are added to.
const std::string kTwoHostsDone =
    "a:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
    "b:2:2 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>\n"
    "a:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n"
    "b:2:2 [0] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n";

TEST(NcclCauses, EveryIdIsInTheCatalog) {
  for (const char* id :
       {"distributed.nccl_cuda_failure", "network.oob_socket_failed", "network.root_unreachable",
        "network.connect_timeout", "network.duplicate_address", "network.link_local_interface",
        "distributed.nccl_warning", "network.net_plugin_fallback"}) {
    const Rule* rule = FindRule(id);
    ASSERT_NE(rule, nullptr) << id;
    EXPECT_EQ(std::string(LayerName(rule->layer)) + "." +
                  std::string(id).substr(std::string(id).find('.') + 1),
              id);
  }
}

TEST(NcclCauses, CudaFailureIsNamedBeforeTheInitItStopped) {
  auto r = Check(
      "a:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
      "b:2:2 [3] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>\n"
      "a:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Init START\n"
      "\n"
      "b:2:2 [3] transport.cc:154 NCCL WARN Cuda failure 'invalid argument'\n"
      "a:1:5 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer "
      "b<4000>\n");
  const Finding* f = Of(r, "distributed.nccl_cuda_failure");
  ASSERT_NE(f, nullptr) << Ids(r.findings);
  EXPECT_EQ(f->severity, Severity::kCritical);
  EXPECT_EQ(EvidenceOf<std::string>(*f, "first_at"), "job.log:5");
  EXPECT_EQ(EvidenceOf<std::string>(*f, "hosts"), "b");
  EXPECT_NE(EvidenceOf<std::string>(*f, "errors").find("b:2 [3]"), std::string::npos);
  ASSERT_NE(Of(r, "network.connect_failed"), nullptr);
  ASSERT_NE(Of(r, "distributed.init_incomplete"), nullptr);
  // The peer lost on a's side follows b's failure: its evidence, no longer
  // critical, so even by layer the verdict is the GPU.
  EXPECT_EQ(Of(r, "network.connect_failed")->severity, Severity::kInfo);
  EXPECT_EQ(EvidenceOf<std::string>(*Of(r, "network.connect_failed"), "consequence_of"),
            "distributed.nccl_cuda_failure");
  Report report = MakeReport(r.findings, {Layer::kNetwork, Layer::kDistributed}, r.notes);
  EXPECT_EQ(report.verdict.finding, "distributed.nccl_cuda_failure");
  PreferNcclCause(report);
  EXPECT_EQ(report.verdict.finding, "distributed.nccl_cuda_failure");
}

TEST(NcclCauses, OobSocketFailureButNotWhenIbIsDisabled) {
  // The WARN, then NCCL's error returns: a failure.
  auto r = Check(kTwoHostsDone +
                 "a:1:1 [0] misc/socket.cc:1 NCCL WARN Net : Socket creation failed : Address "
                 "family not supported by protocol\n"
                 "a:1:1 [0] NCCL INFO transport/net_ib.cc:560 -> 2\n");
  const Finding* f = Of(r, "network.oob_socket_failed");
  ASSERT_NE(f, nullptr) << Ids(r.findings);
  EXPECT_EQ(f->severity, Severity::kCritical);
  // The same WARN after init, with the process going on: NCCL carried on.
  auto carried = Check(kTwoHostsDone +
                       "a:1:1 [0] misc/socket.cc:1 NCCL WARN Net : Socket creation failed : "
                       "Address family not supported by protocol\n"
                       "a:1:1 [0] NCCL INFO Channel 02/0 : 0[0] -> 1[0] via NET/IB/0\n");
  f = Of(carried, "network.oob_socket_failed");
  ASSERT_NE(f, nullptr) << Ids(carried.findings);
  EXPECT_EQ(f->severity, Severity::kWarning);
  EXPECT_FALSE(EvidenceOf<std::string>(*f, "carried_on").empty());
  auto empty_oob =
      Check(kTwoHostsDone + "a:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB :\n");
  EXPECT_NE(Of(empty_oob, "network.oob_socket_failed"), nullptr) << Ids(empty_oob.findings);
  auto disabled = Check(kTwoHostsDone +
                        "a:1:1 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.\n"
                        "a:1:1 [0] NCCL INFO NET/IB : Using [RO]; OOB :\n");
  EXPECT_EQ(Of(disabled, "network.oob_socket_failed"), nullptr) << Ids(disabled.findings);
}

TEST(NcclCauses, RootInNoLocalSubnet) {
  auto r = Check(
      "b:2:2 [0] NCCL INFO Bootstrap: Using eth1:192.168.8.8<0>\n"
      "b:2:2 [0] NCCL INFO NET/Socket : Using [0]eth1:192.168.8.8<0>\n"
      "\n"
      "b:2:3 [0] misc/socket.cc:383 NCCL WARN Net : No interface found in the same subnet as "
      "remote address 192.168.7.7<41231>\n"
      "\n"
      "b:2:3 [0] misc/socket.cc:512 NCCL WARN Call to bind failed: Cannot assign requested "
      "address\n");
  const Finding* f = Of(r, "network.root_unreachable");
  ASSERT_NE(f, nullptr) << Ids(r.findings);
  EXPECT_EQ(EvidenceOf<std::string>(*f, "root"), "192.168.7.7<41231>");
  // Listed by bootstrap and by NET/Socket: named once.
  EXPECT_EQ(EvidenceOf<std::string>(*f, "local_addresses"), "eth1:192.168.8.8");
  EXPECT_EQ(EvidenceOf<std::string>(*f, "first_at"), "job.log:4");
  EXPECT_TRUE(EvidenceOf<bool>(*f, "bind_failed"));
  // The bind failure is the root's consequence, not an unexplained warning.
  EXPECT_EQ(Of(r, "distributed.nccl_warning"), nullptr) << Ids(r.findings);
}

TEST(NcclCauses, ConnectsThatTimeOutNotOnesRefused) {
  const std::string retries =
      "a:1:9 [0] NCCL INFO socketStartConnect: connect to 10.0.0.2<42017> returned Connection "
      "timed out, retrying (3/34) after sleep for 300 msec\n";
  auto warned = Check(kTwoHostsDone + retries);
  const Finding* f = Of(warned, "network.connect_timeout");
  ASSERT_NE(f, nullptr) << Ids(warned.findings);
  EXPECT_EQ(f->severity, Severity::kWarning);  // init went through
  EXPECT_EQ(EvidenceOf<std::string>(*f, "attempts"), "3 of 34");
  EXPECT_EQ(EvidenceOf<std::string>(*f, "peers"), "10.0.0.2<42017> (Connection timed out)");
  auto stuck = Check(
      "a:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Init START\n" + retries);
  f = Of(stuck, "network.connect_timeout");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kCritical);
  auto refused = Check(kTwoHostsDone +
                       "a:1:9 [0] NCCL INFO Call to connect returned Connection refused, "
                       "retrying\n");
  EXPECT_EQ(Of(refused, "network.connect_timeout"), nullptr) << Ids(refused.findings);
}

TEST(NcclCauses, OneAddressOnTwoHosts) {
  auto r = Check(
      "a:1:1 [0] NCCL INFO Bootstrap : Using eth0:172.18.0.2<0>\n"
      "b:2:2 [0] NCCL INFO Bootstrap : Using eth0:172.18.0.2<0>\n");
  const Finding* f = Of(r, "network.duplicate_address");
  ASSERT_NE(f, nullptr) << Ids(r.findings);
  EXPECT_EQ(EvidenceOf<std::string>(*f, "hosts"), "a; b");
  // Two processes of one host share it, as they should; a second interface
  // listed after the first is not what bootstrap uses.
  auto fine = Check(
      "a:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
      "a:3:3 [1] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
      "b:2:2 [0] NCCL INFO Bootstrap : Using [0]eth0:10.0.0.2<0> [1]docker0:172.17.0.1<0>\n"
      "a:4:4 [2] NCCL INFO Bootstrap : Using [0]eth0:10.0.0.1<0> [1]docker0:172.17.0.1<0>\n");
  EXPECT_EQ(Of(fine, "network.duplicate_address"), nullptr) << Ids(fine.findings);
}

TEST(NcclCauses, LinkLocalOrTunnelInterfaces) {
  auto first = Check(
      "a:1:1 [0] NCCL INFO Bootstrap : Using ip6tnl0:fe80::e866:19ff:fe1e:a688%ip6tnl0<0>\n"
      "b:2:2 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>\n");
  const Finding* f = Of(first, "network.link_local_interface");
  ASSERT_NE(f, nullptr) << Ids(first.findings);
  EXPECT_EQ(f->severity, Severity::kCritical);
  auto listed = Check(kTwoHostsDone +
                      "a:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0> "
                      "[1]veth9d2d103:fe80::b051:e3ff:febe:607b%veth9d2d103<0>\n");
  f = Of(listed, "network.link_local_interface");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kInfo);  // listed, no channel runs over it
  EXPECT_EQ(EvidenceOf<std::string>(*f, "used_for"), "listed only");
  // The channels run over that device [1] on a job of two hosts: critical.
  auto used = Check(kTwoHostsDone +
                    "a:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0> "
                    "[1]veth9d2d103:fe80::b051:e3ff:febe:607b%veth9d2d103<0>\n"
                    "a:1:1 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via "
                    "NET/Socket/1\n");
  f = Of(used, "network.link_local_interface");
  ASSERT_NE(f, nullptr);
  // Both hosts finished init and no connect failed: it worked, a warning.
  EXPECT_EQ(f->severity, Severity::kWarning);
  EXPECT_FALSE(EvidenceOf<std::string>(*f, "graded_by").empty());
  EXPECT_EQ(EvidenceOf<std::string>(*f, "used_for"), "channels (via NET/Socket/1)");
  // Where a connect over it failed, critical.
  auto failed = Check(kTwoHostsDone +
                      "a:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0> "
                      "[1]veth9d2d103:fe80::b051:e3ff:febe:607b%veth9d2d103<0>\n"
                      "a:1:1 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via "
                      "NET/Socket/1\n"
                      "a:1:1 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to "
                      "fe80::b051<4000> failed : Network is unreachable\n"
                      "a:1:1 [0] NCCL INFO misc/socket.cc:567 -> 2\n");
  f = Of(failed, "network.link_local_interface");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kCritical);
  auto one_host = Check(
      "a:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
      "a:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0> "
      "[1]veth9d2d103:fe80::b051:e3ff:febe:607b%veth9d2d103<0>\n");
  f = Of(one_host, "network.link_local_interface");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kInfo);
  EXPECT_EQ(Of(Check(kTwoHostsDone), "network.link_local_interface"), nullptr);
}

TEST(NcclCauses, UnexplainedWarningsAreListedWithTheirLine) {
  auto r = Check(kTwoHostsDone + "\n" +
                 "b:2:7 [0] transport/net.cc:1224 NCCL WARN NET/OFI Request 0x7f0 completed "
                 "with error. RC: 5\n"
                 "\n"
                 "a:1:7 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]\n"
                 "\n"
                 "a:1:8 [0] include/socket.h:403 NCCL WARN Connect to 10.0.0.2<5> failed : "
                 "Connection refused\n");
  const Finding* f = Of(r, "distributed.nccl_warning");
  ASSERT_NE(f, nullptr) << Ids(r.findings);
  EXPECT_EQ(f->severity, Severity::kInfo);            // nothing shows a process stopped there
  EXPECT_EQ(EvidenceOf<int64_t>(*f, "distinct"), 1);  // libibverbs: benign; Connect: its rule's
  EXPECT_NE(EvidenceOf<std::string>(*f, "warnings").find("job.log:6, b:2 [0]"), std::string::npos)
      << EvidenceOf<std::string>(*f, "warnings");
  EXPECT_EQ(Of(Check(kTwoHostsDone), "distributed.nccl_warning"), nullptr);
}

TEST(NcclInitIncomplete, ALogThatEndsBeforeInitIsANoteNotAFinding) {
  // 2.5-2.17: no Init START; the log is cut before COMPLETE, nothing failed.
  auto cut = Check(
      "a:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
      "b:2:2 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>\n"
      "a:1:1 [0] NCCL INFO Channel 00/02 :    0   1\n");
  EXPECT_EQ(Of(cut, "distributed.init_incomplete"), nullptr) << Ids(cut.findings);
  ASSERT_EQ(cut.notes.size(), 1u);
  EXPECT_EQ(cut.notes[0].rfind("init state unknown: 2 rank(s)", 0), 0u) << cut.notes[0];
  // A harmless WARN does not make it a failure.
  auto benign = Check(
      "a:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
      "\n"
      "a:1:1 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]\n");
  EXPECT_EQ(Of(benign, "distributed.init_incomplete"), nullptr) << Ids(benign.findings);
}

TEST(NcclInitIncomplete, PositiveEvidenceOnly) {
  // Init START and no COMPLETE (2.18+), nothing after: the excerpt ends, a note.
  auto started = Check(
      "a:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId 0x9 - "
      "Init START\n");
  const Finding* f = Of(started, "distributed.init_incomplete");
  EXPECT_EQ(f, nullptr) << Ids(started.findings);
  ASSERT_EQ(started.notes.size(), 1u);
  EXPECT_NE(started.notes[0].find("py-spy dump --pid 1` on a"), std::string::npos)
      << started.notes[0];
  // The same with IB failing and NCCL going on over sockets: still a note.
  auto fell_back = Check(
      "a:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId 0x9 - "
      "Init START\n\n"
      "a:1:1 [0] transport/net_ib.cc:193 NCCL WARN NET/IB : Unable to open device mlx5_0\n"
      "a:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n");
  EXPECT_EQ(Of(fell_back, "distributed.init_incomplete"), nullptr) << Ids(fell_back.findings);
  // And with PyTorch's watchdog timing out after it: a rank stopped.
  auto timed_out = Check(
      "a:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId 0x9 - "
      "Init START\n"
      "[rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective operation "
      "timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE) ran for 600092 milliseconds\n");
  f = Of(timed_out, "distributed.init_incomplete");
  ASSERT_NE(f, nullptr) << Ids(timed_out.findings);
  EXPECT_EQ(f->severity, Severity::kCritical);
  // Before 2.18: one rank completed, the other did not: critical.
  auto half = Check(
      "a:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n"
      "b:2:2 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>\n");
  f = Of(half, "distributed.init_incomplete");
  ASSERT_NE(f, nullptr) << Ids(half.findings);
  EXPECT_EQ(f->severity, Severity::kCritical);
  EXPECT_EQ(EvidenceOf<std::string>(*f, "ranks"), "b:2 [0]");
  // No COMPLETE anywhere, but connects retried: critical.
  auto retried = Check(
      "a:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
      "a:1:1 [0] NCCL INFO Call to connect returned Connection refused, retrying\n");
  f = Of(retried, "distributed.init_incomplete");
  ASSERT_NE(f, nullptr) << Ids(retried.findings);
  EXPECT_EQ(f->severity, Severity::kCritical);
}

// Two hosts whose channels run sockets, with whatever the case adds.
std::string SocketJob(const std::string& extra) {
  return "a:1:1 [0] NCCL INFO Bootstrap : Using " + extra +
         "\n"
         "b:2:2 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>\n"
         "a:1:1 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/Socket/0\n"
         "b:2:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [receive] via NET/Socket/0\n";
}

TEST(NcclRdmaUnused, EverySignOfRdmaUnderSockets) {
  struct Case {
    std::string log;
    std::string why;
  };
  const std::vector<Case> cases = {
      {SocketJob("ib0:192.168.10.1<0>"), "an IPoIB interface (ib0)"},
      {SocketJob("ib0:192.168.10.1<0>") +
           "\na:1:1 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]\n",
       "the image lacks rdma-core"},
      {SocketJob("eth0:10.0.0.1<0>") + "a:1:1 [0] NCCL INFO P2P plugin v8 IBext_v8\n",
       "the IB net plugin (IBext_v8) loaded"},
      {SocketJob("eth0:10.0.0.1<0>") +
           "libfabric:1:1700000000::core:core:fi_getinfo_():1138<warn> fi_getinfo: provider "
           "efa output empty list\n",
       "libfabric's efa provider is unavailable"},
  };
  for (const Case& c : cases) {
    auto r = Check(c.log);
    const Finding* f = Of(r, "network.rdma_unused");
    ASSERT_NE(f, nullptr) << c.why << ": " << Ids(r.findings);
    EXPECT_NE(EvidenceOf<std::string>(*f, "why").find(c.why), std::string::npos)
        << EvidenceOf<std::string>(*f, "why");
  }
  // One host on IB, the other on sockets.
  auto mixed = Check(
      "a:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
      "b:2:2 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>\n"
      "a:1:1 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0/GDRDMA\n"
      "b:2:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [receive] via NET/Socket/0\n");
  const Finding* f = Of(mixed, "network.rdma_unused");
  ASSERT_NE(f, nullptr) << Ids(mixed.findings);
  EXPECT_NE(EvidenceOf<std::string>(*f, "why").find("b runs NET/Socket while a runs NET/IB"),
            std::string::npos)
      << EvidenceOf<std::string>(*f, "why");
}

TEST(NcclRdmaUnused, SilentWithoutRdmaAndANoteWhenDisabledOnPurpose) {
  auto plain = Check(SocketJob("eth0:10.0.0.1<0>"));
  EXPECT_EQ(Of(plain, "network.rdma_unused"), nullptr) << Ids(plain.findings);
  // libibverbs missing on an Ethernet cluster: NCCL's harmless fallback.
  auto ethernet = Check(SocketJob("eth0:10.0.0.1<0>") +
                        "\na:1:1 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so\n");
  EXPECT_EQ(Of(ethernet, "network.rdma_unused"), nullptr) << Ids(ethernet.findings);
  auto disabled = Check(SocketJob("ib0:192.168.10.1<0>") +
                        "a:1:1 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.\n");
  EXPECT_EQ(Of(disabled, "network.rdma_unused"), nullptr) << Ids(disabled.findings);
  bool noted = false;
  for (const std::string& n : disabled.notes) noted = noted || n.find("NCCL_IB_DISABLE=1") == 0;
  EXPECT_TRUE(noted);
}

TEST(NcclWrongInterface, WhatWasUsedByKindAndAddress) {
  // A docker bridge listed second for NET/Socket while the channels use
  // interface 0: not used, not judged.
  auto listed = Check(
      "a:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
      "b:2:2 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>\n"
      "a:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0> [1]docker0:172.17.0.1<0>\n"
      "a:1:1 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/Socket/0\n");
  EXPECT_EQ(Of(listed, "network.wrong_interface"), nullptr) << Ids(listed.findings);
  // The same bridge when a channel runs over it.
  auto used = Check(
      "a:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
      "b:2:2 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>\n"
      "a:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0> [1]docker0:172.17.0.1<0>\n"
      "a:1:1 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/Socket/1\n");
  const Finding* f = Of(used, "network.wrong_interface");
  ASSERT_NE(f, nullptr) << Ids(used.findings);
  EXPECT_EQ(f->severity, Severity::kCritical);
  // A bridge listed while IB carries the channels.
  auto ib = Check(
      "a:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
      "b:2:2 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>\n"
      "a:1:1 [0] NCCL INFO NET/Socket : Using [0]docker0:172.17.0.1<0>\n"
      "a:1:1 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0\n");
  EXPECT_EQ(Of(ib, "network.wrong_interface"), nullptr) << Ids(ib.findings);
  // A veth that holds the process's only address is its network.
  auto veth = Check(
      "a:1:1 [0] NCCL INFO Bootstrap : Using veth0:203.0.113.7<0>\n"
      "b:2:2 [0] NCCL INFO Bootstrap : Using veth0:203.0.113.8<0>\n");
  EXPECT_EQ(Of(veth, "network.wrong_interface"), nullptr) << Ids(veth.findings);
  // libvirt's NAT bridge, named as such.
  auto virbr = Check(
      "a:1:1 [0] NCCL INFO Bootstrap : Using virbr0:192.168.122.1<0>\n"
      "b:2:2 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>\n");
  f = Of(virbr, "network.wrong_interface");
  ASSERT_NE(f, nullptr) << Ids(virbr.findings);
  EXPECT_EQ(EvidenceOf<std::string>(*f, "kind"), "libvirt NAT bridge");
}

TEST(NcclHosts, TheJobsHostCountFromEveryEvidence) {
  // One host printed, its channels run NET: another host is on the other end.
  NcclLogSummary net = ParseNcclLog(
      "a:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n"
      "a:1:1 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0\n");
  EXPECT_EQ(NcclJobNodes(net), 2);
  EXPECT_FALSE(NcclLogProvesOneHost(net));
  // One host's 2 ranks of a communicator of 4.
  NcclLogSummary partial = ParseNcclLog(
      "a:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 4 cudaDev 0 busId 1000 - Init COMPLETE\n"
      "a:2:2 [1] NCCL INFO comm 0x2 rank 1 nranks 4 cudaDev 1 busId 2000 - Init COMPLETE\n");
  EXPECT_EQ(NcclJobNodes(partial), 2);
  // Unless NCCL said how many nodes its ranks span: rank 0's log of one node.
  NcclLogSummary rank0 = ParseNcclLog(
      "a:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 8 nNodes 1 localRanks 8 localRank 0 MNNVL 0\n"
      "a:1:1 [0] NCCL INFO Bootstrap : Using eth0:172.17.0.2<0>\n");
  EXPECT_EQ(NcclJobNodes(rank0), 1);
  // All ranks on one host, SHM between them: proven.
  NcclLogSummary one = ParseNcclLog(
      "a:1:1 [0] NCCL INFO Bootstrap : Using lo:127.0.0.1<0>\n"
      "a:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n"
      "a:2:2 [1] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 1 busId 2000 - Init COMPLETE\n"
      "a:1:1 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via SHM/direct/direct\n");
  EXPECT_EQ(NcclJobNodes(one), 1);
  EXPECT_TRUE(NcclLogProvesOneHost(one));
  // The results are kept: a finding points into them.
  FindingsWithNotes one_checked = CheckNcclLog(one, std::nullopt);
  const Finding* f = Find(one_checked.findings, "network.wrong_interface");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kInfo);
  // One host and lo, but its ranks' size unknown: not proven harmless.
  NcclLogSummary unknown = ParseNcclLog("a:1:1 [0] NCCL INFO Bootstrap : Using lo:127.0.0.1<0>\n");
  FindingsWithNotes unknown_checked = CheckNcclLog(unknown, std::nullopt);
  f = Find(unknown_checked.findings, "network.wrong_interface");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kWarning);
}

TEST(NcclInitIncomplete, TheNextCheckFollowsTheEvidence) {
  auto lost = Check(
      "a:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId 0x9 - "
      "Init START\n"
      "\n"
      "a:1:1 [0] misc/socket.cc:1 NCCL WARN socketStartConnect: Connect to 10.0.0.2<4000> "
      "failed : Connection refused\n");
  const Finding* f = Of(lost, "distributed.init_incomplete");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->next.rfind("a:1 could not reach 10.0.0.2<4000> (Connection refused)", 0), 0u)
      << f->next;
}

TEST(NcclCauses, AnInterfacesNameAloneComesAfterAFailedCall) {
  // br-1 by name only (its address is no Docker one), then a refused connect
  // (both hosts print 2.4.8-2.7's indexed bootstrap: one NCCL version).
  auto r = Check(
      "a:1:1 [0] NCCL INFO Bootstrap : Using [0]br-1:10.9.0.1<0> [1]eth0:10.0.0.1<0>\n"
      "b:2:2 [0] NCCL INFO Bootstrap : Using [0]eth0:10.0.0.2<0>\n"
      "a:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n"
      "\n"
      "b:2:2 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.9.0.1<5> failed "
      ": Connection refused\n");
  const Finding* f = Of(r, "network.wrong_interface");
  ASSERT_NE(f, nullptr) << Ids(r.findings);
  EXPECT_EQ(EvidenceOf<std::string>(*f, "judged_by"), "name");
  ASSERT_NE(Of(r, "network.connect_failed"), nullptr);
  Report report = MakeReport(r.findings, {Layer::kNetwork, Layer::kDistributed}, r.notes);
  PreferNcclCause(report);
  EXPECT_EQ(report.verdict.finding, "network.connect_failed");
}

TEST(NcclCauses, PyTorchsLinesAreOtherLinesAndNameTheirNcclVersion) {
  NcclLogSummary log = ParseNcclLog(
      "a:1:1 [0] NCCL INFO NCCL version 2.19.3+cuda12.3\n"
      "[rank1]: torch.distributed.DistBackendError: NCCL error in: ../ProcessGroupNCCL.cpp:1970, "
      "invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.18.1\n");
  EXPECT_EQ(log.nccl_lines, 1u);
  EXPECT_EQ(log.other_lines, 1u);
  EXPECT_EQ(log.torch_nccl_errors, 1u);
  ASSERT_EQ(log.torch_error_versions.size(), 1u);
  EXPECT_EQ(log.torch_error_versions[0], "2.18.1");
  auto r = CheckNcclLog(log, std::nullopt, "job.log");
  const Finding* f = Of(r, "distributed.nccl_version_mismatch");
  ASSERT_NE(f, nullptr) << Ids(r.findings);
  EXPECT_NE(EvidenceOf<std::string>(*f, "versions").find("2.18.1 (from PyTorch's error text)"),
            std::string::npos)
      << EvidenceOf<std::string>(*f, "versions");
  // The same version printed both ways is one version.
  auto same = Check(
      "a:1:1 [0] NCCL INFO NCCL version 2.18.1+cuda12.1\n"
      "[rank0]: RuntimeError: NCCL error in: x.cpp:1, unhandled system error, NCCL version "
      "2.18.1\n");
  EXPECT_EQ(Of(same, "distributed.nccl_version_mismatch"), nullptr) << Ids(same.findings);
}

TEST(NcclCauses, AProxysFromRankIsARankOnItsHost) {
  NcclProxyFailure p;
  ASSERT_TRUE(ParseNcclProxyFailure(
      "[Proxy Service 2] Failed to execute operation Connect from rank 3, retcode 6", &p));
  EXPECT_EQ(p.proxy_rank, 2);
  EXPECT_EQ(p.from_rank, 3);
  EXPECT_EQ(p.operation, "Connect");
  EXPECT_EQ(p.retcode, 6);
  EXPECT_FALSE(ParseNcclProxyFailure("[Proxy Service 2] Failed to execute operation", &p));
  EXPECT_FALSE(ParseNcclProxyFailure("Proxy Call to rank 3 failed (Connect)", &p));
  // Rank 3 printed nothing; its host is the proxy's, and its init is stuck.
  auto r = Check(kTwoHostsDone +
                 "b:2:9 [0] proxy.cc:1557 NCCL WARN [Proxy Service 1] Failed to execute "
                 "operation Connect from rank 3, retcode 6\n");
  const Finding* f = Of(r, "distributed.init_incomplete");
  ASSERT_NE(f, nullptr) << Ids(r.findings);
  EXPECT_EQ(EvidenceOf<std::string>(*f, "ranks"),
            "rank 3 on b (named by rank 1's proxy; no lines of its own)");
  EXPECT_NE(f->next.find("on b: rank 3 asked rank 1's proxy (b:2) to Connect"), std::string::npos)
      << f->next;
  // A rank the log shows there, done with init: a later request, not init.
  auto done = Check(kTwoHostsDone +
                    "b:2:9 [0] proxy.cc:1557 NCCL WARN [Proxy Service 1] Failed to execute "
                    "operation Connect from rank 1, retcode 6\n");
  const Finding* g = Of(done, "distributed.init_incomplete");
  EXPECT_TRUE(g == nullptr ||
              EvidenceOf<std::string>(*g, "ranks").find("rank 1") == std::string::npos)
      << Ids(done.findings);
}

TEST(NcclCauses, OnePidOnTwoHostsIsTwoProcesses) {
  // Hosts redacted alike, the pid repeating across containers.
  const std::string log_text =
      "xxx:7:7 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
      "xxx:7:7 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>\n"
      "xxx:7:20 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1b000 commId "
      "0xab - Init START\n"
      "xxx:7:21 [0] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 0 nvmlDev 0 busId 1b000 commId "
      "0xab - Init START\n"
      "xxx:7:21 [0] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 0 nvmlDev 0 busId 1b000 commId "
      "0xab - Init COMPLETE\n"
      "xxx:7:21 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [receive] via NET/Socket/0\n";
  NcclLogSummary log = ParseNcclLog(log_text);
  ASSERT_EQ(log.processes.size(), 2u);
  ASSERT_EQ(log.ranks.size(), 2u);
  EXPECT_EQ(log.processes[1].Name(), "xxx:7#2");
  EXPECT_EQ(log.processes[1].bootstrap[0].address, "10.0.0.2");
  EXPECT_EQ(log.ranks[0].rank, 0);
  EXPECT_EQ(log.ranks[0].init_completed, 0u);
  EXPECT_EQ(log.ranks[1].rank, 1);
  EXPECT_EQ(log.ranks[1].init_completed, 1u);
  EXPECT_EQ(log.ranks[1].transports.net_socket, 1u);  // its thread's later line
  EXPECT_EQ(NcclJobNodes(log), 2);
  auto r = CheckNcclLog(log, std::nullopt, "job.log");
  bool said = false;
  for (const std::string& n : r.notes)
    said = said || n.find("xxx:7 stands for 2 processes on 2 hosts") == 0;
  EXPECT_TRUE(said) << ::testing::PrintToString(r.notes);
  // One process in two communicators of one size (commIds differ), and a
  // bootstrap line printed again by the next communicator: one process.
  NcclLogSummary one = ParseNcclLog(
      "a:7:7 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
      "a:7:7 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
      "a:7:20 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1b000 commId 0xab "
      "- Init START\n"
      "a:7:20 [0] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 0 nvmlDev 0 busId 1b000 commId 0xcd "
      "- Init START\n");
  EXPECT_EQ(one.processes.size(), 1u);
  EXPECT_EQ(one.ranks.size(), 1u);
}

TEST(NcclCauses, AwsOfiNcclsLinesAreRead) {
  NcclProcess p;
  for (const char* line :
       {"Initializing aws-ofi-nccl 1.13.2-aws", "Using Libfabric version 1.22",
        "Selected provider is efa, fabric is efa-direct (found 4 nics)",
        "NIC group 0 device #0 0000:4b:00.0", "NIC group 0 device #1 0000:4c:00.0",
        "NIC group 0 device #1 0000:4c:00.0", "Using transport protocol RDMA (platform set)",
        "Running on p5.48xlarge platform, Setting NCCL_TOPO_FILE environment variable to /x.xml",
        "Could not disable CUDA API usage for HMEM, disabling GDR"}) {
    ReadNcclOfiInfo(line, 7, p);
  }
  EXPECT_EQ(p.ofi.plugin_version, "1.13.2-aws");
  EXPECT_EQ(p.ofi.libfabric_version, "1.22");
  EXPECT_EQ(p.ofi_provider, "efa");
  EXPECT_EQ(p.ofi.fabric, "efa-direct");
  EXPECT_EQ(p.ofi.nics, 4);
  EXPECT_EQ(p.ofi.devices, (std::vector<std::string>{"0000:4b:00.0", "0000:4c:00.0"}));
  EXPECT_EQ(p.ofi.protocol, "RDMA");
  EXPECT_EQ(p.ofi.platform, "p5.48xlarge");
  EXPECT_TRUE(p.ofi.gdr_disabled);
  EXPECT_EQ(p.ofi.provider_line, 7u);
  NcclProcess old;
  ReadNcclOfiInfo("Selected Provider is tcp (found 1 nics)", 3, old);
  EXPECT_EQ(old.ofi_provider, "tcp");
  EXPECT_EQ(old.ofi.fabric, "");
  EXPECT_EQ(old.ofi.nics, 1);
}

TEST(NcclCauses, AwsOfiNcclOnLibfabricsTcpProviderIsRdmaUnused) {
  auto lines = [](const std::string& provider) {
    std::string out;
    for (const char* h : {"a:1:2", "b:3:4"}) {
      out += std::string(h) + " [0] NCCL INFO NET/OFI Selected Provider is " + provider +
             " (found 1 nics)\n";
      out += std::string(h) + " [0] NCCL INFO Using network AWS Libfabric\n";
      out += std::string(h) +
             " [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/AWS "
             "Libfabric/0\n";
    }
    return out;
  };
  auto tcp = Check(lines("tcp"));
  const Finding* f = Of(tcp, "network.rdma_unused");
  ASSERT_NE(f, nullptr) << Ids(tcp.findings);
  EXPECT_EQ(EvidenceOf<int64_t>(*f, "ofi_tcp_connections"), 2);
  EXPECT_NE(f->next.find("FI_PROVIDER=efa"), std::string::npos) << f->next;
  auto efa = Check(lines("efa"));
  EXPECT_EQ(Of(efa, "network.rdma_unused"), nullptr) << Ids(efa.findings);
}

}  // namespace
}  // namespace stallscope
