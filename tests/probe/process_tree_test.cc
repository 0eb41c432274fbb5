#include "probe/process_tree.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <set>

#include "core/child_call.h"
#include "core/file.h"
#include "probe/cpu_stat.h"

namespace stallscope {
namespace {

const std::string kFixtures = STALLSCOPE_FIXTURES;

std::vector<int32_t> Pids(const ProcessTree& tree) {
  std::vector<int32_t> pids;
  for (const ProcessSample& p : tree.processes) pids.push_back(p.pid);
  return pids;
}

const ProcessSample* Find(const ProcessTree& tree, int32_t pid) {
  for (const ProcessSample& p : tree.processes) {
    if (p.pid == pid) return &p;
  }
  return nullptr;
}

TEST(ParseProcStat, CommWithSpacesAndParenthesis) {
  Result<ProcStat> stat = ParseProcStat(
      "103 (dec) worker 1) S 101 101 3173 0 -1 4194304 14723 0 0 0 500 70 0 0 20 0 2 0 201000 "
      "69394432 16150 18446744073709551615\n",
      "/proc/103/stat");
  ASSERT_TRUE(stat.ok()) << stat.status().ToString();
  EXPECT_EQ(stat->pid, 103);
  EXPECT_EQ(stat->comm, "dec) worker 1");
  EXPECT_EQ(stat->state, 'S');
  EXPECT_EQ(stat->ppid, 101);
  EXPECT_EQ(stat->utime_ticks, 500u);
  EXPECT_EQ(stat->stime_ticks, 70u);
  EXPECT_EQ(stat->threads, 2);
  EXPECT_EQ(stat->start_time_ticks, 201000u);
}

TEST(ParseProcStat, MalformedNamesFileAndLine) {
  Result<ProcStat> no_comm = ParseProcStat("42 python S 1 1", "/proc/42/stat");
  ASSERT_FALSE(no_comm.ok());
  EXPECT_EQ(no_comm.status().code(), Status::Code::kParseError);
  EXPECT_NE(no_comm.status().message().find("/proc/42/stat:1:"), std::string::npos)
      << no_comm.status().message();

  Result<ProcStat> truncated =
      ParseProcStat("42 (python) S 1 1 1 0 -1 4 5 0 0 0 7", "/proc/42/stat");
  ASSERT_FALSE(truncated.ok());
  EXPECT_NE(truncated.status().message().find("/proc/42/stat:1: truncated"), std::string::npos)
      << truncated.status().message();

  Result<ProcStat> bad_utime =
      ParseProcStat("42 (python) S 1 1 1 0 -1 4 5 0 0 0 x7 8 0 0 20 0 3 0 99 1 2", "/proc/42/stat");
  ASSERT_FALSE(bad_utime.ok());
  EXPECT_NE(bad_utime.status().message().find("field 14"), std::string::npos)
      << bad_utime.status().message();

  EXPECT_FALSE(ParseProcStat("", "/proc/42/stat").ok());
  EXPECT_FALSE(ParseProcStat(")(", "/proc/42/stat").ok());
  EXPECT_FALSE(ParseProcStat("-5 (x) S 1 1 1 0 -1 4 5 0 0 0 7 8 0 0 20 0 3 0 99", "s").ok());
  EXPECT_FALSE(ParseProcStat("5 (x) SS 1 1 1 0 -1 4 5 0 0 0 7 8 0 0 20 0 3 0 99", "s").ok());
}

TEST(ParseProcStatus, MemoryLinesInBytes) {
  Result<ProcStatus> status = ParseProcStatus(
      "Name:\tpython\nVmPeak:\t  3060 kB\nVmLck:\t 8 kB\nVmPin:\t 4 kB\nVmHWM:\t 1636 kB\n"
      "VmRSS:\t 1600 kB\nVmSwap:\t 2 kB\nThreads:\t1\n",
      "/proc/1/status");
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  EXPECT_EQ(status->vm_peak_bytes, 3060u * 1024);
  EXPECT_EQ(status->vm_lck_bytes, 8u * 1024);
  EXPECT_EQ(status->vm_pin_bytes, 4u * 1024);
  EXPECT_EQ(status->vm_hwm_bytes, 1636u * 1024);
  EXPECT_EQ(status->rss_bytes, 1600u * 1024);
  EXPECT_EQ(status->vm_swap_bytes, 2u * 1024);
}

TEST(ParseProcStatus, KernelThreadHasNoMemoryLines) {
  Result<ProcStatus> status = ParseProcStatus("Name:\tkthreadd\nState:\tS (sleeping)\n", "s");
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->rss_bytes, 0u);
  EXPECT_FALSE(status->vm_pin_bytes.has_value());
}

TEST(ParseProcStatus, MalformedNamesFileAndLine) {
  Result<ProcStatus> bad_unit = ParseProcStatus("Name:\tx\nVmRSS:\t 12 MB\n", "/proc/7/status");
  ASSERT_FALSE(bad_unit.ok());
  EXPECT_EQ(bad_unit.status().message(), "/proc/7/status:2: VmRSS is not '<number> kB'");
  Result<ProcStatus> no_colon =
      ParseProcStatus("Name:\tx\nState:\tS\nVmRSS 12 kB\n", "/proc/7/status");
  ASSERT_FALSE(no_colon.ok());
  EXPECT_EQ(no_colon.status().message(), "/proc/7/status:3: no ':' in line");
  EXPECT_FALSE(ParseProcStatus("VmPin:\t kB\n", "s").ok());
  EXPECT_FALSE(ParseProcStatus("VmHWM:\t 99999999999999999999 kB\n", "s").ok());
}

TEST(ParseProcessIo, FieldsAndTruncation) {
  Result<ProcessIo> io = ParseProcessIo(
      "rchar: 6976\nwchar: 5\nsyscr: 10\nsyscw: 0\nread_bytes: 4096\nwrite_bytes: 8192\n"
      "cancelled_write_bytes: 12\n",
      "/proc/9/io");
  ASSERT_TRUE(io.ok()) << io.status().ToString();
  EXPECT_EQ(io->rchar_bytes, 6976u);
  EXPECT_EQ(io->wchar_bytes, 5u);
  EXPECT_EQ(io->read_bytes, 4096u);
  EXPECT_EQ(io->write_bytes, 8192u);
  EXPECT_EQ(io->cancelled_write_bytes, 12u);

  Result<ProcessIo> truncated = ParseProcessIo("rchar: 6976\nwchar: 5\nsyscr: 10\n", "/proc/9/io");
  ASSERT_FALSE(truncated.ok());
  EXPECT_NE(truncated.status().message().find("/proc/9/io: truncated"), std::string::npos);
  Result<ProcessIo> bad = ParseProcessIo("rchar: 6976\nwchar: -5\n", "/proc/9/io");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "/proc/9/io:2: wchar is not a number");
}

TEST(ParseSmapsRollup, PssAndHeaderLine) {
  Result<SmapsRollup> rollup = ParseSmapsRollup(
      "55aa79dbb000-7ffe1e7e0000 ---p 00000000 00:00 0    [rollup]\nRss:  1684 kB\n"
      "Pss:   401 kB\nSwapPss:  3 kB\n",
      "/proc/5/smaps_rollup");
  ASSERT_TRUE(rollup.ok()) << rollup.status().ToString();
  EXPECT_EQ(rollup->rss_bytes, 1684u * 1024);
  EXPECT_EQ(rollup->pss_bytes, 401u * 1024);
  EXPECT_EQ(rollup->swap_pss_bytes, 3u * 1024);

  Result<SmapsRollup> bad = ParseSmapsRollup("x-y ---p 0 00:00 0 [rollup]\nRss: 1 kB\nPss: a kB\n",
                                             "/proc/5/smaps_rollup");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "/proc/5/smaps_rollup:3: Pss is not '<number> kB'");
  EXPECT_FALSE(ParseSmapsRollup("x-y ---p 0 00:00 0 [rollup]\nRss: 1 kB\n", "s").ok());
}

TEST(ParseSchedstat, CpuAndRunDelay) {
  Result<Schedstat> s = ParseSchedstat("2518000000 731000000 4211\n", "/proc/5/schedstat");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->cpu_ns, 2518000000u);
  EXPECT_EQ(s->run_delay_ns, 731000000u);
  Result<Schedstat> bad = ParseSchedstat("12\n", "/proc/5/schedstat");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().rfind("/proc/5/schedstat:1:", 0), 0u) << bad.status().message();
  EXPECT_FALSE(ParseSchedstat("x 1 2\n", "s").ok());
  EXPECT_FALSE(ParseSchedstat("", "s").ok());
}

TEST(ParseCmdline, NulSeparated) {
  using V = std::vector<std::string>;
  EXPECT_EQ(ParseCmdline(std::string_view("python\0train.py\0--lr\0\0", 22)),
            (V{"python", "train.py", "--lr", ""}));
  EXPECT_EQ(ParseCmdline("sshd: listener"), (V{"sshd: listener"}));
  EXPECT_TRUE(ParseCmdline("").empty());
}

// The captured files of a real python process on this machine.
TEST(ProcessFiles, LiveCapture) {
  const std::string dir = kFixtures + "/live_debian12/proc/6612";
  Result<std::string> stat_text = ReadFile(dir + "/stat");
  ASSERT_TRUE(stat_text.ok());
  Result<ProcStat> stat = ParseProcStat(*stat_text, "stat");
  ASSERT_TRUE(stat.ok()) << stat.status().ToString();
  EXPECT_EQ(stat->pid, 6612);
  EXPECT_EQ(stat->comm, "python3");
  EXPECT_EQ(stat->threads, 1);

  Result<std::string> status_text = ReadFile(dir + "/status");
  ASSERT_TRUE(status_text.ok());
  Result<ProcStatus> status = ParseProcStatus(*status_text, "status");
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  EXPECT_EQ(status->rss_bytes, 44256u * 1024);
  EXPECT_EQ(status->vm_hwm_bytes, 44256u * 1024);
  EXPECT_EQ(status->vm_pin_bytes, 0u);

  Result<std::string> io_text = ReadFile(dir + "/io");
  ASSERT_TRUE(io_text.ok());
  Result<ProcessIo> io = ParseProcessIo(*io_text, "io");
  ASSERT_TRUE(io.ok()) << io.status().ToString();

  Result<std::string> rollup_text = ReadFile(dir + "/smaps_rollup");
  ASSERT_TRUE(rollup_text.ok());
  Result<SmapsRollup> rollup = ParseSmapsRollup(*rollup_text, "smaps_rollup");
  ASSERT_TRUE(rollup.ok()) << rollup.status().ToString();
  EXPECT_GT(rollup->pss_bytes, 0u);
  EXPECT_LE(rollup->pss_bytes, rollup->rss_bytes);
}

TEST(ReadProcessTree, FixtureTree) {
  ProcessReadOptions options;
  options.clock_ticks_per_second = 100;
  Result<ProcessTree> tree = ReadProcessTree(Root(kFixtures + "/proc_tree"), 100, options);
  ASSERT_TRUE(tree.ok()) << tree.status().ToString();
  // Depth-first: the grandchild 103 follows its parent 101; 200 and 1 are not members.
  EXPECT_EQ(Pids(*tree), (std::vector<int32_t>{100, 101, 103, 102}));
  EXPECT_EQ(tree->root_pid, 100);
  EXPECT_EQ(tree->vanished, 1);  // pid 150: listed, but its files are gone
  EXPECT_EQ(tree->unreadable, 0);

  const ProcessSample* root = Find(*tree, 100);
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(root->comm, "python");
  EXPECT_EQ(root->cmdline, (std::vector<std::string>{"python", "train.py", "--epochs", "90"}));
  EXPECT_EQ(root->cmdline_text(), "python train.py --epochs 90");
  EXPECT_EQ(root->state, 'S');
  EXPECT_EQ(root->utime_ticks, 52340u);
  EXPECT_DOUBLE_EQ(root->utime_seconds, 523.4);
  EXPECT_DOUBLE_EQ(root->stime_seconds, 81.23);
  EXPECT_DOUBLE_EQ(root->start_time_seconds, 2000.0);
  EXPECT_EQ(root->threads, 37);
  EXPECT_EQ(root->rss_bytes, 9000000ull * 1024);
  EXPECT_EQ(root->pss_bytes, 6000000ull * 1024);
  EXPECT_EQ(root->vm_peak_bytes, 30000000ull * 1024);
  EXPECT_EQ(root->vm_hwm_bytes, 9500000ull * 1024);
  EXPECT_EQ(root->vm_pin_bytes, 2097152ull * 1024);
  EXPECT_EQ(root->vm_swap_bytes, 1024ull * 1024);
  ASSERT_TRUE(root->io.has_value());
  EXPECT_EQ(root->io->read_bytes, 80000000000ull);
  EXPECT_EQ(root->io->rchar_bytes, 90000000000ull);

  const ProcessSample* odd = Find(*tree, 103);
  ASSERT_NE(odd, nullptr);
  EXPECT_EQ(odd->comm, "dec) worker 1");
  EXPECT_EQ(odd->ppid, 101);
  EXPECT_FALSE(odd->vm_pin_bytes.has_value());  // an older kernel's status
  EXPECT_FALSE(odd->pss_bytes.has_value());     // no smaps_rollup
  EXPECT_EQ(odd->cmdline[2], "clip 01.mp4");

  const ProcessSample* no_io = Find(*tree, 102);
  ASSERT_NE(no_io, nullptr);
  EXPECT_EQ(no_io->state, 'D');
  EXPECT_FALSE(no_io->io.has_value());

  ProcessTotals totals = SumTree(*tree);
  EXPECT_EQ(totals.processes, 4);
  EXPECT_EQ(totals.rss_bytes, (9000000ull + 2500000 + 2600000 + 100000) * 1024);
  EXPECT_EQ(totals.pss_bytes, (6000000ull + 800000 + 900000) * 1024);
  EXPECT_EQ(totals.pss_missing, 1);
  EXPECT_EQ(totals.pinned_bytes, (2097152ull + 4096) * 1024);
  EXPECT_EQ(totals.cpu_ticks, 52340u + 8123 + 30000 + 2000 + 29000 + 2500 + 500 + 70);
  EXPECT_NEAR(totals.cpu_seconds, 1245.33, 1e-9);
  EXPECT_EQ(totals.read_bytes, 80000000000ull + 19000000000ull + 7000);
}

TEST(ReadProcessTree, SubtreeAndOptionsOff) {
  ProcessReadOptions options;
  options.read_cmdline = false;
  options.read_io = false;
  options.read_pss = false;
  Result<ProcessTree> tree = ReadProcessTree(Root(kFixtures + "/proc_tree"), 101, options);
  ASSERT_TRUE(tree.ok()) << tree.status().ToString();
  EXPECT_EQ(Pids(*tree), (std::vector<int32_t>{101, 103}));
  EXPECT_TRUE(tree->processes[0].cmdline.empty());
  EXPECT_FALSE(tree->processes[0].io.has_value());
  EXPECT_FALSE(tree->processes[0].pss_bytes.has_value());
  EXPECT_EQ(tree->processes[0].rss_bytes, 2500000ull * 1024);
}

TEST(ReadProcessTree, MissingRootIsNotFound) {
  Result<ProcessTree> tree = ReadProcessTree(Root(kFixtures + "/proc_tree"), 4242);
  ASSERT_FALSE(tree.ok());
  EXPECT_TRUE(tree.status().IsNotFound());
  EXPECT_EQ(tree.status().message(), "pid 4242");
  // A pid directory whose files are gone is the same as no process.
  EXPECT_TRUE(ReadProcessTree(Root(kFixtures + "/proc_tree"), 150).status().IsNotFound());
  EXPECT_TRUE(ReadProcessTree(Root(kFixtures + "/proc_tree"), 0).status().IsNotFound());
}

TEST(ReadProcessTrees, SeveralRootsFromOneListing) {
  ProcessReadOptions options;
  options.read_cmdline = false;
  options.read_schedstat = true;
  const int32_t roots[] = {101, 4242, 200, 100};
  Result<std::vector<ProcessTree>> trees =
      ReadProcessTrees(Root(kFixtures + "/proc_tree"), roots, options);
  ASSERT_TRUE(trees.ok()) << trees.status().ToString();
  ASSERT_EQ(trees->size(), 4u);
  EXPECT_EQ(Pids((*trees)[0]), (std::vector<int32_t>{101, 103}));
  EXPECT_EQ((*trees)[1].root_pid, 4242);  // no such process: an empty tree, not an error
  EXPECT_TRUE((*trees)[1].processes.empty());
  EXPECT_EQ(Pids((*trees)[2]), (std::vector<int32_t>{200}));
  // A tree that holds another reads its members again.
  EXPECT_EQ(Pids((*trees)[3]), (std::vector<int32_t>{100, 101, 103, 102}));
  // schedstat when asked: 101 has one, 103 none.
  const ProcessSample* worker = Find((*trees)[0], 101);
  ASSERT_NE(worker, nullptr);
  EXPECT_EQ(worker->sched_cpu_ns, 2518000000u);
  EXPECT_EQ(worker->run_delay_ns, 731000000u);
  EXPECT_FALSE(Find((*trees)[0], 103)->run_delay_ns.has_value());
  // Off by default.
  Result<std::vector<ProcessTree>> plain = ReadProcessTrees(Root(kFixtures + "/proc_tree"), roots);
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(Find((*plain)[0], 101)->run_delay_ns.has_value());
  EXPECT_TRUE(ReadProcessTrees(Root(kFixtures + "/proc_tree"), {})->empty());
}

TEST(ReadAllProcesses, FixtureHost) {
  Result<ProcessTree> all = ReadAllProcesses(Root(kFixtures + "/proc_tree"));
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(all->root_pid, 0);
  EXPECT_EQ(Pids(*all), (std::vector<int32_t>{1, 100, 101, 102, 103, 200}));
  EXPECT_EQ(all->vanished, 1);
  EXPECT_EQ(SumTree(*all).pinned_bytes, (2097152ull + 4096) * 1024);
}

// A real tree: this process forks 3 children, the first of which forks a
// grandchild; all sleep until killed.
class LiveTree : public ::testing::Test {
 protected:
  void SetUp() override {
    // Children an earlier test in this process gave up would count here.
    for (int tries = 0; tries < 1000 && ReapAbandonedChildren() > 0; ++tries) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    int ready[2];
    ASSERT_EQ(::pipe(ready), 0);
    pid_t parent = ::getpid();
    for (int i = 0; i < 3; ++i) {
      pid_t child = ::fork();
      ASSERT_GE(child, 0);
      if (child == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) ::_exit(1);
        if (i == 0) {
          pid_t me = ::getpid();
          pid_t grandchild = ::fork();
          if (grandchild == 0) {
            ::prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (::getppid() != me) ::_exit(1);
            (void)!::write(ready[1], "g", 1);
            for (;;) ::pause();
          }
        }
        (void)!::write(ready[1], "c", 1);
        for (;;) ::pause();
      }
      children_.push_back(child);
    }
    ::close(ready[1]);
    char byte;
    for (int i = 0; i < 4; ++i) ASSERT_EQ(::read(ready[0], &byte, 1), 1);
    ::close(ready[0]);
  }
  void TearDown() override {
    for (pid_t child : children_) {
      ::kill(child, SIGKILL);
      ::waitpid(child, nullptr, 0);
    }
  }
  std::vector<pid_t> children_;
};

TEST_F(LiveTree, FindsExactlyTheForkedProcessesAndDropsOneThatExits) {
  const pid_t self = ::getpid();
  Result<ProcessTree> tree = ReadProcessTree(Root("/"), self);
  ASSERT_TRUE(tree.ok()) << tree.status().ToString();
  ASSERT_EQ(tree->processes.size(), 5u);
  EXPECT_EQ(tree->processes[0].pid, self);
  std::set<int32_t> direct;
  int32_t grandchild = 0;
  for (const ProcessSample& p : tree->processes) {
    if (p.ppid == self) direct.insert(p.pid);
    if (p.ppid == children_[0]) grandchild = p.pid;
    // A forked copy of this test binary: some MiB resident, far below a GiB.
    EXPECT_GT(p.rss_bytes, 256u * 1024) << p.pid;
    EXPECT_LT(p.rss_bytes, 1ull << 30) << p.pid;
    EXPECT_GE(p.vm_hwm_bytes, p.rss_bytes) << p.pid;
    EXPECT_FALSE(p.cmdline.empty()) << p.pid;
    if (p.pid != self) {
      EXPECT_EQ(p.threads, 1) << p.pid;
    }
  }
  EXPECT_EQ(direct, std::set<int32_t>(children_.begin(), children_.end()));
  EXPECT_GT(grandchild, 0);

  // A leaf child exits; the next read no longer lists it.
  pid_t leaf = children_[2];
  ASSERT_EQ(::kill(leaf, SIGKILL), 0);
  ASSERT_EQ(::waitpid(leaf, nullptr, 0), leaf);
  children_.pop_back();
  Result<ProcessTree> after = ReadProcessTree(Root("/"), self);
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  std::vector<int32_t> pids = Pids(*after);
  EXPECT_EQ(pids.size(), 4u);
  EXPECT_EQ(std::count(pids.begin(), pids.end(), leaf), 0);
  EXPECT_EQ(std::count(pids.begin(), pids.end(), grandchild), 1);
}

TEST(ReadAllProcesses, LiveHostIncludesThisProcess) {
  ProcessReadOptions options;
  options.read_cmdline = false;
  options.read_io = false;
  options.read_pss = false;
  Result<ProcessTree> all = ReadAllProcesses(Root("/"), options);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_NE(Find(*all, ::getpid()), nullptr);
  EXPECT_NE(Find(*all, 1), nullptr);
  EXPECT_GT(ClockTicksPerSecond(), 0);
}

}  // namespace
}  // namespace stallscope
