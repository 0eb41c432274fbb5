// The stale hook directories a killed run leaves: removed only when their
// pid is gone and their socket is bound by nobody; a live one, a foreign
// name and a directory holding anything else are kept.
#include "record/stale_sockets.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace stallscope {
namespace {

// A pid that existed and is gone: a child that exited and was reaped.
int DeadPid() {
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  return pid;
}

bool Exists(const std::string& path) {
  struct stat info;
  return lstat(path.c_str(), &info) == 0;
}

// Binds a datagram socket at dir/hook.sock; returns its fd (the caller may
// close it, which leaves the file as a killed run does).
int BindSocket(const std::string& dir) {
  std::string path = dir + "/hook.sock";
  struct sockaddr_un addr {};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
  EXPECT_EQ(bind(fd, reinterpret_cast<struct sockaddr*>(&addr), sizeof addr), 0) << path;
  return fd;
}

class StaleHookDirectories : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/stale-sockets-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    parent_ = pattern;
  }
  void TearDown() override { std::system(("rm -rf " + parent_).c_str()); }
  std::string Make(const std::string& name) {
    std::string dir = parent_ + "/" + name;
    EXPECT_EQ(mkdir(dir.c_str(), 0700), 0) << dir;
    return dir;
  }
  std::string parent_;
};

TEST(HookDirectoryName, CarriesThePid) {
  EXPECT_EQ(HookDirectoryPid("stallscope-4242-a1B2c3"), 4242);
  EXPECT_EQ(HookDirectoryPid("stallscope-1000"), -1);  // the exporter's per-uid folder
  EXPECT_EQ(HookDirectoryPid("stallscope-a1B2c3"), -1);
  EXPECT_EQ(HookDirectoryPid("stallscope--a1B2c3"), -1);
  EXPECT_EQ(HookDirectoryPid("stallscope-12-abc"), -1);
  EXPECT_EQ(HookDirectoryPid("other-12-abcdef"), -1);
}

TEST_F(StaleHookDirectories, RemovesOnlyWhatADeadRunLeft) {
  int dead = DeadPid();
  std::string stale = Make("stallscope-" + std::to_string(dead) + "-aaaaaa");
  close(BindSocket(stale));  // the socket file stays, bound by nobody
  std::string empty = Make("stallscope-" + std::to_string(dead) + "-bbbbbb");
  std::string live = Make("stallscope-" + std::to_string(getppid()) + "-cccccc");
  close(BindSocket(live));
  std::string held = Make("stallscope-" + std::to_string(dead) + "-dddddd");
  int bound = BindSocket(held);  // pid gone, but someone has the socket bound
  std::string full = Make("stallscope-" + std::to_string(dead) + "-eeeeee");
  std::ofstream(full + "/something") << "kept";
  std::string foreign = Make("stallscope-" + std::to_string(dead));

  EXPECT_EQ(RemoveStaleHookDirectories(parent_), 2);
  EXPECT_FALSE(Exists(stale));
  EXPECT_FALSE(Exists(empty));
  EXPECT_TRUE(Exists(live + "/hook.sock"));
  EXPECT_TRUE(Exists(held + "/hook.sock"));
  EXPECT_TRUE(Exists(full + "/something"));
  EXPECT_TRUE(Exists(foreign));
  close(bound);
}

TEST_F(StaleHookDirectories, AMissingParentIsNothingToDo) {
  EXPECT_EQ(RemoveStaleHookDirectories(parent_ + "/absent"), 0);
}

}  // namespace
}  // namespace stallscope
