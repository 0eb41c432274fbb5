// The Slurm side's settings, paths, job lines and task-prolog lines
// (app/slurm_job.h). The prolog and epilog themselves run under a real
// Slurm in tests/e2e/slurm.py.
#include "app/slurm_job.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <map>

namespace stallscope {
namespace {

namespace fs = std::filesystem;

EnvLookup Env(std::map<std::string, std::string> vars) {
  return [vars](std::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

// The prolog's environment, as slurmd 22.05 gives it (names and values
// taken from a real prolog's `env`).
std::map<std::string, std::string> PrologVars() {
  return {{"SLURM_JOB_ID", "17"},
          {"SLURM_JOB_UID", "1001"},
          {"SLURM_JOB_GID", "1002"},
          {"SLURM_JOB_USER", "ada"},
          {"SLURM_JOB_WORK_DIR", "/home/ada/exp"},
          {"SLURMD_NODENAME", "gpu3"},
          {"SLURM_NODELIST", "gpu[3-4]"},
          {"SLURM_JOB_PARTITION", "debug"},
          {"SLURM_JOB_RESTART_COUNT", "0"},
          {"SLURM_SCRIPT_CONTEXT", "prolog_slurmd"}};
}

TEST(SlurmSettings, DefaultsWhenEmptyAndEveryKeyRead) {
  Result<SlurmSettings> empty = ParseSlurmSettings("", "f");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->output, "%w/stallscope-%j");
  EXPECT_EQ(empty->state_dir, "/run/stallscope");
  Result<SlurmSettings> s = ParseSlurmSettings(
      "# a comment\n\noutput = /scratch/%u/stallscope-%j   # trailing\n"
      "state_dir=/var/run/ss\ninterval = 0.5\nstop_wait = 3\nstart_wait = 2\nmerge_wait = 30\n",
      "slurm.conf");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->output, "/scratch/%u/stallscope-%j");
  EXPECT_EQ(s->state_dir, "/var/run/ss");
  EXPECT_EQ(s->interval_seconds, 0.5);
  EXPECT_EQ(s->stop_wait_seconds, 3);
  EXPECT_EQ(s->start_wait_seconds, 2);
  EXPECT_EQ(s->merge_wait_seconds, 30);
}

TEST(SlurmSettings, ErrorsNameTheFileLineAndKey) {
  struct Case {
    const char* text;
    const char* says;
  } cases[] = {
      {"output /x\n", "slurm.conf:1"},        {"\n\nspeed = 3\n", "slurm.conf:3"},
      {"speed = 3\n", "unknown key 'speed'"}, {"interval = fast\n", "interval"},
      {"interval = 0\n", "more than 0"},      {"interval = -1\n", "more than 0"},
      {"stop_wait = 1e9\n", "at most 86400"}, {"output = relative/%j\n", "absolute path"},
      {"state_dir =\n", "absolute path"},
  };
  for (const Case& c : cases) {
    Result<SlurmSettings> s = ParseSlurmSettings(c.text, "slurm.conf");
    ASSERT_FALSE(s.ok()) << c.text;
    EXPECT_NE(s.status().message().find(c.says), std::string::npos)
        << c.text << " -> " << s.status().message();
  }
}

TEST(SlurmSettings, FolderPatternExpands) {
  EXPECT_EQ(*ExpandSlurmFolder("%w/stallscope-%j", "/home/a/x", "12", "a"),
            "/home/a/x/stallscope-12");
  EXPECT_EQ(*ExpandSlurmFolder("/s/%u/%j/100%%", "/w", "9", "bob"), "/s/bob/9/100%");
  EXPECT_FALSE(ExpandSlurmFolder("/s/%h", "/w", "9", "b").ok());
  EXPECT_FALSE(ExpandSlurmFolder("/s/%", "/w", "9", "b").ok());
}

TEST(SlurmJobEnv, ReadsThePrologsEnvironment) {
  Result<SlurmJobEnv> job = ReadSlurmJobEnv(Env(PrologVars()));
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->id, "17");
  EXPECT_EQ(job->uid, 1001u);
  EXPECT_EQ(job->gid, 1002u);
  EXPECT_EQ(job->user, "ada");
  EXPECT_EQ(job->node, "gpu3");
  EXPECT_EQ(job->node_list, "gpu[3-4]");
  for (const char* missing : {"SLURM_JOB_ID", "SLURM_JOB_UID", "SLURM_JOB_WORK_DIR"}) {
    auto vars = PrologVars();
    vars.erase(missing);
    Result<SlurmJobEnv> without = ReadSlurmJobEnv(Env(vars));
    ASSERT_FALSE(without.ok()) << missing;
    EXPECT_NE(without.status().message().find(missing), std::string::npos);
  }
  auto bad = PrologVars();
  bad["SLURM_JOB_UID"] = "root";
  EXPECT_FALSE(ReadSlurmJobEnv(Env(bad)).ok());
  bad = PrologVars();
  bad["SLURM_JOB_ID"] = "17/../../etc";
  EXPECT_FALSE(ReadSlurmJobEnv(Env(bad)).ok());
}

TEST(SlurmJobEnv, PathsPerNodeAndPerRequeuedTry) {
  SlurmSettings settings;
  Result<SlurmJobEnv> job = ReadSlurmJobEnv(Env(PrologVars()));
  ASSERT_TRUE(job.ok());
  Result<SlurmJobPaths> p = PathsOfSlurmJob(settings, *job);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->folder, "/home/ada/exp/stallscope-17");
  EXPECT_EQ(p->run_file, "/home/ada/exp/stallscope-17/gpu3.db");
  EXPECT_EQ(p->log_file, "/home/ada/exp/stallscope-17/gpu3.log");
  EXPECT_EQ(p->done_file, "/home/ada/exp/stallscope-17/gpu3.done");
  EXPECT_EQ(p->socket_dir, "/run/stallscope/job-17");
  EXPECT_EQ(p->job_line, "/run/stallscope/jobs/17");
  job->restart_count = 2;  // a requeued job keeps its first try's file
  EXPECT_EQ(PathsOfSlurmJob(settings, *job)->run_file, "/home/ada/exp/stallscope-17/gpu3.r2.db");
  job->node = "../x";
  EXPECT_FALSE(PathsOfSlurmJob(settings, *job).ok());
}

TEST(SlurmJobLine, KeepsTheJobAndTheRecordersPid) {
  auto vars = PrologVars();
  vars["SLURM_JOB_CPUS_PER_NODE"] = "8";
  vars["SLURM_JOB_GPUS"] = "0,1";
  Result<SlurmJobEnv> job = ReadSlurmJobEnv(Env(vars));
  ASSERT_TRUE(job.ok());
  const std::string text = FormatSlurmJobLine(LineOfSlurmJob(*job, 4321));
  EXPECT_NE(text.find("job_id=17\n"), std::string::npos);
  EXPECT_NE(text.find("user=ada\n"), std::string::npos);
  EXPECT_NE(text.find("gpus=0,1\n"), std::string::npos);
  Result<SlurmJobLine> line = ParseSlurmJobLine(text, "jobs/17");
  ASSERT_TRUE(line.ok()) << line.status().ToString();
  EXPECT_EQ(line->recorder_pid, 4321);
  EXPECT_EQ(line->uid, 1001);
  EXPECT_EQ(line->partition, "debug");
  EXPECT_EQ(line->nodes, "gpu[3-4]");
  EXPECT_EQ(line->cpus, "8");
  // What cannot be a running job's line is named.
  for (const char* bad : {"", "user=x\n", "job_id=1x\n", "job_id=1\nuid=root\n",
                          "job_id=1\nrecorder_pid=-3\n", "job_id=1\nrecorder_pid=99999999999\n"}) {
    Result<SlurmJobLine> refused = ParseSlurmJobLine(bad, "jobs/1");
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_NE(refused.status().message().find("jobs/1"), std::string::npos);
  }
}

TEST(SlurmTaskProlog, TheSocketOnlyWhereARecorderListens) {
  std::string pattern = ::testing::TempDir() + "slurm_state_XXXXXX";
  ASSERT_NE(mkdtemp(pattern.data()), nullptr);
  SlurmSettings settings;
  settings.state_dir = pattern;
  auto vars = std::map<std::string, std::string>{{"SLURM_JOB_ID", "5"}};
  // No recorder: the hook is importable, and records nothing.
  EXPECT_EQ(SlurmTaskPrologLines(settings, Env(vars), "/h", ""),
            (std::vector<std::string>{"export PYTHONPATH=/h"}));
  const std::string dir = pattern + "/job-5";
  ASSERT_EQ(mkdir(dir.c_str(), 0700), 0);
  int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
  ASSERT_GE(fd, 0);
  struct sockaddr_un addr {};
  addr.sun_family = AF_UNIX;
  const std::string socket_path = dir + "/hook.sock";
  ASSERT_LT(socket_path.size(), sizeof addr.sun_path);
  std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  std::vector<std::string> lines = SlurmTaskPrologLines(settings, Env(vars), "/h", "/h/lib.so");
  EXPECT_EQ(lines,
            (std::vector<std::string>{"export PYTHONPATH=/h", "export STALLSCOPE_CRC32C=/h/lib.so",
                                      "export STALLSCOPE_SOCKET=" + socket_path}));
  // The task's own PYTHONPATH stays, after the hook's (Slurm expands nothing).
  vars["PYTHONPATH"] = "/mine:/more";
  lines = SlurmTaskPrologLines(settings, Env(vars), "/h", "");
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0], "export PYTHONPATH=/h:/mine:/more");
  // Another job's task, and a malformed id, get no socket.
  EXPECT_EQ(SlurmTaskPrologLines(settings, Env({{"SLURM_JOB_ID", "6"}}), "/h", "").size(), 1u);
  EXPECT_EQ(SlurmTaskPrologLines(settings, Env({{"SLURM_JOB_ID", "../job-5"}}), "/h", "").size(),
            1u);
  close(fd);
  fs::remove_all(pattern);
}

TEST(SlurmJobReport, AFolderWithoutRunFilesIsNamed) {
  std::string pattern = ::testing::TempDir() + "slurm_empty_XXXXXX";
  ASSERT_NE(mkdtemp(pattern.data()), nullptr);
  Result<RunAnalysis> run = WriteSlurmJobReport(pattern);
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.status().message().find(pattern), std::string::npos);
  EXPECT_FALSE(fs::exists(pattern + "/report.txt"));
  fs::remove_all(pattern);
}

}  // namespace
}  // namespace stallscope
