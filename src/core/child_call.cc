#include "core/child_call.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <new>

namespace stallscope {
namespace {

constexpr size_t kStepBytes = 256;
// Past this many, the close loop stops: a soft limit of a billion (some
// containers set one) would take minutes of close() calls.
constexpr rlim_t kMostDescriptorsClosed = 1 << 20;
// How often the caller looks at the child's progress while it waits.
constexpr int kPollMilliseconds = 100;

}  // namespace

struct ChildPage {
  std::atomic<uint64_t> answered{0};
  char step[kStepBytes] = "starting";
};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "the counter is shared across fork");

void ChildProgress::Step(std::string_view what) const {
  if (page_ == nullptr) return;
  const size_t n = std::min(what.size(), kStepBytes - 1);
  std::memcpy(page_->step, what.data() + (what.size() - n), n);
  page_->step[n] = '\0';
  Advance();  // the call before this step answered
}

void ChildProgress::Advance() const {
  if (page_ != nullptr) page_->answered.fetch_add(1, std::memory_order_relaxed);
}

namespace {

int RealCloseRange(unsigned first, unsigned last, int flags) {
  return static_cast<int>(::syscall(SYS_close_range, first, last, flags));
}

// The answer on the pipe: "<exit code>\n<length of err>\n" err out.
std::string Encode(const ChildAnswer& a) {
  return std::to_string(a.exit_code) + "\n" + std::to_string(a.err.size()) + "\n" + a.err + a.out;
}

Result<ChildAnswer> Decode(const std::string& text) {
  const size_t first = text.find('\n');
  const size_t second = first == std::string::npos ? first : text.find('\n', first + 1);
  if (second == std::string::npos) return Status::Unavailable("the child's answer is cut short");
  ChildAnswer a;
  a.exit_code = std::atoi(text.substr(0, first).c_str());
  const size_t err_size = std::strtoull(text.c_str() + first + 1, nullptr, 10);
  if (second + 1 + err_size > text.size()) {
    return Status::Unavailable("the child's answer is cut short");
  }
  a.err = text.substr(second + 1, err_size);
  a.out = text.substr(second + 1 + err_size);
  return a;
}

void WriteAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

[[noreturn]] void RunChild(const ChildWork& work, int out_fd, ChildPage* page) {
  SetChildDescriptors(out_fd);
  WriteAll(STDOUT_FILENO, Encode(work(ChildProgress(page))));
  ::_exit(0);
}

// Reads the child's answer until it closes the pipe (true) or makes no
// progress for `idle_deadline_seconds` (false).
bool ReadAnswer(int fd, const ChildPage& page, double idle_deadline_seconds, std::string& text) {
  using Clock = std::chrono::steady_clock;
  const auto idle = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(idle_deadline_seconds));
  Clock::time_point last_progress = Clock::now();
  uint64_t answered = page.answered.load(std::memory_order_relaxed);
  while (true) {
    const uint64_t now_answered = page.answered.load(std::memory_order_relaxed);
    if (now_answered != answered) {
      answered = now_answered;
      last_progress = Clock::now();
    }
    if (Clock::now() - last_progress >= idle) return false;
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, kPollMilliseconds);
    if (ready < 0 && errno != EINTR) return false;
    if (ready <= 0) continue;
    char buffer[65536];
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;
    text.append(buffer, static_cast<size_t>(n));
    last_progress = Clock::now();  // a long answer still coming is progress
  }
}

}  // namespace

void CloseDescriptorsFrom(int lowest, CloseRangeCall close_range_call) {
  if (close_range_call == nullptr) close_range_call = RealCloseRange;
  if (close_range_call(static_cast<unsigned>(lowest), ~0u, 0) == 0) return;
  struct rlimit limit {};
  rlim_t last = 4096;
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    last = limit.rlim_cur;
  }
  last = std::min(last, kMostDescriptorsClosed);
  for (rlim_t fd = static_cast<rlim_t>(lowest); fd < last; ++fd) ::close(static_cast<int>(fd));
}

void SetChildDescriptors(int out_fd, const char* null_path, CloseRangeCall close_range_call) {
  if (out_fd != STDOUT_FILENO) ::dup2(out_fd, STDOUT_FILENO);
  const int null_fd = ::open(null_path, O_RDWR);
  if (null_fd >= 0) {
    ::dup2(null_fd, STDIN_FILENO);
    ::dup2(null_fd, STDERR_FILENO);
  } else {
    // Better no stdin or stderr than the caller's: a stuck child must not
    // keep the caller's terminal or pipe open.
    ::close(STDIN_FILENO);
    ::close(STDERR_FILENO);
  }
  CloseDescriptorsFrom(3, close_range_call);
}

Result<ChildAnswer> CallInChild(const ChildWork& work, double idle_deadline_seconds) {
  void* mapped =
      ::mmap(nullptr, sizeof(ChildPage), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) return Status::FromErrno("mmap", errno);
  ChildPage* page = new (mapped) ChildPage;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    ::munmap(mapped, sizeof(ChildPage));
    return Status::FromErrno("pipe", errno);
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    ::munmap(mapped, sizeof(ChildPage));
    return Status::FromErrno("fork", err);
  }
  if (pid == 0) RunChild(work, fds[1], page);
  ::close(fds[1]);

  std::string text;
  const bool closed = ReadAnswer(fds[0], *page, idle_deadline_seconds, text);
  ::close(fds[0]);
  if (!closed) {
    // Abandoned: the kill lands when its wait ends; nobody waits for it here.
    ::kill(pid, SIGKILL);
    page->step[kStepBytes - 1] = '\0';
    std::string step(page->step);
    ::munmap(mapped, sizeof(ChildPage));
    return Status::Unavailable(step);
  }
  ::munmap(mapped, sizeof(ChildPage));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    return Status::Unavailable("the child died of signal " + std::to_string(WTERMSIG(status)));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    return Status::Unavailable("the child exited " + std::to_string(WEXITSTATUS(status)));
  }
  return Decode(text);
}

}  // namespace stallscope
