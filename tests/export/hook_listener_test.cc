// export/hook_listener.h: which socket `hook-env` gives a job by default.
#include "export/hook_listener.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace stallscope {
namespace {

class HookSocketForJobsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/stallscope-hooksock-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    unlink((dir_ + "/hook.sock").c_str());
    rmdir(dir_.c_str());
  }
  std::string dir_;
};

TEST_F(HookSocketForJobsTest, TheSystemSocketWinsWhenBound) {
  const std::string path = dir_ + "/hook.sock";
  int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  EXPECT_EQ(HookSocketForJobs(path), path);
  close(fd);
}

TEST_F(HookSocketForJobsTest, ElseThisUsersOwnSocket) {
  const std::string path = dir_ + "/hook.sock";
  EXPECT_EQ(HookSocketForJobs(path), DefaultHookSocketPath());
  // A plain file planted there is not an exporter.
  std::FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  EXPECT_EQ(HookSocketForJobs(path), DefaultHookSocketPath());
}

}  // namespace
}  // namespace stallscope
