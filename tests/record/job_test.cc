#include "record/job.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace stallscope {
namespace {

JobExit WaitFor(Job& job) {
  for (int i = 0; i < 500; ++i) {
    if (std::optional<JobExit> exit = job.Poll()) return *exit;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ADD_FAILURE() << "job did not end";
  return {};
}

TEST(Job, ExitCodeAndEnvironmentReachTheCommand) {
  Result<Job> job = Job::Start({"sh", "-c", "test \"$HOOK\" = here && exit 3"}, {{"HOOK", "here"}});
  ASSERT_TRUE(job.ok()) << job.status().message();
  JobExit exit = WaitFor(*job);
  ASSERT_TRUE(exit.exit_code.has_value());
  EXPECT_EQ(*exit.exit_code, 3);
  EXPECT_EQ(exit.ShellStatus(), 3);
}

TEST(Job, MissingCommandIsNotFoundBeforeAnythingRuns) {
  Result<Job> job = Job::Start({"stallscope-no-such-command"}, {});
  ASSERT_FALSE(job.ok());
  EXPECT_TRUE(job.status().IsNotFound());
  EXPECT_NE(job.status().message().find("stallscope-no-such-command: command not found"),
            std::string::npos);
}

TEST(Job, NotExecutableIsPermissionDenied) {
  std::string path = ::testing::TempDir() + "/not-executable";
  FILE* f = fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fputs("#!/bin/sh\n", f);
  fclose(f);
  chmod(path.c_str(), 0644);
  Result<Job> job = Job::Start({path}, {});
  unlink(path.c_str());
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().code(), Status::Code::kPermissionDenied);
}

TEST(Job, ForwardedSignalEndsItAndIsReported) {
  Result<Job> job = Job::Start({"sleep", "30"}, {});
  ASSERT_TRUE(job.ok());
  job->Forward(SIGTERM);
  JobExit exit = WaitFor(*job);
  ASSERT_TRUE(exit.signal.has_value());
  EXPECT_EQ(*exit.signal, SIGTERM);
  EXPECT_EQ(exit.ShellStatus(), 128 + SIGTERM);
}

TEST(Job, AttachSeesAProcessGo) {
  EXPECT_FALSE(Job::Attach(0).ok());
  Result<Job> child = Job::Start({"sleep", "0.2"}, {});
  ASSERT_TRUE(child.ok());
  Result<Job> watched = Job::Attach(child->pid());
  ASSERT_TRUE(watched.ok());
  EXPECT_FALSE(watched->Poll().has_value());
  WaitFor(*child);  // reaped: the pid is gone
  EXPECT_TRUE(watched->Poll().has_value());
}

TEST(Job, AttachSeesAZombieAsGone) {
  // Exited but not reaped by its parent (us, here): kill(pid, 0) still works.
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) _exit(0);
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT), 0);
  Result<Job> watched = Job::Attach(pid);
  ASSERT_TRUE(watched.ok());
  EXPECT_TRUE(watched->Poll().has_value());
  waitpid(pid, nullptr, 0);
}

}  // namespace
}  // namespace stallscope
