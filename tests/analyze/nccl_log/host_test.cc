// NCCL logs joined to doctor and run: the CUDA runtime of the version
// string, the line marks fed in chunks, the host network findings with their
// file evidence (fixture logs of tests/fixtures/nccl_logs/), and the
// NCCL_DEBUG_FILE files found on a real directory.
#include "analyze/nccl_log/host.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "analyze/nccl_log/rules.h"
#include "core/file.h"
#include "formats/nccl_log/files.h"
#include "formats/nccl_log/nccl_log.h"

namespace stallscope {
namespace {

std::string FixturePath(const std::string& name) {
  return std::string(STALLSCOPE_FIXTURES) + "/nccl_logs/" + name;
}

std::string Fixture(const std::string& name) {
  Result<std::string> text = ReadFile(FixturePath(name));
  EXPECT_TRUE(text.ok()) << text.status().message();
  return text.ok() ? *text : "";
}

std::string EvidenceText(const Finding& f, std::string_view name) {
  for (const Evidence& e : f.evidence) {
    if (e.name != name) continue;
    if (auto* s = std::get_if<std::string>(&e.value)) return *s;
  }
  return "<missing " + std::string(name) + ">";
}

TEST(NcclCudaRuntime, FromTheVersionSuffixOfEveryFixture) {
  EXPECT_EQ(NcclCudaRuntime("2.18.3+cuda12.2"), "12.2");
  EXPECT_EQ(NcclCudaRuntime("2.10.3+cuda11.4"), "11.4");
  EXPECT_EQ(NcclCudaRuntime("2.18.3"), "");
  EXPECT_EQ(NcclCudaRuntime("2.18.3+cuda"), "");
  EXPECT_EQ(NcclCudaRuntime("2.18.3+cuda."), "");
  EXPECT_EQ(NcclCudaRuntime(""), "");
  EXPECT_EQ(NcclCudaDriverText(12020), "12.2");
  EXPECT_EQ(NcclCudaDriverText(11040), "11.4");
  EXPECT_EQ(NcclCudaDriverText(0), "");
  struct Want {
    const char* file;
    const char* runtime;
  };
  for (const Want& w : {Want{"v2_10_single_node_healthy.log", "11.4"},
                        Want{"v2_18_multinode_ib_healthy.log", "12.2"},
                        Want{"v2_24_single_node_lo_nvls.log", "12.6"},
                        Want{"v2_28_multinode_lo_refused.log", "12.8"}}) {
    NcclLogSummary log = ParseNcclLog(Fixture(w.file));
    ASSERT_FALSE(log.processes.empty()) << w.file;
    size_t with_version = 0;
    for (const NcclProcess& p : log.processes) {
      if (p.version.empty()) continue;
      ++with_version;
      EXPECT_EQ(NcclCudaRuntime(p.version), w.runtime) << w.file << " " << p.Name();
    }
    EXPECT_GT(with_version, 0u) << w.file;
  }
  // Two runtimes in one job (the version-mismatch fixture).
  NcclLogSummary mixed = ParseNcclLog(Fixture("v2_21_version_mismatch_init_hang.log"));
  std::vector<std::string> runtimes;
  for (const NcclProcess& p : mixed.processes) runtimes.push_back(NcclCudaRuntime(p.version));
  EXPECT_NE(std::find(runtimes.begin(), runtimes.end(), "12.4"), runtimes.end());
  EXPECT_NE(std::find(runtimes.begin(), runtimes.end(), "12.2"), runtimes.end());
}

TEST(NcclLineMarks, AnIbNeedleAfterTheSocketOneOnItsLineDoesNotCount) {
  // The fuzzer's find: both needles on one line, the socket's first. Fed
  // whole, in pieces of every size, the same answer: no IB line before it.
  const std::string text =
      "a:1:1 [0] NCCL INFO x\n"
      "a:1:1 [0] via NET/Socket NCCL INFO NET/IB : Using [0]mlx5_0:1/IB\n"
      "a:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB\n";
  for (size_t step = 1; step <= text.size(); ++step) {
    NcclLineMarks m;
    for (size_t at = 0; at < text.size(); at += step)
      m.Feed(std::string_view(text).substr(at, step));
    EXPECT_EQ(m.first_socket_line(), 2u) << step;
    EXPECT_EQ(m.first_ib_line(), 0u) << step;
  }
  NcclLineMarks before;
  before.Feed("a:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB via NET/Socket\n");
  EXPECT_EQ(before.first_ib_line(), 1u);  // the IB needle first on the line: it counts
}

TEST(NcclLineMarks, SameLinesWhateverTheChunking) {
  std::string text = Fixture("v2_18_socket_while_ib_found.log");
  // grep -n on the fixture: NET/IB first on line 17, "via NET/Socket" on 41.
  for (size_t chunk : {size_t{1}, size_t{5}, size_t{13}, size_t{14}, size_t{97}, text.size()}) {
    NcclLineMarks marks;
    for (size_t at = 0; at < text.size(); at += chunk) {
      marks.Feed(std::string_view(text).substr(at, chunk));
    }
    EXPECT_EQ(marks.first_ib_line(), 17u) << "chunk " << chunk;
    EXPECT_EQ(marks.first_socket_line(), 41u) << "chunk " << chunk;
  }
  // NET/IB only up to the socket line, where the scanner stops.
  std::string after = "x\nr via NET/Socket/0\nNET/IB : Using [0]mlx5_0:1/IB\n";
  for (size_t chunk : {size_t{1}, size_t{3}, after.size()}) {
    NcclLineMarks marks;
    for (size_t at = 0; at < after.size(); at += chunk) {
      marks.Feed(std::string_view(after).substr(at, chunk));
    }
    EXPECT_EQ(marks.first_socket_line(), 2u) << "chunk " << chunk;
    EXPECT_EQ(marks.first_ib_line(), 0u) << "chunk " << chunk;
  }
  NcclLineMarks none;
  none.Feed("no nccl here\nnor here\n");
  EXPECT_EQ(none.first_socket_line(), 0u);
  EXPECT_EQ(none.first_ib_line(), 0u);
}

TEST(NcclHostNetworkFindings, SocketsWhileTheLogShowsIbNameTheFileAndLine) {
  Result<NcclLogFile> log =
      ReadNcclLogFile(FixturePath("v2_18_socket_while_ib_found.log"), "--nccl-log");
  ASSERT_TRUE(log.ok()) << log.status().message();
  EXPECT_EQ(log->first_socket_line, 41u);
  // No host ports known: the log's own NET/IB lines show the RDMA devices.
  std::vector<Finding> findings = NcclHostNetworkFindings(*log, std::nullopt).findings;
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.id, "network.rdma_unused");
  EXPECT_EQ(f.layer, Layer::kNetwork);
  EXPECT_EQ(EvidenceText(f, "nccl_log"), log->path);
  EXPECT_EQ(EvidenceText(f, "nccl_log_line"),
            log->path + ":" + std::to_string(41) + " (first 'via NET/Socket')");
  EXPECT_EQ(EvidenceText(f, "nccl_ib_line"), log->path + ":17 (first 'NET/IB : Using')");
  EXPECT_NE(EvidenceText(f, "processes_on_sockets").find("gpu-a:4101"), std::string::npos);
  EXPECT_NE(DescribeNcclLogFile(*log).find("NCCL 2.18.3 (CUDA runtime 12.2)"), std::string::npos);
}

TEST(NcclHostNetworkFindings, LoopbackKeepsNetworkFindingsOnly) {
  Result<NcclLogFile> log =
      ReadNcclLogFile(FixturePath("v2_28_multinode_lo_refused.log"), "--nccl-log");
  ASSERT_TRUE(log.ok());
  std::vector<Finding> findings = NcclHostNetworkFindings(*log, std::nullopt).findings;
  std::vector<std::string> ids;
  for (const Finding& f : findings) {
    ids.push_back(f.id);
    EXPECT_EQ(f.layer, Layer::kNetwork) << f.id;
    EXPECT_EQ(EvidenceText(f, "nccl_log"), log->path);
  }
  EXPECT_NE(std::find(ids.begin(), ids.end(), "network.wrong_interface"), ids.end());
  // All of CheckNcclLog's distributed findings stay with `nccl-log`.
  for (const Finding& f : CheckNcclLog(log->summary, std::nullopt).findings) {
    bool kept = std::find(ids.begin(), ids.end(), f.id) != ids.end();
    EXPECT_EQ(kept, f.layer == Layer::kNetwork) << f.id;
  }
}

TEST(NcclLogFile, MissingFileNamesFlagAndFile) {
  Result<NcclLogFile> log = ReadNcclLogFile("/nonexistent/nccl.log", "--nccl-log");
  ASSERT_FALSE(log.ok());
  EXPECT_NE(log.status().message().find("--nccl-log /nonexistent/nccl.log"), std::string::npos);
  EXPECT_NE(log.status().message().find("No such file"), std::string::npos);
  Result<NcclLogFile> dir = ReadNcclLogFile("/", "--nccl-log");
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.status().message().find("is a directory"), std::string::npos);
}

TEST(NcclDebugFile, GlobExpandsHostAndPidLikeNccl) {
  EXPECT_EQ(NcclDebugFileGlob("/tmp/nccl.%h.%p.log", "gpu-a"), "/tmp/nccl.gpu-a.[0-9]*.log");
  EXPECT_EQ(NcclDebugFileGlob("log[1]*%q", "h"), "log\\[1]\\*%q");
  EXPECT_EQ(NcclDebugFileGlob("plain.log", "h"), "plain.log");
}

TEST(NcclDebugFile, WrittenMeansNewReplacedTruncatedGrownOrModified) {
  const std::vector<DebugFileState> before = {
      {"/l/untouched", 10, 100, 5},           {"/l/replaced", 11, 100, 5},
      {"/l/truncated", 12, 100, 5},           {"/l/grown", 13, 100, 5},
      {"/l/same-size-rewritten", 14, 100, 5}, {"/l/deleted", 15, 100, 5}};
  const std::vector<DebugFileState> after = {
      {"/l/grown", 13, 4000, 9},   {"/l/new", 20, 10, 9},
      {"/l/replaced", 21, 100, 5}, {"/l/same-size-rewritten", 14, 100, 6},
      {"/l/truncated", 12, 40, 5}, {"/l/untouched", 10, 100, 5}};
  EXPECT_EQ(DebugFilesWritten(before, after),
            (std::vector<std::string>{"/l/grown", "/l/new", "/l/replaced", "/l/same-size-rewritten",
                                      "/l/truncated"}));
  EXPECT_EQ(DebugFilesWritten({}, {{"/l/a", 1, 0, 0}}), std::vector<std::string>{"/l/a"});
  EXPECT_TRUE(DebugFilesWritten(before, {}).empty());
}

// The three cases a run meets, on real files and with no clock involved: a
// stale file left alone, a stale file the job overwrites at the same path (a
// pattern without %p), and a new one; and a file of another host.
TEST(NcclDebugFile, TellsTheJobsFilesFromStaleOnesWithoutClocks) {
  char dir_template[] = "/tmp/stallscope-nccl-files-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  std::string dir = dir_template;
  auto write = [](const std::string& path, const char* text) {
    FILE* f = fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    fputs(text, f);
    fclose(f);
  };
  write(dir + "/nccl.hostA.100.log", "an older run's log\n");
  write(dir + "/fixed.hostA.log", "an older run's log, at a path without %p\n");
  std::vector<DebugFileState> with_pid = ListNcclDebugFiles(dir + "/nccl.%h.%p.log", "hostA");
  std::vector<DebugFileState> fixed = ListNcclDebugFiles(dir + "/fixed.%h.log", "hostA");
  ASSERT_EQ(with_pid.size(), 1u);
  ASSERT_EQ(fixed.size(), 1u);
  // The job: a new file for its pid, another host's, and the fixed path overwritten.
  write(dir + "/nccl.hostA.4242.log", "NCCL INFO\n");
  write(dir + "/nccl.hostB.4243.log", "NCCL INFO\n");
  write(dir + "/nccl.hostA.x.log", "NCCL INFO\n");  // no pid there
  write(dir + "/fixed.hostA.log", "NCCL INFO\n");
  EXPECT_EQ(DebugFilesWritten(with_pid, ListNcclDebugFiles(dir + "/nccl.%h.%p.log", "hostA")),
            std::vector<std::string>{dir + "/nccl.hostA.4242.log"});
  EXPECT_EQ(DebugFilesWritten(fixed, ListNcclDebugFiles(dir + "/fixed.%h.log", "hostA")),
            std::vector<std::string>{dir + "/fixed.hostA.log"});
  // Nothing written: nothing is the job's.
  std::vector<DebugFileState> now = ListNcclDebugFiles(dir + "/nccl.%h.%p.log", "hostA");
  EXPECT_TRUE(DebugFilesWritten(now, ListNcclDebugFiles(dir + "/nccl.%h.%p.log", "hostA")).empty());
  for (const char* name : {"nccl.hostA.100.log", "nccl.hostA.4242.log", "nccl.hostB.4243.log",
                           "nccl.hostA.x.log", "fixed.hostA.log"}) {
    unlink((dir + "/" + name).c_str());
  }
  rmdir(dir.c_str());
}

}  // namespace
}  // namespace stallscope
