// CallInChild (core/child_call.h): the answer comes back; a child that
// stops answering is given up one idle deadline after its last progress
// while one that keeps advancing runs past it; the child's descriptors are
// closed also where close_range(2) is refused, and stdin/stderr are closed
// where /dev/null cannot be opened; children given up or dropped leave no
// zombie once a later call reaped them; a threaded caller's children still
// allocate. Descriptor tests run in a forked child so that the test process
// keeps its own.
#include "core/child_call.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

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

// Every test leaves no child of the test process behind, alive or a zombie:
// the live process-tree tests that run after them in the same process count
// its children. Children given up are reaped as they end (10 s at most).
struct NoChildLeftBehind {
  ~NoChildLeftBehind() {
    for (int tries = 0; tries < 1000 && ReapAbandonedChildren() > 0; ++tries) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_EQ(ReapAbandonedChildren(), 0u) << "a child given up is still running";
  }
};

TEST(ChildCall, AnswerComesBack) {
  NoChildLeftBehind reaped;
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
  NoChildLeftBehind reaped;
  Result<ChildAnswer> a = CallInChild(
      [](const ChildProgress& p) {
        p.Step("stat of /mnt/dead");
        ::pause();  // never answers
        return ChildAnswer{};
      },
      0.3);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().message(), "stat of /mnt/dead");
}

// Where each child writes its pid: a shared page survives the fork, the
// child's descriptors do not.
struct ChildPids {
  ChildPids() {
    void* page = ::mmap(nullptr, sizeof(pid_t) * kMost, PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    pids = page == MAP_FAILED ? nullptr : static_cast<pid_t*>(page);
    if (pids != nullptr) std::fill(pids, pids + kMost, 0);
  }
  ~ChildPids() {
    if (pids != nullptr) ::munmap(pids, sizeof(pid_t) * kMost);
  }
  static constexpr int kMost = 8;
  pid_t* pids;
};

// The state letter in /proc/PID/stat when `pid` is this process's child;
// '\0' when it is gone (or someone else's after a reuse).
char StateAsOurChild(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return '\0';
  char state = 0;
  int parent = 0;
  if (std::sscanf(stat.c_str() + close + 1, " %c %d", &state, &parent) != 2) return '\0';
  return parent == ::getpid() ? state : '\0';
}

// Until every child has died (a zombie or reaped): the SIGKILLs are sent,
// only their landing is waited for, so the check below is not a race.
void WaitUntilDead(const ChildPids& children) {
  for (int i = 0; i < ChildPids::kMost; ++i) {
    if (children.pids[i] == 0) continue;
    for (int tries = 0; tries < 3000; ++tries) {
      const char state = StateAsOurChild(children.pids[i]);
      if (state == '\0' || state == 'Z') break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
}

void ExpectNoZombie(const ChildPids& children) {
  for (int i = 0; i < ChildPids::kMost; ++i) {
    if (children.pids[i] == 0) continue;
    EXPECT_EQ(StateAsOurChild(children.pids[i]), '\0') << "child " << children.pids[i];
  }
}

TEST(ChildCall, ChildrenGivenUpLeaveNoZombieAfterALaterCall) {
  NoChildLeftBehind reaped;
  ChildPids children;
  ASSERT_NE(children.pids, nullptr);
  for (int i = 0; i < 5; ++i) {
    Result<ChildAnswer> a = CallInChild(
        [&](const ChildProgress& p) {
          children.pids[i] = ::getpid();
          p.Step("read of /mnt/dead/x");
          ::pause();
          return ChildAnswer{};
        },
        0.2);
    ASSERT_FALSE(a.ok());
  }
  WaitUntilDead(children);
  ASSERT_TRUE(CallInChild([](const ChildProgress&) { return ChildAnswer{}; }, 10).ok());
  ExpectNoZombie(children);
  EXPECT_EQ(ReapAbandonedChildren(), 0u);
}

TEST(ChildCall, ADroppedRunningChildIsReapedByTheNextStart) {
  NoChildLeftBehind reaped;
  ChildPids children;
  ASSERT_NE(children.pids, nullptr);
  {
    Result<ChildCall> call = ChildCall::Start([&](const ChildProgress&) {
      children.pids[0] = ::getpid();
      ::pause();
      return ChildAnswer{};
    });
    ASSERT_TRUE(call.ok()) << call.status().message();
    for (int tries = 0; tries < 3000 && children.pids[0] == 0; ++tries) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_NE(children.pids[0], 0);
  }  // dropped while it runs
  WaitUntilDead(children);
  Result<ChildCall> next = ChildCall::Start([](const ChildProgress&) { return ChildAnswer{}; });
  ASSERT_TRUE(next.ok());
  ExpectNoZombie(children);
}

TEST(ChildCall, AGivenUpChildIsReapedByItsCallOnceItEnded) {
  NoChildLeftBehind reaped;
  ChildPids children;
  ASSERT_NE(children.pids, nullptr);
  Result<ChildCall> call = ChildCall::Start([&](const ChildProgress&) {
    children.pids[0] = ::getpid();
    ::pause();
    return ChildAnswer{};
  });
  ASSERT_TRUE(call.ok());
  std::optional<Result<ChildAnswer>> done;
  while (!(done = call->Poll(0.1))) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_FALSE(done->ok());
  ASSERT_GT(call->pid(), 0);
  WaitUntilDead(children);
  EXPECT_TRUE(call->ReapIfEnded());
  EXPECT_EQ(call->pid(), -1);
  ExpectNoZombie(children);
}

// Other threads allocate without pause while children are forked and
// allocate: glibc resets malloc's locks in the child, so a lock another
// thread held at the fork never blocks the child (core/child_call.h, fork
// safety). A child that hung on one would be given up after the deadline.
// AddressSanitizer's own allocator does not reset its locks in a forked
// child, so under it the child can hang where glibc's malloc never does: the
// test speaks of the allocator the product ships with.
TEST(ChildCall, ChildOfAThreadedCallerAllocates) {
  NoChildLeftBehind reaped;
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's allocator is not fork-safe across threads; glibc's is";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  GTEST_SKIP() << "AddressSanitizer's allocator is not fork-safe across threads; glibc's is";
#endif
#endif
  std::atomic<bool> stop{false};
  std::vector<std::thread> allocators;
  for (int t = 0; t < 3; ++t) {
    allocators.emplace_back([&stop] {
      while (!stop.load(std::memory_order_relaxed)) {
        std::vector<std::string> v;
        for (int i = 0; i < 64; ++i) v.emplace_back(static_cast<size_t>(100 + i * 37), 'x');
      }
    });
  }
  int answered = 0;
  for (int i = 0; i < 40; ++i) {
    Result<ChildAnswer> a = CallInChild(
        [](const ChildProgress&) {
          std::string out;
          for (int k = 0; k < 1000; ++k) out += std::to_string(k) + std::string(50, 'y');
          return ChildAnswer{0, std::to_string(out.size()), ""};
        },
        30);
    if (a.ok() && !a->out.empty()) ++answered;
  }
  stop = true;
  for (std::thread& t : allocators) t.join();
  EXPECT_EQ(answered, 40);
}

// Progress restarts the deadline: the work runs four deadlines in all.
TEST(ChildCall, ProgressRestartsTheDeadline) {
  NoChildLeftBehind reaped;
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
  NoChildLeftBehind reaped;
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
  NoChildLeftBehind reaped;
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
