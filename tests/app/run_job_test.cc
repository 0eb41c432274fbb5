// The steps of `run` around the recording loop (app/run_job.h) on fixture
// roots and temporary files: the run file's name from the root's host name,
// the layout's checks before anything starts, the run file and its baseline
// taken under a fixture root, the record options of a layout, the NCCL logs
// a job wrote, and what `run` concluded kept in (or, when the file refuses
// it, returned from) the run file.
#include "app/run_job.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "store/run_reader.h"

namespace stallscope {
namespace {

namespace fs = std::filesystem;
const std::string kFixtures = STALLSCOPE_FIXTURES;

class RunJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/stallscope_app_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  void Write(const std::string& name, const std::string& text) const {
    fs::create_directories(fs::path(Path(name)).parent_path());
    std::ofstream(Path(name), std::ios::binary) << text;
  }
  std::string dir_;
};

EnvLookup Env(std::map<std::string, std::string> vars) {
  return [vars](std::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

Finding Raised(const std::string& id) {
  Finding f;
  f.id = id;
  f.layer = Layer::kNetwork;
  f.severity = Severity::kWarning;
  f.summary = id + " seen";
  return f;
}

TEST_F(RunJobTest, RunFileNamedAfterTheRootsHost) {
  Write("root/proc/sys/kernel/hostname", "trainer07.cluster.example\n");
  Root root(Path("root"));
  RunRequest request;
  request.out = "runs/%h-node%r.db";
  Result<std::string> named = RunFilePath(root, request, 3, true);
  ASSERT_TRUE(named.ok()) << named.status().message();
  EXPECT_EQ(*named, "runs/trainer07-node3.db");
  request.out.clear();
  named = RunFilePath(root, request, 1, true);
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(named->rfind("stallscope-run-trainer07-node1-", 0), 0u) << *named;
  EXPECT_EQ(named->substr(named->size() - 3), ".db");
  named = RunFilePath(root, request, 0, false);
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(named->find("-node"), std::string::npos) << *named;
  request.out = "x-%q.db";  // a typo never becomes a file name
  EXPECT_FALSE(RunFilePath(root, request, 0, false).ok());
}

TEST(RunLayout, NodeFlagsWithoutProcsAreRefused) {
  RunRequest request;
  request.nnodes = 2;
  Result<std::optional<NodeLayout>> layout = ResolveRunLayout(request, Env({}));
  ASSERT_FALSE(layout.ok());
  EXPECT_EQ(layout.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(layout.status().message().find("--nnodes"), std::string::npos);
  request.nnodes.reset();
  layout = ResolveRunLayout(request, Env({}));
  ASSERT_TRUE(layout.ok());
  EXPECT_FALSE(layout->has_value());  // the command starts its ranks itself
}

TEST(RunLayout, SrunPlacesTheNodeAndAMasterThatDoesNotResolveIsRefused) {
  RunRequest request;
  request.procs = 4;
  Result<std::optional<NodeLayout>> layout =
      ResolveRunLayout(request, Env({{"SLURM_STEP_ID", "0"},
                                     {"SLURM_NODEID", "1"},
                                     {"SLURM_NNODES", "2"},
                                     {"SLURM_NTASKS", "2"},
                                     {"SLURM_JOB_NODELIST", "localhost"},
                                     {"SLURM_JOB_ID", "77"}}));
  ASSERT_TRUE(layout.ok()) << layout.status().message();
  ASSERT_TRUE(layout->has_value());
  EXPECT_EQ((*layout)->node_rank, 1);
  EXPECT_EQ((*layout)->world_size(), 8);
  EXPECT_EQ((*layout)->master_addr, "localhost");
  request.master_addr = "no-such-host.invalid";
  request.nnodes = 2;
  request.node_rank = 0;
  layout = ResolveRunLayout(request, Env({}));
  ASSERT_FALSE(layout.ok());
  EXPECT_NE(layout.status().message().find("--master-addr no-such-host.invalid"), std::string::npos)
      << layout.status().message();
}

TEST(RunLayout, RecordOptionsFollowTheNodesPlace) {
  NodeLayout l;
  l.procs = 2;
  l.nnodes = 3;
  l.node_rank = 0;
  l.master_addr = "10.0.0.1";
  l.source = "flags";
  RecordOptions first = RunRecordOptions(l, 29500);
  EXPECT_TRUE(first.serve_clock);
  EXPECT_EQ(first.clock_port, 29500);
  EXPECT_EQ(first.node.world_size, 6);
  EXPECT_EQ(first.node.master_port, 29500);
  EXPECT_FALSE(first.node_from_ranks);
  l.node_rank = 2;
  RecordOptions last = RunRecordOptions(l, 29500);
  EXPECT_FALSE(last.serve_clock);
  EXPECT_EQ(last.clock_peer, "10.0.0.1");
  EXPECT_EQ(last.node.node_rank, 2);
  l.nnodes = 1;
  l.node_rank = 0;
  RecordOptions one = RunRecordOptions(l, 40000);
  EXPECT_FALSE(one.serve_clock);
  EXPECT_TRUE(one.clock_peer.empty());
  EXPECT_EQ(one.clock_port, 0);
  RecordOptions launcher = RunRecordOptions(std::nullopt, 0);
  EXPECT_TRUE(launcher.node_from_ranks);
  ASSERT_TRUE(launcher.interface_toward);
  EXPECT_EQ(launcher.interface_toward("127.0.0.1"), "");  // loopback carries no node's traffic
}

TEST_F(RunJobTest, RunFileAndBaselineFromAFixtureHost) {
  Root root(kFixtures + "/live_debian12");
  RunRequest request;
  request.interval_seconds = 0.5;
  std::optional<RunWriter> writer;
  Result<RunInfo> info = PrepareRunFile(root, request, Path("r.db"), writer);
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_EQ(info->mem_total_bytes, 24683620ull * 1024);  // the fixture's MemTotal
  EXPECT_DOUBLE_EQ(info->interval_seconds, 0.5);
  ASSERT_TRUE(writer->Close().ok());
  Result<std::string> baseline = ReadBaseline(Path("r.db"));
  ASSERT_TRUE(baseline.ok()) << baseline.status().message();
  EXPECT_NE(baseline->find(std::to_string(24683620ull * 1024)), std::string::npos);

  // An existing file is kept without --force; a bad interval makes no file.
  std::optional<RunWriter> again;
  Result<RunInfo> kept = PrepareRunFile(root, request, Path("r.db"), again);
  ASSERT_FALSE(kept.ok());
  EXPECT_NE(kept.status().message().find(Path("r.db")), std::string::npos);
  request.interval_seconds = 0.01;
  std::optional<RunWriter> none;
  Result<RunInfo> bad = PrepareRunFile(root, request, Path("bad.db"), none);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--interval 0.01"), std::string::npos);
  EXPECT_FALSE(fs::exists(Path("bad.db")));
}

TEST_F(RunJobTest, NcclLogsTheJobWroteAndOnesThatCannotBeRead) {
  Write("root/proc/sys/kernel/hostname", "nodeA\n");
  Root root(Path("root"));
  Write("old-nodeA.log", "nodeA:1:1 [0] NCCL INFO NCCL version 2.18.1+cuda12.1\n");
  const std::string pattern = Path("%h.%p.log");
  // Before the job: one file of another pattern, none of this one.
  std::vector<DebugFileState> before = ListNcclDebugFiles(pattern, "nodeA");
  EXPECT_TRUE(before.empty());
  Write("nodeA.4242.log", "nodeA:4242:4250 [0] NCCL INFO NCCL version 2.18.1+cuda12.1\n");
  RunRequest request;
  request.nccl_logs = {Path("missing.log")};
  std::vector<std::string> notes;
  std::FILE* err = std::tmpfile();
  std::vector<NcclLogFile> logs = ReadJobNcclLogs(root, request, pattern, before, notes, err);
  ASSERT_EQ(logs.size(), 1u);
  EXPECT_EQ(logs[0].path, Path("nodeA.4242.log"));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("missing.log"), std::string::npos) << notes[0];
  std::rewind(err);
  char line[512] = {};
  ASSERT_NE(std::fgets(line, sizeof line, err), nullptr);
  EXPECT_NE(std::string(line).find("missing.log"), std::string::npos);
  std::fclose(err);
  // NCCL_DEBUG_FILE set, the job wrote nothing: said as a note.
  notes.clear();
  request.nccl_logs.clear();
  std::vector<DebugFileState> now = ListNcclDebugFiles(pattern, "nodeA");
  logs = ReadJobNcclLogs(root, request, pattern, now, notes, stderr);
  EXPECT_TRUE(logs.empty());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("wrote no such file"), std::string::npos) << notes[0];
}

TEST_F(RunJobTest, ConclusionsKeptOrReturnedWhenTheFileRefusesThem) {
  Result<RunWriter> writer = RunWriter::Create(Path("k.db"), false);
  ASSERT_TRUE(writer.ok()) << writer.status().message();
  FindingsWithNotes traces{{Raised("code.sync_in_step")}, {"--profile 2:4: 1 rank trace(s)"}};
  FindingsWithNotes logs{{Raised("network.nccl_socket_fallback")}, {"nccl log a.log"}};
  FindingsWithNotes dumps{{Raised("distributed.hang")}, {"flight-recorder: 4 dumps"}};
  FindingsWithNotes unsaved = KeepRunConclusions(*writer, traces, logs, dumps, stderr);
  EXPECT_TRUE(unsaved.findings.empty());
  EXPECT_TRUE(unsaved.notes.empty());
  ASSERT_TRUE(writer->Close().ok());
  Result<StoredFindings> stored = ReadStoredFindings(Path("k.db"));
  ASSERT_TRUE(stored.ok()) << stored.status().message();
  ASSERT_EQ(stored->findings.size(), 3u);

  // A closed file keeps nothing: every source comes back, none lost.
  FindingsWithNotes back = KeepRunConclusions(*writer, traces, logs, dumps, stderr);
  ASSERT_EQ(back.findings.size(), 3u);
  EXPECT_EQ(back.findings[0].id, "code.sync_in_step");
  EXPECT_EQ(back.findings[1].id, "network.nccl_socket_fallback");
  EXPECT_EQ(back.findings[2].id, "distributed.hang");
  EXPECT_EQ(back.notes.size(), 3u);
  // Without traces or dumps, only the logs' come back.
  back = KeepRunConclusions(*writer, std::nullopt, logs, {}, stderr);
  ASSERT_EQ(back.findings.size(), 1u);
}

}  // namespace
}  // namespace stallscope
