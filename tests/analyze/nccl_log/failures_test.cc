// A failure is the verdict whatever its words (analyze/nccl_log/failures.h).
// The test nobody can tune to: every WARN(...) format string of NCCL's
// sources at seven release tags (tests/fixtures/nccl_logs/warn_formats/,
// extracted from NVIDIA/nccl), filled and put in a log whose init then fails
// (with NCCL's error-return lines after it, and without them: the process
// stops while its peer goes on), must give a critical finding that quotes it
// in the layer its file implies, never outranked by init_incomplete or a
// lost peer; the same WARN in a log where init completes and nothing stops
// gives no critical finding. Then the mechanism's parts one by one.
#include "analyze/nccl_log/failures.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "analyze/catalog.h"
#include "analyze/nccl_log/causes.h"
#include "analyze/nccl_log/rules.h"
#include "analyze/report.h"
#include "finding_matchers.h"
#include "formats/nccl_log/nccl_log.h"

namespace stallscope {
namespace {

struct WarnFormat {
  std::string tag;
  std::string path;  // "src/transport/net_ib.cc"
  int line = 0;
  std::string format;
};

std::vector<WarnFormat> ReadFormats(const std::string& name) {
  std::ifstream in(std::string(STALLSCOPE_FIXTURES) + "/nccl_logs/warn_formats/" + name);
  std::vector<WarnFormat> out;
  std::string row;
  while (std::getline(in, row)) {
    if (row.empty() || row[0] == '#') continue;
    std::stringstream fields(row);
    WarnFormat f;
    std::string line;
    std::getline(fields, f.tag, '\t');
    std::getline(fields, f.path, '\t');
    std::getline(fields, line, '\t');
    std::getline(fields, f.format);
    f.line = std::stoi(line);
    out.push_back(std::move(f));
  }
  return out;
}

// Every % field filled with a value of its kind.
std::string Fill(const std::string& format) {
  std::string out;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') {
      out += format[i];
      continue;
    }
    size_t j = i + 1;
    while (j < format.size() &&
           std::string_view("-+ #0123456789.*lhzjt").find(format[j]) != std::string_view::npos) {
      ++j;
    }
    if (j >= format.size()) break;
    switch (format[j]) {
      case '%':
        out += '%';
        break;
      case 's':
        out += "mlx5_0";
        break;
      case 'p':
        out += "0x55d0c0de";
        break;
      case 'c':
        out += 'c';
        break;
      case 'x':
      case 'X':
        out += "1f";
        break;
      case 'f':
      case 'g':
      case 'e':
        out += "1.5";
        break;
      default:
        out += "3";
        break;
    }
    i = j;
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == '\n')) out.pop_back();
  return out;
}

// The layer the test expects from the file alone, written here apart from
// the code's own table: "" where two layers are both right (bootstrap and
// the proxy handle the network and the ranks' set-up alike).
std::string ExpectedLayer(std::string path) {
  if (path.rfind("src/", 0) == 0) path = path.substr(4);
  for (const char* net : {"transport/net", "transport/coll_net", "misc/socket", "include/socket",
                          "misc/ibv", "include/ibv", "misc/mlx5", "misc/gdr", "include/gdr",
                          "plugin/net", "net.cc", "misc/ipcsocket"}) {
    if (path.rfind(net, 0) == 0) return "network";
  }
  if (path == "bootstrap.cc" || path == "proxy.cc") return "";
  if (path == "enqueue.cc" || path == "misc/argcheck.cc" || path == "group.cc") return "code";
  return "distributed";
}

// Whether a finding quotes the WARN: its words (a long enough part of them,
// as NCCL's parser keeps 200 bytes) or the FILE:LINE of its line.
bool Quotes(const Finding& f, const std::string& text, const std::string& place) {
  const std::string part = text.substr(0, 48);
  if (f.summary.find(part) != std::string::npos) return true;
  for (const Evidence& e : f.evidence) {
    const std::string* v = std::get_if<std::string>(&e.value);
    if (v && (v->find(part) != std::string::npos || *v == place)) return true;
  }
  return false;
}

std::string Head(const WarnFormat& f) {
  std::string file = f.path.rfind("src/", 0) == 0 ? f.path.substr(4) : f.path;
  return "nodeA:101:101 [0] " + file + ":" + std::to_string(f.line) + " NCCL WARN ";
}

const char kStart[] =
    "nodeA:101:101 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
    "nodeB:202:202 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>\n"
    "nodeA:101:101 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 commId 0x9 - "
    "Init START\n"
    "nodeB:202:202 [0] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 0 busId 1000 commId 0x9 - "
    "Init START\n";
// The WARN is line 5.
const char kPeerGoesOn[] = "nodeB:202:202 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] via NET/IB/0\n";

std::string FailingWithChain(const WarnFormat& f, const std::string& text) {
  std::string file = f.path.rfind("src/", 0) == 0 ? f.path.substr(4) : f.path;
  return std::string(kStart) + Head(f) + text + "\n" + "nodeA:101:101 [0] NCCL INFO " + file + ":" +
         std::to_string(f.line + 2) + " -> 3\n" +
         "nodeA:101:101 [0] NCCL INFO init.cc:1400 -> 3\n" + kPeerGoesOn;
}

// No error return; the peer goes on and then loses it.
std::string FailingStopped(const WarnFormat& f, const std::string& text) {
  return std::string(kStart) + Head(f) + text + "\n" + kPeerGoesOn +
         "nodeB:202:202 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by "
         "remote peer nodeA<4000>\n";
}

std::string Completing(const WarnFormat& f, const std::string& text) {
  return std::string(kStart) + Head(f) + text + "\n" + kPeerGoesOn +
         "nodeA:101:101 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] via NET/IB/0\n"
         "nodeA:101:101 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 commId 0x9 - "
         "Init COMPLETE\n"
         "nodeB:202:202 [0] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 0 busId 1000 commId 0x9 - "
         "Init COMPLETE\n";
}

struct Outcome {
  bool critical_quotes = false;  // a critical finding quotes the WARN
  std::string layer;             // that finding's
  std::string id;
  std::string verdict;
  bool verdict_quotes = false;
  bool any_critical = false;
};

Outcome Judge(const std::string& log, const std::string& text) {
  FindingsWithNotes r = CheckNcclLog(ParseNcclLog(log), std::nullopt, "job.log");
  Outcome o;
  for (const Finding& f : r.findings) {
    if (f.severity != Severity::kCritical) continue;
    o.any_critical = true;
    if (!o.critical_quotes && Quotes(f, text, "job.log:5")) {
      o.critical_quotes = true;
      o.layer = std::string(LayerName(f.layer));
      o.id = f.id;
    }
  }
  Report report =
      MakeReport(r.findings, {Layer::kNetwork, Layer::kDistributed, Layer::kCode}, r.notes);
  PreferNcclCause(report);
  o.verdict = report.verdict.finding;
  for (const Finding& f : r.findings) {
    if (f.id == o.verdict) o.verdict_quotes = Quotes(f, text, "job.log:5");
  }
  return o;
}

// The words NCCL falls back from (an IB device it could not open, a net
// plugin): without an error return after them, a process that stops there
// is not shown to have stopped because of them.
bool FallbackWords(const std::string& text) {
  return NcclWarningFallback(text) || NcclWarningBenign(text);
}

class EveryNcclWarn : public ::testing::TestWithParam<const char*> {};

TEST_P(EveryNcclWarn, FailureIsTheVerdictAndCarryingOnIsNot) {
  const std::vector<WarnFormat> formats = ReadFormats(GetParam());
  ASSERT_GT(formats.size(), 100u) << GetParam();
  size_t stopped_not_failed = 0;
  for (const WarnFormat& f : formats) {
    const std::string text = Fill(f.format);
    if (text.empty()) continue;
    SCOPED_TRACE(f.tag + " " + f.path + ":" + std::to_string(f.line) + " \"" + text + "\"");
    // Init fails after it, with NCCL's error-return lines.
    Outcome chained = Judge(FailingWithChain(f, text), text);
    EXPECT_TRUE(chained.critical_quotes);
    EXPECT_TRUE(chained.verdict_quotes) << "verdict " << chained.verdict;
    EXPECT_NE(chained.verdict, "distributed.init_incomplete");
    const std::string layer = ExpectedLayer(f.path);
    if (!layer.empty() && chained.critical_quotes) {
      EXPECT_EQ(chained.layer, layer) << chained.id;
    }
    // The process stops there while its peer goes on.
    Outcome stopped = Judge(FailingStopped(f, text), text);
    if (FallbackWords(text)) {
      stopped_not_failed += !stopped.critical_quotes;
    } else {
      EXPECT_TRUE(stopped.critical_quotes);
      EXPECT_NE(stopped.verdict, "distributed.init_incomplete");
    }
    // Init completes after it and nothing stops: no critical finding.
    Outcome carried = Judge(Completing(f, text), text);
    EXPECT_FALSE(carried.any_critical) << carried.verdict;
  }
  // The fallback words are few: most WARNs are judged by what followed.
  EXPECT_LT(stopped_not_failed * 20, formats.size()) << stopped_not_failed;
}

INSTANTIATE_TEST_SUITE_P(NcclReleases, EveryNcclWarn,
                         ::testing::Values("v2_4.tsv", "v2_7.tsv", "v2_12.tsv", "v2_18.tsv",
                                           "v2_21.tsv", "v2_23.tsv", "v2_27.tsv"));

FindingsWithNotes Check(const std::string& text) {
  return CheckNcclLog(ParseNcclLog(text), std::nullopt, "job.log");
}

std::string Verdict(const FindingsWithNotes& r) {
  Report report =
      MakeReport(r.findings, {Layer::kNetwork, Layer::kDistributed, Layer::kCode}, r.notes);
  PreferNcclCause(report);
  return report.verdict.finding;
}

TEST(NcclFailures, EveryIdIsInTheCatalog) {
  for (const char* id : {"network.nccl_error", "distributed.nccl_setup_error",
                         "code.nccl_usage_error", "distributed.nccl_warning"}) {
    const Rule* rule = FindRule(id);
    ASSERT_NE(rule, nullptr) << id;
    EXPECT_EQ(std::string(LayerName(rule->layer)),
              std::string(id).substr(0, std::string(id).find('.')));
  }
}

TEST(NcclFailures, TheParserKeepsWhereAndWhatFollowed) {
  NcclLogSummary log = ParseNcclLog(
      std::string(kStart) +
      "2024-05-01T10:00:00Z nodeA:101:101 [0] /build/nccl/src/transport/net_ib.cc:712 NCCL WARN "
      "NET/IB : mlx5_0:1 got async event : local catastrophic error\n"
      "nodeA:101:101 [0] NCCL INFO transport/net_ib.cc:714 -> 2\n"
      "nodeA:101:101 [0] NCCL INFO init.cc:1400 -> 2 (No such device)\n");
  ASSERT_EQ(log.processes.size(), 2u);
  ASSERT_EQ(log.processes[0].warns.size(), 1u);
  const NcclWarnOnProcess& w = log.processes[0].warns[0];
  EXPECT_EQ(w.source, "transport/net_ib.cc:712");
  EXPECT_EQ(w.line, 5u);
  EXPECT_EQ(w.time, "2024-05-01T10:00:00Z");
  EXPECT_EQ(w.chain_result, 2);
  EXPECT_EQ(w.chain_source, "transport/net_ib.cc:714");
  EXPECT_EQ(w.chain_line, 6u);
  EXPECT_FALSE(w.progress_after);
  EXPECT_FALSE(w.init_completed_after);
  EXPECT_EQ(log.processes[0].error_returns, 2u);
}

TEST(NcclFailures, ErrorReturnLines) {
  std::string_view source;
  int result = 0;
  EXPECT_TRUE(ParseNcclErrorReturn("init.cc:1270 -> 2", &source, &result));
  EXPECT_EQ(source, "init.cc:1270");
  EXPECT_EQ(result, 2);
  EXPECT_TRUE(ParseNcclErrorReturn("misc/socket.cc:484 -> 6 (Connection reset)", &source, &result));
  EXPECT_EQ(result, 6);
  EXPECT_TRUE(ParseNcclErrorReturn("bootstrap.cc:58 -> 3 [Async thread]", &source, &result));
  EXPECT_TRUE(ParseNcclErrorReturn("/opt/nccl/src/group.cc:73 -> 5", &source, &result));
  EXPECT_EQ(source, "group.cc:73");
  EXPECT_FALSE(ParseNcclErrorReturn("AllReduce: 1048576 Bytes -> Algo RING", &source, &result));
  EXPECT_FALSE(ParseNcclErrorReturn("Channel 00/0 : 0[0] -> 1[1] via P2P", &source, &result));
  EXPECT_FALSE(ParseNcclErrorReturn("init.cc -> 2", &source, &result));
  EXPECT_FALSE(ParseNcclErrorReturn("init.cc:12 -> x", &source, &result));
}

TEST(NcclFailures, UnknownWordsBeforeInitIncompleteAreTheVerdict) {
  // The shape of the wrong verdicts: a WARN in words no rule knows, then
  // init never completes and a peer is lost.
  auto r = Check(std::string(kStart) +
                 "nodeA:101:101 [0] graph/xml.cc:660 NCCL WARN Could not find real path of "
                 "/sys/class/pci_bus/0000:3b/../../0000:3b:00.0\n"
                 "nodeA:101:101 [0] NCCL INFO graph/xml.cc:662 -> 2\n"
                 "nodeA:101:101 [0] NCCL INFO init.cc:1600 -> 2\n"
                 "nodeB:202:202 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed "
                 "by remote peer nodeA<4000>\n"
                 "nodeB:202:202 [0] NCCL INFO misc/socket.cc:60 -> 6\n");
  const Finding* f = Find(r.findings, "distributed.nccl_setup_error");
  ASSERT_NE(f, nullptr) << Ids(r.findings);
  EXPECT_EQ(f->severity, Severity::kCritical);
  EXPECT_NE(f->summary.find("nodeA"), std::string::npos);
  EXPECT_NE(f->summary.find("rank 0"), std::string::npos);
  EXPECT_NE(f->summary.find("Could not find real path"), std::string::npos);
  EXPECT_EQ(EvidenceOf<std::string>(*f, "raised_at"), "graph/xml.cc:660");
  EXPECT_EQ(EvidenceOf<std::string>(*f, "result"), "ncclSystemError (2)");
  EXPECT_EQ(EvidenceOf<std::string>(*f, "first_at"), "job.log:5");
  EXPECT_EQ(Verdict(r), "distributed.nccl_setup_error");
  // The consequences are its evidence, no longer critical.
  const Finding* lost = Find(r.findings, "network.connect_failed");
  ASSERT_NE(lost, nullptr);
  EXPECT_EQ(lost->severity, Severity::kInfo);
  EXPECT_EQ(EvidenceOf<std::string>(*lost, "consequence_of"), "distributed.nccl_setup_error");
  const Finding* init = Find(r.findings, "distributed.init_incomplete");
  ASSERT_NE(init, nullptr);
  EXPECT_EQ(init->severity, Severity::kInfo);
  EXPECT_NE(EvidenceOf<std::string>(*f, "consequences").find("init_incomplete"), std::string::npos);
}

TEST(NcclFailures, AWarnNcclCarriedOnFromIsANote) {
  auto r = Check(std::string(kStart) +
                 "nodeA:101:101 [0] init.cc:120 NCCL WARN NCCL_WORK_FIFO_DEPTH=1000 is being "
                 "ignored\n" +
                 kPeerGoesOn +
                 "nodeA:101:101 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 "
                 "commId 0x9 - Init COMPLETE\n"
                 "nodeB:202:202 [0] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 0 busId 1000 "
                 "commId 0x9 - Init COMPLETE\n");
  const Finding* f = Find(r.findings, "distributed.nccl_warning");
  ASSERT_NE(f, nullptr) << Ids(r.findings);
  EXPECT_EQ(f->severity, Severity::kInfo);
  EXPECT_NE(EvidenceOf<std::string>(*f, "warnings").find("carried on"), std::string::npos);
  for (const Finding& g : r.findings) EXPECT_NE(g.severity, Severity::kCritical) << g.id;
}

TEST(NcclFailures, AnAsyncIbEventAfterInitIsNoFailure) {
  const std::string done =
      std::string(kStart) +
      "nodeA:101:101 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 commId 0x9 - "
      "Init COMPLETE\n"
      "nodeB:202:202 [0] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 0 busId 1000 commId 0x9 - "
      "Init COMPLETE\n";
  auto benign = Check(done +
                      "nodeA:101:120 [0] transport/net_ib.cc:91 NCCL WARN NET/IB : mlx5_0:1 Got "
                      "async event : GID table change\n");
  for (const Finding& g : benign.findings) EXPECT_NE(g.severity, Severity::kCritical) << g.id;
  // The same event with an error return after it and a watchdog timeout is one.
  auto fatal = Check(done +
                     "nodeA:101:120 [0] transport/net_ib.cc:91 NCCL WARN NET/IB : mlx5_0:1 Got "
                     "async event : port error\n"
                     "nodeA:101:120 [0] NCCL INFO transport/net_ib.cc:1200 -> 6\n");
  const Finding* f = Find(fatal.findings, "network.nccl_error");
  ASSERT_NE(f, nullptr) << Ids(fatal.findings);
  EXPECT_EQ(f->severity, Severity::kCritical);
  EXPECT_EQ(Verdict(fatal), "network.nccl_error");
}

TEST(NcclFailures, MisconfiguredRanksAreASetUpCause) {
  // Two processes claim rank 1 of 2: the root's bootstrap thread says so
  // and every rank waits in init.
  auto r = Check(
      "nodeA:101:101 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
      "nodeA:101:101 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 commId 0x9 - "
      "Init START\n"
      "nodeA:101:140 [0] bootstrap.cc:312 NCCL WARN Bootstrap Root : rank 1 of 2 ranks has "
      "already checked in\n"
      "nodeB:202:202 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>\n"
      "nodeB:202:202 [0] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 0 busId 1000 commId 0x9 - "
      "Init START\n"
      "nodeC:303:303 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.3<0>\n"
      "[E ProcessGroupNCCL.cpp:475] Watchdog caught collective operation timeout: "
      "WorkNCCL(SeqNum=1, OpType=ALLREDUCE) ran for 1800000 milliseconds before timing out.\n");
  const Finding* f = Find(r.findings, "distributed.nccl_setup_error");
  ASSERT_NE(f, nullptr) << Ids(r.findings);
  EXPECT_EQ(f->severity, Severity::kCritical);
  EXPECT_EQ(Verdict(r), "distributed.nccl_setup_error");
  // A rank outside the world size, from init.cc with ncclInvalidArgument.
  auto outside = Check(std::string(kStart) +
                       "nodeA:101:101 [0] init.cc:1750 NCCL WARN Invalid rank requested : 4/2\n"
                       "nodeA:101:101 [0] NCCL INFO init.cc:1760 -> 4\n" +
                       kPeerGoesOn);
  EXPECT_EQ(Verdict(outside), "distributed.nccl_setup_error") << Ids(outside.findings);
}

TEST(NcclFailures, WhereNcclRaisedItNamesTheLayer) {
  EXPECT_EQ(NcclFailureId("transport/net_ib.cc:80", -1, "x"), "network.nccl_error");
  EXPECT_EQ(NcclFailureId("transport/net_socket.cc:80", 3, "x"), "network.nccl_error");
  EXPECT_EQ(NcclFailureId("misc/socket.cc:80", -1, "x"), "network.nccl_error");
  EXPECT_EQ(NcclFailureId("", -1, "NET/OFI Unable to register memory"), "network.nccl_error");
  // A net plugin's own file (nccl-rdma-sharp-plugins), with or without its tag.
  EXPECT_EQ(NcclFailureId("ib_plugin.c:1615", -1, "NET/IB : Got completion from peer"),
            "network.nccl_error");
  EXPECT_EQ(NcclFailureId("p2p_plugin.c:80", -1, "x"), "network.nccl_error");
  EXPECT_EQ(NcclFailureId("", -1, "NET/IB : No device found."), "network.nccl_error");
  // NCCL's own file decides for its own WARNs; "profiler" holds no "ofi".
  EXPECT_EQ(NcclFailureId("graph/topo.cc:1316", -1, "NET/TOPO : Couldn't find net mlx5_0"),
            "distributed.nccl_setup_error");
  EXPECT_EQ(NcclFailureId("misc/profiler.cc:225", 3, "Profiler init failed"),
            "distributed.nccl_setup_error");
  EXPECT_EQ(NcclFailureId("proxy.cc:900", 2, "x"), "network.nccl_error");
  EXPECT_EQ(NcclFailureId("proxy.cc:900", 5, "Proxy: bad op"), "distributed.nccl_setup_error");
  EXPECT_EQ(NcclFailureId("bootstrap.cc:90", -1, "Message truncated : received 8 bytes"),
            "distributed.nccl_setup_error");
  EXPECT_EQ(NcclFailureId("bootstrap.cc:90", -1, "Bootstrap : no socket interface found"),
            "network.nccl_error");
  EXPECT_EQ(NcclFailureId("init.cc:90", 6, "x"), "network.nccl_error");
  EXPECT_EQ(NcclFailureId("init.cc:90", 3, "x"), "distributed.nccl_setup_error");
  EXPECT_EQ(NcclFailureId("misc/shmutils.cc:90", 2, "x"), "distributed.nccl_setup_error");
  EXPECT_EQ(NcclFailureId("enqueue.cc:90", 5, "x"), "code.nccl_usage_error");
  EXPECT_EQ(NcclFailureId("misc/argcheck.cc:9", 4, "x"), "code.nccl_usage_error");
  EXPECT_EQ(NcclFailureId("enqueue.cc:90", 1, "x"), "distributed.nccl_cuda_failure");
  EXPECT_EQ(NcclFailureId("misc/cudawrap.cc:9", 1, "x"), "distributed.nccl_cuda_failure");
}

TEST(NcclFailures, ACudaSideFailureInOtherWordsJoinsTheCudaRule) {
  auto r = Check(std::string(kStart) +
                 "nodeA:101:101 [0] misc/cudawrap.cc:188 NCCL WARN cuMemCreate failed with "
                 "out of memory\n"
                 "nodeA:101:101 [0] NCCL INFO misc/cudawrap.cc:190 -> 1\n" +
                 kPeerGoesOn);
  const Finding* f = Find(r.findings, "distributed.nccl_cuda_failure");
  ASSERT_NE(f, nullptr) << Ids(r.findings);
  EXPECT_NE(EvidenceOf<std::string>(*f, "errors").find("cuMemCreate"), std::string::npos);
  EXPECT_EQ(Find(r.findings, "distributed.nccl_warning"), nullptr);
  EXPECT_EQ(Verdict(r), "distributed.nccl_cuda_failure");
}

TEST(NcclFailures, PerProcessTheFirstFailureIsTheCause) {
  auto r = Check(std::string(kStart) +
                 "nodeA:101:101 [0] transport/shm.cc:120 NCCL WARN Error while creating shared "
                 "memory segment /dev/shm/nccl-x (size 9637888)\n"
                 "nodeA:101:101 [0] NCCL INFO transport/shm.cc:122 -> 2\n"
                 "nodeA:101:101 [0] proxy.cc:1300 NCCL WARN [Proxy Service 0] Failed to execute "
                 "operation Setup from rank 0, retcode 2\n"
                 "nodeA:101:101 [0] NCCL INFO proxy.cc:1310 -> 2\n" +
                 kPeerGoesOn);
  const Finding* f = Find(r.findings, "distributed.nccl_setup_error");
  ASSERT_NE(f, nullptr) << Ids(r.findings);
  EXPECT_NE(f->summary.find("/dev/shm"), std::string::npos);
  EXPECT_EQ(Find(r.findings, "network.nccl_error"), nullptr) << Ids(r.findings);
  EXPECT_EQ(Verdict(r), "distributed.nccl_setup_error");
}

TEST(NcclFailures, AWarnOnlyLogFailsOnTheJobsOwnError) {
  const std::string warn =
      "nodeA:101:101 [0] enqueue.cc:1430 NCCL WARN Trying to send to self without a matching "
      "recv\n";
  auto quiet = Check(warn);
  for (const Finding& g : quiet.findings) EXPECT_NE(g.severity, Severity::kCritical) << g.id;
  auto raised = Check(warn +
                      "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/"
                      "ProcessGroupNCCL.cpp:1275, invalid usage, NCCL version 2.18.1\n");
  const Finding* f = Find(raised.findings, "code.nccl_usage_error");
  ASSERT_NE(f, nullptr) << Ids(raised.findings);
  EXPECT_EQ(f->layer, Layer::kCode);
  EXPECT_EQ(Verdict(raised), "code.nccl_usage_error");
}

TEST(NcclFailures, AmongCausesOfOneRankTheFirstInTheLog) {
  auto r = Check(std::string(kStart) +
                 "nodeA:101:101 [0] misc/argcheck.cc:40 NCCL WARN AllReduce : invalid type 12\n"
                 "nodeA:101:101 [0] NCCL INFO enqueue.cc:1500 -> 4\n"
                 "nodeB:202:202 [0] transport/net_ib.cc:700 NCCL WARN NET/IB : ibv_modify_qp "
                 "failed with 110 Connection timed out\n"
                 "nodeB:202:202 [0] NCCL INFO transport/net_ib.cc:702 -> 2\n");
  ASSERT_NE(Find(r.findings, "code.nccl_usage_error"), nullptr) << Ids(r.findings);
  ASSERT_NE(Find(r.findings, "network.nccl_error"), nullptr) << Ids(r.findings);
  EXPECT_EQ(Verdict(r), "code.nccl_usage_error");
}

// From an independent read of the change: a job's teardown, other
// threads, later errors, many WARNs, a log that just ends, and time order
// within a process.
const char kBothDone[] =
    "nodeA:101:101 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 commId 0x9 - "
    "Init COMPLETE\n"
    "nodeB:202:202 [0] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 0 busId 1000 commId 0x9 - "
    "Init COMPLETE\n";

TEST(NcclFailures, ATeardownAbortIsNoFailureOfAWarnBeforeInitCompleted) {
  auto r = Check(std::string(kStart) +
                 "nodeA:101:101 [0] misc/nvmlwrap.cc:182 NCCL WARN "
                 "nvmlDeviceGetNvLinkRemoteDeviceType() failed: Not Supported\n" +
                 kPeerGoesOn + kBothDone + "epoch 0 step 10 loss 2.1\n" +
                 "nodeA:101:101 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - "
                 "Abort COMPLETE\n"
                 "nodeB:202:202 [0] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 0 busId 1000 - "
                 "Abort COMPLETE\n");
  for (const Finding& g : r.findings) EXPECT_NE(g.severity, Severity::kCritical) << g.id;
}

TEST(NcclFailures, AnErrorReturnBelongsToTheWarnOfItsThread) {
  // Thread 140 warns harmlessly and goes on; thread 141 fails.
  auto r = Check(std::string(kStart) +
                 "nodeA:101:140 [0] misc/nvmlwrap.cc:182 NCCL WARN nvml query failed: Not "
                 "Supported\n"
                 "nodeA:101:141 [0] transport/net_ib.cc:500 NCCL WARN NET/IB : ibv_reg_mr failed: "
                 "Cannot allocate memory\n"
                 "nodeA:101:140 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] via NET/IB/0\n"
                 "nodeA:101:141 [0] NCCL INFO transport/net.cc:700 -> 2\n"
                 "nodeA:101:141 [0] NCCL INFO init.cc:1400 -> 2\n" +
                 kPeerGoesOn);
  const Finding* f = Find(r.findings, "network.nccl_error");
  ASSERT_NE(f, nullptr) << Ids(r.findings);
  EXPECT_NE(f->summary.find("ibv_reg_mr"), std::string::npos);
  EXPECT_EQ(Find(r.findings, "distributed.nccl_setup_error"), nullptr) << Ids(r.findings);
  EXPECT_EQ(Verdict(r), "network.nccl_error");
}

TEST(NcclFailures, AJobErrorAfterTheJobWentOnIsNotTheWarnsFault) {
  // WARN level: a WARN at the start, then training, then a watchdog timeout.
  std::string log =
      "nodeA:101:101 [0] misc/nvmlwrap.cc:182 NCCL WARN nvml query failed: Not Supported\n";
  for (int i = 0; i < 20; ++i) log += "epoch 0 step " + std::to_string(i) + " loss 2.0\n";
  log +=
      "[E ProcessGroupNCCL.cpp:475] [Rank 0] Watchdog caught collective operation timeout: "
      "WorkNCCL(SeqNum=21, OpType=ALLREDUCE) ran for 1800000 milliseconds before timing out.\n";
  auto r = Check(log);
  for (const Finding& g : r.findings) EXPECT_NE(g.severity, Severity::kCritical) << g.id;
  // Its traceback right after it: the WARN is where it failed.
  auto raised = Check(
      "nodeA:101:101 [0] misc/shmutils.cc:72 NCCL WARN Error: failed to extend /dev/shm/nccl-x "
      "to 9637892 bytes\n"
      "Traceback (most recent call last):\n"
      "  File \"train.py\", line 41, in <module>\n"
      "    dist.barrier()\n"
      "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1275, unhandled "
      "system error, NCCL version 2.18.3\n");
  EXPECT_EQ(Verdict(raised), "distributed.nccl_setup_error") << Ids(raised.findings);
}

TEST(NcclFailures, ManyWarnsOfAProcessKeepItsFailure) {
  std::string log = kStart;
  for (int dev = 0; dev < 12; ++dev) {
    log += "nodeA:101:101 [0] misc/nvmlwrap.cc:" + std::to_string(100 + dev) +
           " NCCL WARN nvml query " + std::to_string(dev) + " failed: Not Supported\n";
    log += "nodeA:101:101 [0] NCCL INFO Setting affinity for GPU 0 to ffff\n";
  }
  log +=
      "nodeA:101:101 [0] transport/net_ib.cc:500 NCCL WARN NET/IB : ibv_reg_mr failed: Cannot "
      "allocate memory\n"
      "nodeA:101:101 [0] NCCL INFO transport/net.cc:700 -> 2\n";
  log += kPeerGoesOn;
  auto r = Check(log);
  EXPECT_EQ(Verdict(r), "network.nccl_error") << Ids(r.findings);
}

TEST(NcclFailures, ALogThatEndsAfterAWarnInInitIsNoFailure) {
  auto r = Check(std::string(kStart) +
                 "nodeA:101:101 [0] graph/xml.cc:663 NCCL WARN Could not find real path of "
                 "/sys/class/pci_bus/0000:3b/../../0000:3b:00.0\n" +
                 kPeerGoesOn);
  EXPECT_EQ(Find(r.findings, "distributed.nccl_setup_error"), nullptr) << Ids(r.findings);
}

TEST(NcclFailures, WithinAProcessTheFirstFailureIsTheVerdict) {
  auto r = Check(std::string(kStart) + kBothDone +
                 "nodeB:202:230 [0] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion "
                 "from peer 10.0.0.1<5000> with status=12 opcode=0 len=0 vendor err 129\n"
                 "nodeB:202:230 [0] NCCL INFO transport/net.cc:1302 -> 6\n"
                 "nodeB:202:202 [0] init.cc:1903 NCCL WARN Cuda failure 'driver shutting down'\n"
                 "nodeB:202:202 [0] NCCL INFO init.cc:1905 -> 1\n");
  EXPECT_EQ(Verdict(r), "network.nccl_error") << Ids(r.findings);
  const Finding* cuda = Find(r.findings, "distributed.nccl_cuda_failure");
  ASSERT_NE(cuda, nullptr);
  EXPECT_EQ(cuda->severity, Severity::kInfo);
  EXPECT_EQ(EvidenceOf<std::string>(*cuda, "consequence_of"), "network.nccl_error");
}

}  // namespace
}  // namespace stallscope
