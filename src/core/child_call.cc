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
#include <mutex>
#include <new>
#include <utility>
#include <vector>

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

// Children killed while they ran (given up, or dropped running) and not
// yet waited for: one stuck in the kernel dies when its wait ends, if ever.
// Each later Start and Poll reaps those that ended, so that a long-lived
// caller (the exporter, a long `run`) gathers no zombies. A pid is here or
// in one ChildCall, never both: nothing waits for a pid twice, which could
// take the status of an unrelated child that reused it.
std::mutex& AbandonedMutex() {
  static std::mutex mutex;
  return mutex;
}

std::vector<pid_t>& Abandoned() {
  static auto* pids = new std::vector<pid_t>;  // never destroyed: exit handlers may still run
  return *pids;
}

// True once `pid` ended and was waited for (or is not our child any more).
bool ReapedWithoutBlocking(pid_t pid) {
  int status = 0;
  pid_t reaped;
  while ((reaped = ::waitpid(pid, &status, WNOHANG)) < 0 && errno == EINTR) {
  }
  return reaped != 0;
}

[[noreturn]] void RunChild(const ChildWork& work, int out_fd, ChildPage* page) {
  SetChildDescriptors(out_fd);
  WriteAll(STDOUT_FILENO, Encode(work(ChildProgress(page))));
  ::_exit(0);
}

}  // namespace

size_t ReapAbandonedChildren() {
  std::lock_guard<std::mutex> lock(AbandonedMutex());
  std::vector<pid_t>& pids = Abandoned();
  pids.erase(std::remove_if(pids.begin(), pids.end(), ReapedWithoutBlocking), pids.end());
  return pids.size();
}

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

Result<ChildCall> ChildCall::Start(const ChildWork& work) {
  ReapAbandonedChildren();
  void* mapped =
      ::mmap(nullptr, sizeof(ChildPage), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) return Status::FromErrno("mmap", errno);
  ChildCall call;
  call.page_ = new (mapped) ChildPage;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return Status::FromErrno("pipe", errno);
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    return Status::FromErrno("fork", err);
  }
  if (pid == 0) {
    ::fcntl(fds[1], F_SETFL, 0);  // the child's writes block
    RunChild(work, fds[1], call.page_);
  }
  ::close(fds[1]);
  call.pid_ = pid;
  call.fd_ = fds[0];
  call.last_progress_ = std::chrono::steady_clock::now();
  return call;
}

ChildCall::ChildCall(ChildCall&& other) noexcept { *this = std::move(other); }

ChildCall& ChildCall::operator=(ChildCall&& other) noexcept {
  if (this != &other) {
    Release();
    pid_ = std::exchange(other.pid_, -1);
    fd_ = std::exchange(other.fd_, -1);
    page_ = std::exchange(other.page_, nullptr);
    text_ = std::move(other.text_);
    answered_ = other.answered_;
    last_progress_ = other.last_progress_;
  }
  return *this;
}

ChildCall::~ChildCall() { Release(); }

void ChildCall::Release() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  if (pid_ > 0) {
    // Dropped while it ran, or given up: killed (again: it is not reaped,
    // so the pid is still its own) and, if not ended yet, left to the
    // reaping on later calls.
    ::kill(pid_, SIGKILL);
    if (!ReapedWithoutBlocking(pid_)) {
      std::lock_guard<std::mutex> lock(AbandonedMutex());
      Abandoned().push_back(pid_);
    }
    pid_ = -1;
  }
  if (page_ != nullptr) ::munmap(page_, sizeof(ChildPage));
  page_ = nullptr;
}

bool ChildCall::ReapIfEnded() {
  if (pid_ <= 0) return true;
  if (fd_ >= 0 || !ReapedWithoutBlocking(pid_)) return false;
  pid_ = -1;
  return true;
}

std::optional<Result<ChildAnswer>> ChildCall::Poll(double idle_deadline_seconds) {
  ReapAbandonedChildren();
  if (fd_ < 0)
    return Result<ChildAnswer>(Status::Unavailable("the child was polled after it ended"));
  using Clock = std::chrono::steady_clock;
  const uint64_t answered = page_->answered.load(std::memory_order_relaxed);
  if (answered != answered_) {
    answered_ = answered;
    last_progress_ = Clock::now();
  }
  bool closed = false;
  while (true) {
    char buffer[65536];
    const ssize_t n = ::read(fd_, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;  // EAGAIN: nothing more for now
    if (n == 0) {
      closed = true;
      break;
    }
    text_.append(buffer, static_cast<size_t>(n));
    last_progress_ = Clock::now();  // a long answer still coming is progress
  }
  if (!closed) {
    const auto idle = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(idle_deadline_seconds));
    if (Clock::now() - last_progress_ < idle) return std::nullopt;
    // Given up: the kill lands when its wait ends; it is reaped later
    // (ReapIfEnded, or once this ChildCall is gone, on later calls).
    ::kill(pid_, SIGKILL);
    page_->step[kStepBytes - 1] = '\0';
    std::string step(page_->step);
    ::close(fd_);
    fd_ = -1;
    return Result<ChildAnswer>(Status::Unavailable(step));
  }
  ::close(fd_);
  fd_ = -1;
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  if (WIFSIGNALED(status)) {
    return Result<ChildAnswer>(
        Status::Unavailable("the child died of signal " + std::to_string(WTERMSIG(status))));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    return Result<ChildAnswer>(
        Status::Unavailable("the child exited " + std::to_string(WEXITSTATUS(status))));
  }
  return Decode(text_);
}

Result<ChildAnswer> CallInChild(const ChildWork& work, double idle_deadline_seconds) {
  Result<ChildCall> call = ChildCall::Start(work);
  if (!call.ok()) return call.status();
  while (true) {
    pollfd p{call->fd(), POLLIN, 0};
    ::poll(&p, 1, kPollMilliseconds);
    if (std::optional<Result<ChildAnswer>> done = call->Poll(idle_deadline_seconds)) return *done;
  }
}

}  // namespace stallscope
