// Which processes are a Slurm job's (probe/slurm_job.h), and the process
// sampler that adopts them (probe/process_sampler.h's adopt), on a copy of
// the fixture tree with cgroup and environ files written in.
#include "probe/slurm_job.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "probe/process_sampler.h"
#include "proc_tree_copy.h"

namespace stallscope {
namespace {

namespace fs = std::filesystem;
using namespace std::string_literals;

TEST(SlurmJob, CgroupV1AndV2LayoutsNameTheJob) {
  // cgroup v1 (task/cgroup): one line per hierarchy.
  const std::string v1 =
      "12:memory:/slurm/uid_1001/job_4242/step_0/task_1\n"
      "11:freezer:/slurm/uid_1001/job_4242/step_0\n"
      "0::/\n";
  EXPECT_TRUE(CgroupNamesSlurmJob(v1, "4242"));
  EXPECT_FALSE(CgroupNamesSlurmJob(v1, "424"));  // a prefix of the id is another job
  EXPECT_FALSE(CgroupNamesSlurmJob(v1, "42421"));
  // cgroup v2 (Slurm 22.05+): the stepd scope holds the jobs.
  const std::string v2 = "0::/system.slice/slurmstepd.scope/job_77/step_batch/user/task_0\n";
  EXPECT_TRUE(CgroupNamesSlurmJob(v2, "77"));
  EXPECT_FALSE(CgroupNamesSlurmJob(v2, "7"));
  // slurmstepd itself, and a process outside Slurm.
  EXPECT_FALSE(CgroupNamesSlurmJob("0::/system.slice/slurmstepd.scope/system\n", "77"));
  EXPECT_FALSE(CgroupNamesSlurmJob("0::/user.slice/job_77.scope\n", "77"));
  // A path holding ':' keeps its parts; lines without two ':' are skipped.
  EXPECT_TRUE(CgroupNamesSlurmJob("garbage\n1:name=a:b:/x/job_5\n", "5"));
  // slurmstepd's own leaf under the step (cgroup v2) is not the job's.
  EXPECT_FALSE(
      CgroupNamesSlurmJob("0::/system.slice/slurmstepd.scope/job_77/step_0/slurm\n", "77"));
  EXPECT_TRUE(
      CgroupNamesSlurmJob("0::/system.slice/slurmstepd.scope/job_77/step_0/user/task_0\n", "77"));
  EXPECT_FALSE(CgroupNamesSlurmJob("", "5"));
  EXPECT_FALSE(CgroupNamesSlurmJob(v1, ""));
}

TEST(SlurmJob, EnvironmentNamesTheJobByEitherVariable) {
  const std::string env = "HOME=/home/u\0SLURM_JOB_ID=901\0SLURM_PROCID=1\0"s;
  EXPECT_TRUE(EnvironNamesSlurmJob(env, "901"));
  EXPECT_FALSE(EnvironNamesSlurmJob(env, "90"));
  EXPECT_FALSE(EnvironNamesSlurmJob(env, "9011"));
  EXPECT_TRUE(EnvironNamesSlurmJob("SLURM_JOBID=12"s, "12"));  // the older name, no NUL at the end
  EXPECT_FALSE(EnvironNamesSlurmJob("MY_SLURM_JOB_ID=12\0"s, "12"));
  EXPECT_FALSE(EnvironNamesSlurmJob("SLURM_JOB_ID_X=12\0"s, "12"));
  EXPECT_FALSE(EnvironNamesSlurmJob(""s, "12"));
}

TEST(SlurmJob, JobIdsAreDigits) {
  EXPECT_TRUE(CheckSlurmJobId("12345").ok());
  EXPECT_FALSE(CheckSlurmJobId("").ok());
  EXPECT_FALSE(CheckSlurmJobId("12_3").ok());  // an array task's name is not its id
  EXPECT_FALSE(CheckSlurmJobId("../1").ok());
  Status s = CheckSlurmJobId("x");
  EXPECT_NE(s.message().find("'x'"), std::string::npos) << s.message();
}

// A writable copy of tests/fixtures/proc_tree, removed at the end.
class SlurmJobTree : public ProcTreeCopyTest {
 protected:
  void Write(const std::string& rest, const std::string& text) {
    std::ofstream out(dir_ / "proc" / rest, std::ios::trunc | std::ios::binary);
    out << text;
    ASSERT_TRUE(out.good()) << rest;
  }
  static std::vector<int32_t> Pids(const ProcessTree& tree) {
    std::vector<int32_t> pids;
    for (const ProcessSample& p : tree.processes) pids.push_back(p.pid);
    return pids;
  }
  ProcessSamplerOptions Options(const std::string& job) const {
    ProcessSamplerOptions options;
    options.clock_ticks_per_second = 100;
    options.page_size_bytes = 4096;
    options.adopt = [root = Root(dir_.string()), job](int32_t pid) {
      return ProcessInSlurmJob(root, pid, job);
    };
    return options;
  }
};

TEST_F(SlurmJobTree, ReadsCgroupThenEnvironment) {
  Write("101/environ", "PATH=/bin\0SLURM_JOB_ID=42\0"s);
  Write("102/cgroup", "0::/system.slice/slurmstepd.scope/job_42/step_0/user/task_1\n");
  Write("100/cgroup", "0::/user.slice\n");
  const Root root(dir_.string());
  EXPECT_EQ(ProcessInSlurmJob(root, 101, "42"), std::optional<bool>(true));   // by its environment
  EXPECT_EQ(ProcessInSlurmJob(root, 102, "42"), std::optional<bool>(true));   // by its cgroup
  EXPECT_EQ(ProcessInSlurmJob(root, 100, "42"), std::optional<bool>(false));  // neither names it
  EXPECT_EQ(ProcessInSlurmJob(root, 101, "43"), std::optional<bool>(false));
  EXPECT_EQ(ProcessInSlurmJob(root, 999, "42"), std::optional<bool>(false));  // no such process
}

TEST_F(SlurmJobTree, RootlessSamplerAdoptsTheJobsProcessesAndTheirChildren) {
  // 101 carries the job in its environment; 103, its child, carries nothing
  // (a process that rewrote its environment) and is the job's by descent.
  // 100 (their parent) and 200 are not the job's.
  Write("101/environ", "SLURM_JOB_ID=42\0"s);
  Write("200/environ", "SLURM_JOB_ID=41\0"s);
  ProcessTreeSampler sampler(Root(dir_.string()), 0, Options("42"));
  for (int i = 0; i < 2; ++i) {
    Result<ProcessTree> tree = sampler.Sample();
    ASSERT_TRUE(tree.ok()) << tree.status().ToString();
    EXPECT_EQ(Pids(*tree), (std::vector<int32_t>{101, 103}));
  }
}

TEST_F(SlurmJobTree, RootlessSamplerIsEmptyWhileNoProcessBelongs) {
  ProcessTreeSampler sampler(Root(dir_.string()), 0, Options("42"));
  Result<ProcessTree> tree = sampler.Sample();
  ASSERT_TRUE(tree.ok()) << tree.status().ToString();
  EXPECT_TRUE(tree->processes.empty());
  // Without adopt, no root is an error, as before.
  ProcessSamplerOptions plain;
  plain.clock_ticks_per_second = 100;
  ProcessTreeSampler rootless(Root(dir_.string()), 0, plain);
  EXPECT_TRUE(rootless.Sample().status().IsNotFound());
}

TEST_F(SlurmJobTree, APidAdoptCannotJudgeYetIsAskedAgainLater) {
  // As a task between slurmstepd's fork and its exec: its environment is
  // refused at first, readable two samples later.
  int asked = 0;
  ProcessSamplerOptions options = Options("42");
  options.adopt = [&asked](int32_t pid) -> std::optional<bool> {
    if (pid != 101) return false;
    return ++asked < 3 ? std::nullopt : std::optional<bool>(true);
  };
  ProcessTreeSampler sampler(Root(dir_.string()), 0, options);
  EXPECT_TRUE(sampler.Sample()->processes.empty());
  EXPECT_TRUE(sampler.Sample()->processes.empty());
  Result<ProcessTree> third = sampler.Sample();
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(Pids(*third), (std::vector<int32_t>{101}));
  EXPECT_EQ(asked, 3);
  // One that never tells is given up after kAdoptRetries more samples.
  int never = 0;
  options.adopt = [&never](int32_t pid) -> std::optional<bool> {
    if (pid == 101) ++never;
    return pid == 101 ? std::nullopt : std::optional<bool>(false);
  };
  ProcessTreeSampler patient(Root(dir_.string()), 0, options);
  for (int i = 0; i < kAdoptRetries + 5; ++i) EXPECT_TRUE(patient.Sample()->processes.empty());
  EXPECT_EQ(never, 1 + kAdoptRetries);
}

TEST(SlurmJob, LiveProcessWithTheJobInItsEnvironmentIsFound) {
  // A real child started with the variable: what srun's tasks inherit.
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    char* const argv[] = {const_cast<char*>("sleep"), const_cast<char*>("30"), nullptr};
    char* const envp[] = {const_cast<char*>("SLURM_JOB_ID=987654"), nullptr};
    execve("/bin/sleep", argv, envp);
    _exit(127);
  }
  bool found = false;
  for (int i = 0; i < 200 && !found; ++i) {  // until the exec has happened
    found = ProcessInSlurmJob(Root("/"), child, "987654").value_or(false);
    if (!found) usleep(10000);
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(ProcessInSlurmJob(Root("/"), getpid(), "987654"), std::optional<bool>(false));
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
}

TEST(SlurmJobs, TheStateFoldersRunningJobsInIdOrderWithTheirNames) {
  std::string pattern = ::testing::TempDir() + "slurm_jobs_XXXXXX";
  ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
  const fs::path state = pattern;
  fs::create_directories(state / "jobs");
  fs::create_directories(state / "job-10");
  auto write = [](const fs::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::trunc);
    out << text;
  };
  SlurmJobLine nine;
  nine.job_id = "9";
  nine.user = "ada";
  nine.uid = 1001;
  nine.partition = "gpu";
  nine.recorder_pid = 77;
  write(state / "jobs" / "9", FormatSlurmJobLine(nine));
  // The task prolog's note, in the job user's folder (this test's user).
  write(state / "jobs" / "10",
        "job_id=10\nuser=bob\nuid=" + std::to_string(getuid()) + "\npartition=debug\n");
  write(state / "job-10" / "job_name", "my train run\n");
  // A name is never read through a link (a root-only file as a label), nor
  // from a file of another uid than the job's.
  fs::create_directories(state / "job-9");
  fs::create_symlink("/etc/hostname", state / "job-9" / "job_name");
  write(state / "jobs" / "11", "job_id=12\n");             // a line under another id
  write(state / "jobs" / "13", "job_id=13\nuid=x\n");      // malformed
  write(state / "jobs" / "14.tmp-ab12cd", "job_id=14\n");  // a rename's temporary file
  SlurmJobs jobs = ReadSlurmJobs(state.string());
  ASSERT_EQ(jobs.jobs.size(), 2u);
  EXPECT_EQ(jobs.jobs[0].job_id, "9");  // by number, not by text
  EXPECT_EQ(jobs.jobs[0].recorder_pid, 77);
  EXPECT_EQ(jobs.jobs[0].job_name, "");
  EXPECT_EQ(jobs.jobs[1].job_id, "10");
  EXPECT_EQ(jobs.jobs[1].user, "bob");
  EXPECT_EQ(jobs.jobs[1].job_name, "my_train_run");
  EXPECT_EQ(jobs.unreadable, 2);
  // The same file, claimed by a job of another uid: not its name.
  write(state / "jobs" / "10", "job_id=10\nuser=bob\nuid=" + std::to_string(getuid() + 1) + "\n");
  EXPECT_EQ(ReadSlurmJobs(state.string()).jobs[1].job_name, "");
  // No state folder (no Slurm on this node): no jobs, no error.
  EXPECT_TRUE(ReadSlurmJobs((state / "none").string()).jobs.empty());
  fs::remove_all(state);
}

TEST(SlurmJobs, TheJobsCpusetUnderCgroupV2AndV1) {
  std::string pattern = ::testing::TempDir() + "slurm_cpuset_XXXXXX";
  ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
  const fs::path root = pattern;
  auto write = [](const fs::path& path, const std::string& text) {
    fs::create_directories(path.parent_path());
    std::ofstream out(path, std::ios::trunc);
    out << text;
  };
  // v2 (Slurm 22.05+ with cgroup/v2): the stepd scope holds the job.
  write(root / "sys/fs/cgroup/system.slice/slurmstepd.scope/job_7/cpuset.cpus.effective",
        "0-3,8\n");
  // v1: per user, effective CPUs first, else the configured ones.
  write(root / "sys/fs/cgroup/cpuset/slurm/uid_1001/job_8/cpuset.effective_cpus", "4-5\n");
  write(root / "sys/fs/cgroup/cpuset/slurm/uid_1001/job_9/cpuset.cpus", "6\n");
  write(root / "sys/fs/cgroup/cpuset/slurm/uid_1001/job_10/cpuset.cpus", "garbage\n");
  const Root r(root.string());
  EXPECT_EQ(SlurmJobCpuList(r, "7", 1001), "0-3,8");
  EXPECT_EQ(SlurmJobCpuList(r, "8", 1001), "4-5");
  EXPECT_EQ(SlurmJobCpuList(r, "9", 1001), "6");
  EXPECT_EQ(SlurmJobCpuList(r, "10", 1001), "");  // not a CPU list
  EXPECT_EQ(SlurmJobCpuList(r, "8", 1002), "");   // another user's job of that id: none
  EXPECT_EQ(SlurmJobCpuList(r, "11", 1001), "");  // no cgroup (task/none)
  EXPECT_EQ(SlurmJobCpuList(r, "../7", 1001), "");
  fs::remove_all(root);
}

TEST(SlurmJobs, JobNamesAreCleanedForALabel) {
  EXPECT_EQ(CleanSlurmJobName("a b\tc\xe9"), "a_b_c_");
  EXPECT_EQ(CleanSlurmJobName(std::string(300, 'x')).size(), 128u);
  EXPECT_EQ(CleanSlurmJobName(""), "");
}

}  // namespace
}  // namespace stallscope
