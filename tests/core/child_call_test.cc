// CallInChild (core/child_call.h): the answer comes back; a child that
// stops answering is given up one idle deadline after its last progress
// while one that keeps advancing runs past it; the child's descriptors are
// closed also where close_range(2) is refused, and stdin/stderr are closed
// where /dev/null cannot be opened. Descriptor tests run in a forked child
// so that the test process keeps its own.
#include "core/child_call.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

namespace stallscope {
namespace {

bool IsOpen(int fd) { return ::fcntl(fd, F_GETFD) != -1 || errno != EBADF; }

int RefusedCloseRange(unsigned, unsigned, int) {
  errno = ENOSYS;
  return -1;
}

// Runs `check` in a forked child; its exit code (0: every check held).
int InForkedChild(const std::function<int()>& check) {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(check());
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

TEST(ChildCall, AnswerComesBack) {
  Result<ChildAnswer> a = CallInChild(
      [](const ChildProgress&) {
        return ChildAnswer{3, "out text", "err text"};
      },
      10);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->exit_code, 3);
  EXPECT_EQ(a->out, "out text");
  EXPECT_EQ(a->err, "err text");
}

TEST(ChildCall, StuckChildIsGivenUpNamingItsStep) {
  Result<ChildAnswer> a = CallInChild(
      [](const ChildProgress& p) {
        p.Step("stat of /mnt/dead");
        ::pause();  // never answers
        return ChildAnswer{};
      },
      0.3);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().message(), "stat of /mnt/dead");
  // CallInChild abandoned it; the SIGKILL ends its pause(), and the test
  // reaps it so that later tests count no zombie among this process's
  // children.
  ::waitpid(-1, nullptr, 0);
}

// Progress restarts the deadline: the work runs four deadlines in all.
TEST(ChildCall, ProgressRestartsTheDeadline) {
  const double deadline = 0.3;
  Result<ChildAnswer> a = CallInChild(
      [&](const ChildProgress& p) {
        for (int i = 0; i < 40; ++i) {
          std::this_thread::sleep_for(std::chrono::duration<double>(deadline / 10));
          p.Advance();
        }
        return ChildAnswer{0, "done", ""};
      },
      deadline);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->out, "done");
}

TEST(ChildCall, DescriptorsClosedWhereCloseRangeIsRefused) {
  EXPECT_EQ(InForkedChild([] {
              int fds[2];
              if (::pipe(fds) != 0) return 1;
              const int high = ::fcntl(fds[0], F_DUPFD, 200);
              CloseDescriptorsFrom(3, RefusedCloseRange);
              if (IsOpen(fds[0]) || IsOpen(fds[1]) || IsOpen(high)) return 2;
              return IsOpen(0) && IsOpen(1) && IsOpen(2) ? 0 : 3;
            }),
            0);
}

TEST(ChildCall, StdinAndStderrClosedWithoutDevNull) {
  EXPECT_EQ(InForkedChild([] {
              int fds[2];
              if (::pipe(fds) != 0) return 1;
              SetChildDescriptors(fds[1], "/nonexistent/null", RefusedCloseRange);
              if (IsOpen(0) || IsOpen(2)) return 2;
              struct stat st {};
              if (::fstat(1, &st) != 0 || !S_ISFIFO(st.st_mode)) return 3;  // stdout: the pipe
              return IsOpen(fds[0]) || IsOpen(fds[1]) ? 4 : 0;
            }),
            0);
}

}  // namespace
}  // namespace stallscope
