// OtherProcessesCpu on a fixture /proc built here (two samples, stat ticks
// moving between them) and on this host (a busy child outside the "tree").
#include "probe/other_processes.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/host_clock.h"
#include "probe/process_tree.h"

namespace stallscope {
namespace {

namespace fs = std::filesystem;

void WriteStat(const fs::path& root, int pid, const std::string& comm, uint64_t utime,
               uint64_t start) {
  fs::create_directories(root / "proc" / std::to_string(pid));
  std::ofstream(root / "proc" / std::to_string(pid) / "stat")
      << pid << " (" << comm << ") R 1 1 1 0 -1 4194560 100 0 0 0 " << utime << " 0 0 0 20 0 1 0 "
      << start << " 1000000 100 18446744073709551615\n";
}

TEST(OtherProcessesCpu, TopByCpuOutsideTheMembersAcrossTwoCalls) {
  fs::path dir = fs::temp_directory_path() / ("stallscope-others-" + std::to_string(getpid()));
  fs::remove_all(dir);
  WriteStat(dir, 10, "python3", 100, 50);  // a member
  WriteStat(dir, 20, "stress-ng", 100, 60);
  WriteStat(dir, 30, "sshd", 100, 70);
  WriteStat(dir, 40, "old", 100, 80);
  OtherProcessesCpu others(Root(dir.string()), 100);
  EXPECT_TRUE(others.Sample(1, 10.0, {10}).empty());  // the baseline
  WriteStat(dir, 10, "python3", 300, 50);
  WriteStat(dir, 20, "stress-ng", 280, 60);  // 180 ticks in 2 s: 90% of a CPU
  WriteStat(dir, 30, "sshd", 102, 70);       // 1%
  WriteStat(dir, 40, "new", 900, 81);        // pid reused: no figure yet
  std::vector<OtherProcessPoint> got = others.Sample(3, 12.0, {10});
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].pid, 20);
  EXPECT_EQ(got[0].comm, "stress-ng");
  EXPECT_NEAR(got[0].cpu_percent, 90.0, 1e-9);
  EXPECT_DOUBLE_EQ(got[0].t, 3);
  EXPECT_EQ(got[1].pid, 30);
  EXPECT_NEAR(got[1].cpu_percent, 1.0, 1e-9);
  EXPECT_EQ(others.Sample(4, 13.0, {10}, 1).size(), 0u);  // nothing moved
  fs::remove_all(dir);
}

TEST(OtherProcessesCpu, LiveBusyChildIsFoundAndMembersAreLeftOut) {
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    volatile uint64_t spin = 0;
    for (;;) spin = spin + 1;
  }
  OtherProcessesCpu others(Root("/"));
  others.Sample(0, MonotonicSeconds(), {getpid()});
  // Until the child used a few clock ticks, however loaded the host is.
  auto ticks = [child] {
    std::ifstream in("/proc/" + std::to_string(child) + "/stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    Result<ProcStat> stat = ParseProcStat(text, "stat");
    return stat.ok() ? stat->utime_ticks + stat->stime_ticks : 0;
  };
  const uint64_t start = ticks();
  for (int i = 0; i < 3000 && ticks() < start + 5; ++i) usleep(10'000);
  std::vector<OtherProcessPoint> got = others.Sample(1, MonotonicSeconds(), {getpid()}, 50);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  bool found = false;
  for (const OtherProcessPoint& p : got) {
    EXPECT_NE(p.pid, getpid());
    if (p.pid == child) found = p.cpu_percent > 0;
  }
  EXPECT_TRUE(found) << "the busy child was not among the top 50";
}

}  // namespace
}  // namespace stallscope
