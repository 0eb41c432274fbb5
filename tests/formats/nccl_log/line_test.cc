// The decorations launchers and log systems put around NCCL's lines
// (formats/nccl_log/line.h), and the prefix reader that sees past them: each
// form the launchers' documentation and real pasted logs show, in front of
// one NCCL line, must give NCCL's own host, pid, tid, device and message.
#include "formats/nccl_log/line.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "formats/nccl_log/nccl_log.h"

namespace stallscope {
namespace {

TEST(NcclLineTimestamps, EveryFormAndNothingElse) {
  struct Case {
    std::string text;
    size_t length;
  };
  const std::vector<Case> cases = {
      {"2024-03-04 05:06:07 rest", 19},
      {"2024-01-01T01:02:03.456+00:00nodeD", 29},
      {"2024-01-01T01:02:03.456789012Z x", 30},
      {"2024/03/04 05:06:07,123 x", 23},
      {"2024-03-04T05:06:07-0500 x", 24},
      {"2024-03-04 05:06:07 UTC x", 23},
      {"Mon Jan  1 01:02:03 2024[1,2]", 24},
      {"Jan  1 01:02:03 host", 15},
      {"05:06:07 x", 8},
      {"05:06:07.123456 x", 15},
      {"[2024-03-04 05:06:07] x", 21},
      {"[  123.456789] x", 14},
      {"[1700000000.123] x", 16},
      {"2024-03-04 x", 10},
  };
  for (const Case& c : cases) EXPECT_EQ(TimestampLength(c.text), c.length) << c.text;
  for (const char* not_one : {"nodeA:2001:2002", "10.1.2.3: x", "[1,5]<stdout>:", "[rank3]:",
                              "2024 x", "Monday", "12:3", "[0] NCCL", "Channel 00/02 :", ""}) {
    EXPECT_EQ(TimestampLength(not_one), 0u) << not_one;
  }
}

TEST(NcclLineHead, LaunchersTagsAreStrippedAndNamed) {
  struct Case {
    std::string line;
    std::string content;  // what follows the decorations
    std::string tag;
    std::string host;
    int64_t pid;
  };
  const std::vector<Case> cases = {
      {"[1,5]<stdout>:nodeA:2001:2002 [1] NCCL INFO x", "nodeA:2001:2002 [1] NCCL INFO x",
       "[1,5]<stdout>:", "", 0},
      {"[1,5]<stderr>: NCCL version 2.18.3", "NCCL version 2.18.3", "[1,5]<stderr>:", "", 0},
      {"2024-03-04 05:06:07 [1,0]<stdout>:nodeB:1:2 [0] NCCL INFO x", "nodeB:1:2 [0] NCCL INFO x",
       "[1,0]<stdout>:", "", 0},
      {"3: gpu-b:3877:3940 [0] NCCL INFO x", "gpu-b:3877:3940 [0] NCCL INFO x", "3:", "", 0},
      {" 13: NCCL version 2.5.6", "NCCL version 2.5.6", "13:", "", 0},
      {"nodeA: gpu:1:2 [0] NCCL INFO x", "gpu:1:2 [0] NCCL INFO x", "nodeA:", "nodeA", 0},
      {"10.1.2.3: gpu:1:2 [0] NCCL INFO x", "gpu:1:2 [0] NCCL INFO x", "10.1.2.3:", "10.1.2.3", 0},
      {"[3] gpu:1:2 [0] NCCL INFO x", "gpu:1:2 [0] NCCL INFO x", "[3]", "", 0},
      {"[rank3]:gpu:1:2 [0] NCCL INFO x", "gpu:1:2 [0] NCCL INFO x", "[rank3]:", "", 0},
      {"[default3]:gpu:1:2 [0] NCCL INFO x", "gpu:1:2 [0] NCCL INFO x", "[default3]:", "", 0},
      {"(pid=123) gpu:123:130 [0] NCCL INFO x", "gpu:123:130 [0] NCCL INFO x", "(pid=123)", "",
       123},
      {"(RayTrainWorker pid=123, ip=10.0.0.5) gpu:123:130 [0] NCCL INFO x",
       "gpu:123:130 [0] NCCL INFO x", "(RayTrainWorker pid=123, ip=10.0.0.5)", "10.0.0.5", 123},
      {"\x1b[32m[1,0]<stdout>:\x1b[0mgpu:1:2 [0] NCCL INFO x", "gpu:1:2 [0] NCCL INFO x",
       "[1,0]<stdout>:", "", 0},
      {"[0m gpu:1:2 [0] NCCL INFO x", "gpu:1:2 [0] NCCL INFO x", "", "", 0},
      {"\xe2\x94\x82 2024-03-04T05:06:07Z gpu:1:2 [0] NCCL INFO x", "gpu:1:2 [0] NCCL INFO x", "",
       "", 0},
      {"nodeA: [default0]:gpu:1:2 [0] NCCL INFO x", "gpu:1:2 [0] NCCL INFO x", "nodeA:", "nodeA",
       0},
      // Not tags: an exception's name, a log level, NCCL's own line.
      {"RuntimeError: NCCL error", "RuntimeError: NCCL error", "", "", 0},
      {"INFO: started", "INFO: started", "", "", 0},
      {"gpu:1:2 [0] NCCL INFO x", "gpu:1:2 [0] NCCL INFO x", "", "", 0},
      // A user's template with a space: a tag all the same.
      {"[rank3] epoch 1", "epoch 1", "[rank3]", "", 0},
      {"[1,0][nodeA.cluster.local:2001]<stderr>: x", "x",
       "[1,0][nodeA.cluster.local:2001]<stderr>:", "", 0},
      {"[0]<stdout>:x", "x", "[0]<stdout>:", "", 0},
      {"Mon Jan  1 01:02:03 2024<stdout>:x", "x", "<stdout>:", "", 0},
      {"[Mon Jan  1 01:02:03 2024][1,0]<stdout>: x", "x", "[1,0]<stdout>:", "", 0},
      {"[pod/job-worker-0/pytorch] x", "x", "[pod/job-worker-0/pytorch]", "", 0},
      {"2024-01-01T01:02:03.123456789Z stderr F x", "x", "", "", 0},
      {"  | 2025-05-16T16:39:51.208-07:00 | x", "x", "", "", 0},
      {"\x1b[2m\x1b[36m(RayTrainWorker pid=2001, ip=10.0.0.5)\x1b[0m x", "x",
       "(RayTrainWorker pid=2001, ip=10.0.0.5)", "10.0.0.5", 2001},
      {"[2m[36m(pid=2001)[0m x", "x", "(pid=2001)", "", 2001},
      {"[0] epoch 1", "epoch 1", "[0]", "", 0},
  };
  for (const Case& c : cases) {
    LineHead head = ReadLineHead(c.line);
    EXPECT_EQ(c.line.substr(head.content), c.content) << c.line;
    EXPECT_EQ(head.tag, c.tag) << c.line;
    EXPECT_EQ(head.host, c.host) << c.line;
    EXPECT_EQ(head.pid, c.pid) << c.line;
    EXPECT_EQ(head.tag_key != 0, !c.tag.empty()) << c.line;
  }
  // Two processes' tags differ; one process's tag is the same on every line.
  EXPECT_NE(ReadLineHead("[1,0]<stdout>:x").tag_key, ReadLineHead("[1,1]<stdout>:x").tag_key);
  EXPECT_EQ(ReadLineHead("05:06:07 [1,0]<stdout>:x").tag_key,
            ReadLineHead("05:06:09 [1,0]<stdout>:y").tag_key);
}

TEST(NcclLineTail, RaysRepeatsBordersAndResidue) {
  uint64_t folded = 0;
  EXPECT_EQ(StripLineTail("Using network IB [repeated 7x across cluster]", &folded),
            "Using network IB");
  EXPECT_EQ(folded, 7u);
  EXPECT_EQ(StripLineTail("Using network IB \xe2\x94\x82", &folded), "Using network IB");
  EXPECT_EQ(StripLineTail("Using network IB\x1b[0m", &folded), "Using network IB");
  EXPECT_EQ(StripLineTail("Using network IB[0m  \r", &folded), "Using network IB");
  EXPECT_EQ(StripLineTail("Trees [0] 1/-1/-1->0->-1 [1] -1/-1/-1->0->1", &folded),
            "Trees [0] 1/-1/-1->0->-1 [1] -1/-1/-1->0->1");
  EXPECT_EQ(folded, 7u);
}

TEST(NcclLineHost, GluedTagsAndTimestampsAreNotTheHost) {
  EXPECT_EQ(NcclHostOf("[1,0]<stdout>:nodeB"), "nodeB");
  EXPECT_EQ(NcclHostOf("2024-01-01T01:02:03.456+00:00nodeD"), "nodeD");
  EXPECT_EQ(NcclHostOf("2024-01-01T01:02:03.456ZnodeD"), "nodeD");
  EXPECT_EQ(NcclHostOf("2024[1,2]<stdout>:nodeC"), "nodeC");
  EXPECT_EQ(NcclHostOf("\xe2\x94\x82nodeA"), "nodeA");
  EXPECT_EQ(NcclHostOf("gpu-a"), "gpu-a");
  EXPECT_EQ(NcclHostOf("[1,5]<stdout>"), "");
}

TEST(NcclLineHost, ARedactionPlaceholderIsTheHost) {
  for (std::string_view host : {"<cluster_name>", "[hostname]", "xxx"}) {
    std::string line = std::string(host) + ":4101:4161 [0] NCCL INFO Bootstrap : Using eth0";
    auto p = ParseNcclLinePrefix(line);
    ASSERT_TRUE(p) << line;
    EXPECT_EQ(p->host, host);
    EXPECT_EQ(p->pid, 4101);
  }
  // A launcher's own tags are not a host.
  auto tagged = ParseNcclLinePrefix("[1,5]<stdout>:2001:2002 [0] NCCL INFO x");
  ASSERT_TRUE(tagged);
  EXPECT_EQ(tagged->host, "");
}

TEST(NcclLineUtf8, StrayBytesBecomeReplacementCharacters) {
  EXPECT_EQ(ValidUtf8("ok \xe2\x94\x82"), "ok \xe2\x94\x82");
  EXPECT_EQ(ValidUtf8("a\xff"
                      "b"),
            "a\xef\xbf\xbd"
            "b");
  EXPECT_EQ(ValidUtf8("\xe2\x94"), "\xef\xbf\xbd\xef\xbf\xbd");
  EXPECT_EQ(ValidUtf8("\xc0\x80"), "\xef\xbf\xbd\xef\xbf\xbd");  // overlong
  EXPECT_EQ(WithoutEscapes("\x1b[1;31mWARN\x1b[0m x"), "WARN x");
}

// Every prefix of the list before one NCCL line: NCCL's own
// identity, never the launcher's or a timestamp's.
TEST(NcclLinePrefix, EveryLauncherPrefixGivesNcclsOwnIdentity) {
  const std::string line = "nodeA:2001:2002 [1] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>";
  const std::vector<std::string> fronts = {
      "",
      "[1,5]<stdout>:",
      "2024-03-04 05:06:07 [1,0]<stdout>:",
      "Mon Jan  1 01:02:03 2024[1,2]<stdout>:",
      "2024-01-01T01:02:03.456+00:00",
      "3: ",
      "nodeZ: ",
      "10.1.2.3: ",
      "[3] ",
      "[rank3]:",
      "[default3]:",
      "(pid=2001) ",
      "(RayTrainWorker pid=2001, ip=10.0.0.5) ",
      "\x1b[36m(pid=2001)\x1b[0m ",
      "[0m ",
      "\xe2\x94\x82 2024-03-04T05:06:07.123456789Z ",
      "05:06:07 ",
      "2024-03-04 05:06:07,123 INFO launcher.py:12 ",
      "[1,0][nodeA.cluster.local:2001]<stderr>: ",
      "  | 2025-05-16T16:39:51.208-07:00 | ",
      "  | 2025-05-16T16:39:51.208-07:00",
      "(head, rank=0, pid=5634) [nccl-e9ef-7d4f-0:2]:",
      "[pod/job-worker-0/pytorch] 2024-01-01T01:02:03.123456789Z stderr F ",
      "```",
      "[2m[36m(RayTrainWorker pid=2001, ip=10.0.0.5)[0m ",
      "I0527 15:16:51.665375 58626 launcher.cpp:869] ",
  };
  for (const std::string& front : fronts) {
    NcclLogSummary log = ParseNcclLog(front + line + " [repeated 3x across cluster]\n");
    ASSERT_EQ(log.processes.size(), 1u) << front;
    EXPECT_EQ(log.processes[0].host, "nodeA") << front;
    EXPECT_EQ(log.processes[0].pid, 2001) << front;
    ASSERT_EQ(log.ranks.size(), 1u) << front;
    EXPECT_EQ(log.ranks[0].cuda_dev, 1) << front;
    ASSERT_EQ(log.processes[0].bootstrap.size(), 1u) << front;
    EXPECT_EQ(log.processes[0].bootstrap[0].name, "eth0") << front;
    EXPECT_EQ(log.processes[0].bootstrap[0].address, "10.0.0.1") << front;
    EXPECT_EQ(log.attributed_lines, 1u) << front;
    EXPECT_EQ(log.folded_repeats, 3u) << front;
  }
}

TEST(NcclLog, BareVersionsGoToTheProcessTheirLauncherTagNames) {
  // Under mpirun --tag-output the bare "NCCL version" line carries the tag
  // of its process, whichever process printed last.
  NcclLogSummary log = ParseNcclLog(
      "[1,1]<stdout>:NCCL version 2.18.3+cuda12.2\n"
      "[1,0]<stdout>:gpu-a:100:100 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
      "[1,1]<stdout>:gpu-b:200:200 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>\n"
      "[1,0]<stdout>:NCCL version 2.18.1+cuda12.1\n"
      "[1,0]<stdout>:\n"
      "[1,0]<stdout>:gpu-a:100:100 [0] misc/socket.cc:1 NCCL WARN x\n"
      "[1,2]<stdout>:NCCL version 2.17.1+cuda12.0\n");
  ASSERT_EQ(log.processes.size(), 2u);
  EXPECT_EQ(log.processes[0].version, "2.18.1+cuda12.1");
  EXPECT_EQ(log.processes[1].version, "2.18.3+cuda12.2");
  EXPECT_EQ(log.unattributed_versions, std::vector<std::string>{"2.17.1+cuda12.0"});
  EXPECT_EQ(log.other_lines, 0u);  // the prefix alone before the WARN is not a line
  EXPECT_EQ(log.warn_lines, 1u);
  EXPECT_EQ(log.attributed_lines, 3u);
}

TEST(NcclLog, OtherProgramsLinesAreCountedAndRead) {
  NcclLogSummary log = ParseNcclLog(
      "# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5\n"
      "#\n"
      "# Using devices\n"
      "#  Rank  0 Group  0 Pid   4321 on      nodeA device  0 [0x41] NVIDIA H100 80GB HBM3\n"
      "#  Rank  1 Group  0 Pid   4322 on      nodeB device  0 [0x41] NVIDIA H100 80GB HBM3\n"
      "libfabric:4321:1700000000::core:core:fi_getinfo_():1138<warn> fi_getinfo: provider efa "
      "output empty list\n"
      "Traceback (most recent call last):\n"
      "\n"
      "epoch 1 loss 2.3\n");
  ASSERT_EQ(log.tests_ranks.size(), 2u);
  EXPECT_EQ(log.tests_ranks[1].host, "nodeB");
  EXPECT_EQ(log.tests_ranks[1].rank, 1);
  EXPECT_EQ(log.tests_ranks[1].pid, 4322);
  EXPECT_EQ(log.tests_ranks[1].bus_id, "0x41");
  EXPECT_EQ(log.tests_ranks[1].gpu, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(log.libfabric_empty_providers, std::vector<std::string>{"efa"});
  EXPECT_EQ(log.other_lines, 8u);  // the blank line is none
  EXPECT_EQ(log.nccl_lines, 0u);
}

// Another program's plain line is counted without its head being read
// when it holds a word of its own; every line below must say the same as
// when the full read takes it (CRLF ends make no line plain).
TEST(NcclLog, OtherLinesCountedWithoutTheHeadReadSayWhatTheFullReadSays) {
  const std::vector<std::string> lines = {
      "2024-03-04 05:00:02.015838 [1,43]<stdout>:[rank35] epoch 0 step 440 loss 2.6072",
      "[rank3]: epoch 1 done",
      "(RayTrainWorker pid=123, ip=10.0.0.5) epoch 1 loss 0.5",
      "(foo bar pid=12) ",  // Ray's tag alone: no line
      "(pid=12) epoch 2 [repeated 3x across cluster]",
      "node1:2001:2002 [0] misc WARN Call to connect failed",  // NCCL before 2.3
      "node1:2001:2002 [0] INFO NET : Using interface eth0:10.0.0.1<0>",
      "2024-01-01T00:00:00Z stdout F epoch 3 loss 1",
      "2024-01-01T00:00:00Z stdout F ",  // a container log's prefix alone
      "nodeA: ",
      "3: ",
      "#  Rank  0 Group  0 Pid   4321 on      nodeA device  0 [0x41] NVIDIA H100",
      "libfabric:4321:1700000000::core:core:fi_getinfo_():1138<warn> fi_getinfo: provider efa "
      "output empty list",
      "[1,0]<stdout>:[0m epoch 4",
      "  File \"/x.py\", line 3, in <module>",
      "warning: an epoch took longer than the one before it did by quite a lot of time ok",
      "a",
      "Jan  1 01:02:03 2024 epoch",
      // From an independent read: a repeat count behind trailing blanks,
      // tags with blanks inside, a tab in an old WARN's file:line, and
      // libfabric's line glued to a launcher's tag.
      "epoch 2 loss 0.5 [repeated 3x across cluster] ",
      "epoch 2 loss 0.5 [repeated 3x across cluster]\t",
      "[1,0][x ab ]<stdout>:",
      "< ab >:",
      "[x\tab\t]:",
      "[1,0][x ab ]<stdout>: #  Rank  0 Group  0 Pid   4321 on      nodeA device  0 [0x41] H100",
      "[1,0][x ab ]<stdout>: node1:2001:2002 [0] INFO NET : Using",
      "node1:1:2 [0] ab\tcd WARN Call to connect failed",
      "[1,0]<stdout>:libfabric:1:2::efa:core:f:1<warn> failed to open",
      "[rank3]:libfabric:1:2::efa:core:f:1<warn> failed to open",
  };
  for (const std::string& line : lines) {
    NcclLogSummary plain = ParseNcclLog(line + "\n" + line + "\n");
    NcclLogSummary full = ParseNcclLog(line + "\r\n" + line + "\r\n");
    EXPECT_EQ(plain.other_lines, full.other_lines) << line;
    EXPECT_EQ(plain.nccl_lines, full.nccl_lines) << line;
    EXPECT_EQ(plain.folded_repeats, full.folded_repeats) << line;
    EXPECT_EQ(plain.tests_ranks.size(), full.tests_ranks.size()) << line;
    EXPECT_EQ(plain.libfabric_empty_providers, full.libfabric_empty_providers) << line;
  }
  EXPECT_EQ(ParseNcclLog(lines[0] + "\n").other_lines, 1u);
  EXPECT_EQ(ParseNcclLog(lines[3] + "\n").other_lines, 0u);
  EXPECT_EQ(ParseNcclLog(lines[4] + "\n").folded_repeats, 3u);
  EXPECT_EQ(ParseNcclLog(lines[5] + "\n").nccl_lines, 1u);
  EXPECT_EQ(ParseNcclLog(lines[8] + "\n").other_lines, 0u);
}

TEST(NcclLog, LinesBefore23WithoutTheWordNcclAreNcclsToo) {
  NcclLogSummary log = ParseNcclLog(
      "[1,0]<stdout>:gpu-a:100:101 [0] INFO NET : Using interface eth0:10.0.0.1<0>\n"
      "[1,0]<stdout>:gpu-a:100:101 [0] INFO Using internal Network Socket\n"
      "[1,0]<stdout>:\n"
      "[1,0]<stdout>:gpu-a:100:102 [0] include/socket.h:185 WARN Call to connect failed : "
      "Connection refused\n"
      "[1,0]<stdout>:INFO: epoch 1\n"
      "[1,0]<stdout>:gpu-a:100:101 [0] INFORMATION is not a level\n");
  ASSERT_EQ(log.processes.size(), 1u);
  EXPECT_EQ(log.processes[0].host, "gpu-a");
  EXPECT_EQ(log.processes[0].network, "Socket");
  ASSERT_EQ(log.processes[0].bootstrap.size(), 1u);
  EXPECT_EQ(log.processes[0].bootstrap[0].name, "eth0");
  EXPECT_EQ(log.info_lines, 2u);
  EXPECT_EQ(log.warn_lines, 1u);
  EXPECT_EQ(log.nccl_lines, 3u);
  EXPECT_EQ(log.other_lines, 2u);
  ASSERT_EQ(log.peer_failures.size(), 1u);
  EXPECT_EQ(log.peer_failures[0].reason, "Connection refused");
}

TEST(NcclLog, The23SidebandInterfaceIsTheOobNotADevice) {
  NcclLogSummary log = ParseNcclLog(
      "a:1:1 [0] NCCL INFO NET/IB : Using interface eno2 for sideband communication\n"
      "a:1:1 [0] NCCL INFO NET/IB: [0] mlx5_4:1/IB \n"
      "a:1:1 [0] NCCL INFO NET/IB: [1 mlx5_5\n");
  ASSERT_EQ(log.processes.size(), 1u);
  ASSERT_EQ(log.processes[0].ib_oob.size(), 1u);
  EXPECT_EQ(log.processes[0].ib_oob[0].name, "eno2");
  ASSERT_EQ(log.processes[0].ib_devices.size(), 1u);
  EXPECT_EQ(log.processes[0].ib_devices[0].name, "mlx5_4:1/IB");
}

TEST(NcclLog, ManyCarriageReturnsAreManyLinesNotDeepCalls) {
  std::string line(16000, '\r');
  line += "gpu:1:2 [0] NCCL INFO Using network IB\n";
  NcclLogSummary log = ParseNcclLog(line);
  ASSERT_EQ(log.processes.size(), 1u);
  EXPECT_EQ(log.processes[0].network, "IB");
}

TEST(NcclLog, ATerminalsWrapIsJoinedBack) {
  // An 86-byte line a terminal 80 columns wide cut inside the OOB address.
  const std::string whole =
      "gpu:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB ens1f0np0:192.168.1.1<0>";
  ASSERT_EQ(whole.size(), 86u);
  // A wrapping terminal cuts many lines at its width: an earlier one was cut too.
  const std::string earlier = "gpu:1:2 [0] NCCL INFO " + std::string(58, 'x');
  ASSERT_EQ(earlier.size(), 80u);
  NcclLogSummary log =
      ParseNcclLog(earlier + "\n" + whole.substr(0, 80) + "\n" + whole.substr(80) + "\nepoch 1\n");
  EXPECT_EQ(log.joined_lines, 1u);
  ASSERT_EQ(log.processes.size(), 1u);
  ASSERT_EQ(log.processes[0].ib_oob.size(), 1u);
  EXPECT_EQ(log.processes[0].ib_oob[0].address, "192.168.1.1");
  EXPECT_EQ(log.other_lines, 1u);
  // Not held when a longer line came first: that log is not wrapped at 80.
  NcclLogSummary wide = ParseNcclLog(std::string(100, 'y') + "\n" + earlier + "\n" +
                                     whole.substr(0, 80) + "\n" + whole.substr(80) + "\n");
  // Nor when no other line had that width: a line of 80 bytes by chance,
  // then the script's own output.
  NcclLogSummary once = ParseNcclLog(whole.substr(0, 80) + "\nEpoch 1\n");
  EXPECT_EQ(once.joined_lines, 0u);
  EXPECT_EQ(once.other_lines, 1u);
  EXPECT_EQ(wide.joined_lines, 0u);
  EXPECT_EQ(wide.other_lines, 2u);
  ASSERT_EQ(wide.processes.size(), 1u);
  ASSERT_EQ(wide.processes[0].ib_oob.size(), 1u);
  EXPECT_NE(wide.processes[0].ib_oob[0].address, "192.168.1.1");  // left as cut
}

TEST(NcclLog, TheFirstWrappedLineAndLinesOfThreeRowsAreJoined) {
  // 80 columns: the first cut line is the first of its width, its rest opens
  // with a space; a later line takes three rows, its last a "word: ".
  const std::string plugin =
      "gpu-a:11:22 [0] NCCL INFO NET/Plugin : Plugin load (libnccl-net.so) returned 2 : "
      "libnccl-net.so: "
      "cannot open shared object file: No such file or directory";
  const std::string ib =
      "gpu-a:11:22 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB "
      "[3]mlx5_3:1/IB [4]mlx5_4:1/IB [5]mlx5_5:1/IB [6]mlx5_6:1/IB [RO]; OOB eth0:10.0.0.1<0>";
  auto rows = [](std::string line) {
    std::string out;
    for (; line.size() > 80; line = line.substr(80)) out += line.substr(0, 80) + "\n";
    return out + line + "\n";
  };
  ASSERT_EQ(plugin[80], ' ');
  ASSERT_GT(ib.size(), 160u);
  NcclLogSummary log = ParseNcclLog(rows(plugin) + "gpu-a:11:22 [0] NCCL INFO Using network IB\n" +
                                    rows(ib) + "epoch 1\n");
  EXPECT_EQ(log.joined_lines, 3u);
  EXPECT_EQ(log.other_lines, 1u);
  ASSERT_EQ(log.processes.size(), 1u);
  const NcclProcess& p = log.processes[0];
  EXPECT_EQ(p.plugin_failed, "");  // the default plugin absent, read whole
  EXPECT_EQ(p.network, "IB");
  EXPECT_EQ(p.ib_devices.size(), 7u);
  ASSERT_EQ(p.ib_oob.size(), 1u);
  EXPECT_EQ(p.ib_oob[0].address, "10.0.0.1");
  // The first line of a width, then a line longer than it: not wrapped.
  NcclLogSummary wide =
      ParseNcclLog(rows(plugin) + "gpu-a:11:22 [0] NCCL INFO " + std::string(90, 'z') + "\n");
  EXPECT_EQ(wide.joined_lines, 0u);
  EXPECT_EQ(wide.other_lines, 1u);
  // When the log ends, or the wait does, with nothing that wide again, the
  // cut itself tells: the row opens with the space the cut fell on.
  std::string quiet = rows(plugin);
  for (int i = 0; i < 40; ++i) quiet += "gpu-a:11:22 [0] NCCL INFO Using network IB\n";
  EXPECT_EQ(ParseNcclLog(quiet).joined_lines, 1u);
  NcclLogSummary single = ParseNcclLog(rows(plugin));
  EXPECT_EQ(single.joined_lines, 1u);
  ASSERT_EQ(single.processes.size(), 1u);
  EXPECT_EQ(single.processes[0].plugin_failed, "");
}

TEST(NcclLog, TheDefaultPluginAbsentInEachVersionsWordsIsNoFallback) {
  // Each NCCL version's words for "no libnccl-net.so": routine, no fallback;
  // a plugin named besides it that is not found is one.
  for (std::string words :
       {"NET/Plugin : No plugin found (libnccl-net.so), using internal implementation",
        "NET/Plugin : No plugin found, using internal implementation",
        "NET/Plugin : dlerror=libnccl-net.so: cannot open shared object file: No such file or "
        "directory No plugin found (libnccl-net.so), using internal implementation",
        "NET/Plugin: No plugin found (libnccl-net.so)",
        "NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.",
        "NET/Plugin: Could not find: libnccl-net.so. Using internal net plugin.",
        "NET/Plugin: Could not find: libnccl-net.so. ",
        "NET/Plugin: Could not find: libnccl-net.so."}) {
    NcclLogSummary log = ParseNcclLog("gpu-a:11:22 [0] NCCL INFO " + words + "\n");
    ASSERT_EQ(log.processes.size(), 1u) << words;
    EXPECT_EQ(log.processes[0].plugin_failed, "") << words;
  }
  NcclLogSummary named = ParseNcclLog(
      "gpu-a:11:22 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net-ofi.so libnccl-net.so. "
      "\n");
  ASSERT_EQ(named.processes.size(), 1u);
  EXPECT_EQ(named.processes[0].plugin_failed, "libnccl-net-ofi.so");
}

TEST(NcclLog, ASingleWrappedLineIsJoinedOnlyWhereItsCutShows) {
  // 100 columns, cut after "mlx5_3:": no message ends with a colon.
  const std::string ib =
      "gpu-b:3001:3002 [1] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB "
      "[3]mlx5_3:1/IB [RO]; OOB ens1f0np0:10.1.2.3<0>";
  NcclLogSummary log = ParseNcclLog(ib.substr(0, 100) + "\n" + ib.substr(100) + "\n");
  EXPECT_EQ(log.joined_lines, 1u);
  ASSERT_EQ(log.processes.size(), 1u);
  EXPECT_EQ(log.processes[0].ib_devices.size(), 4u);
  ASSERT_EQ(log.processes[0].ib_oob.size(), 1u);
  EXPECT_EQ(log.processes[0].ib_oob[0].address, "10.1.2.3");
  EXPECT_EQ(log.other_lines, 0u);
  // A "<" left open at the cut (in the OOB address) tells the same.
  const std::string oob =
      "gpu:1:2 [0] NCCL INFO Bootstrap : Using " + std::string(50, 'e') + ":10.0.0.1<0>";
  NcclLogSummary open = ParseNcclLog(oob.substr(0, 100) + "\n" + oob.substr(100) + "\n");
  EXPECT_EQ(open.joined_lines, 1u);
  EXPECT_EQ(open.other_lines, 0u);
  // A line of that width that ends whole, then the script's own output (a
  // word, a traceback's indented row), or another NCCL line: not joined.
  const std::string whole = "gpu:1:2 [0] NCCL INFO Using network IB " + std::string(61, 'x');
  ASSERT_EQ(whole.size(), 100u);
  for (const std::string& after :
       {std::string("epoch 1 loss 0.5"), std::string("  File \"train.py\", line 3"),
        std::string("gpu:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 1")}) {
    NcclLogSummary kept = ParseNcclLog(whole + "\n" + after + "\n");
    EXPECT_EQ(kept.joined_lines, 0u) << after;
  }
  const std::string colon = whole.substr(0, 99) + ":";
  NcclLogSummary next = ParseNcclLog(colon + "\ngpu:1:2 [0] NCCL INFO Using network IB\n");
  EXPECT_EQ(next.joined_lines, 0u);
}

TEST(NcclLog, ALogConsolesRepeatedMessageIsReadOnce) {
  NcclLogSummary log = ParseNcclLog(
      "2024-03-04T05:06:07.000Z | gpu:1:2 [0] NCCL INFO Using network IB | gpu:1:2 [0] NCCL INFO "
      "Using network IB\n"
      "2024-03-04T05:06:08.000Z\n"
      "gpu:1:2 [0] NCCL INFO threadThresholds 8/8/64 | 512/8/64 | 512 | 512\n");
  ASSERT_EQ(log.processes.size(), 1u);
  EXPECT_EQ(log.processes[0].network, "IB");
  EXPECT_EQ(log.other_lines, 0u);  // the timestamp on its own line is none
}

}  // namespace
}  // namespace stallscope
