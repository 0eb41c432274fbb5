#include "core/child_call.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace stallscope {
namespace {

constexpr size_t kStepBytes = 256;

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

[[noreturn]] void RunChild(const ChildWork& work, int out_fd, char* step_page) {
  const int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  ::dup2(null_fd, STDIN_FILENO);
  ::dup2(out_fd, STDOUT_FILENO);
  ::dup2(null_fd, STDERR_FILENO);
  ::close_range(3, ~0u, 0);
  const ChildStep step = [step_page](std::string_view what) {
    const size_t n = std::min(what.size(), kStepBytes - 1);
    std::memcpy(step_page, what.data() + (what.size() - n), n);
    step_page[n] = '\0';
  };
  WriteAll(STDOUT_FILENO, Encode(work(step)));
  ::_exit(0);
}

}  // namespace

Result<ChildAnswer> CallInChild(const ChildWork& work, double deadline_seconds) {
  void* page =
      ::mmap(nullptr, kStepBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) return Status::FromErrno("mmap", errno);
  char* step_page = static_cast<char*>(page);
  std::strcpy(step_page, "starting");
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    ::munmap(page, kStepBytes);
    return Status::FromErrno("pipe", errno);
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    ::munmap(page, kStepBytes);
    return Status::FromErrno("fork", err);
  }
  if (pid == 0) RunChild(work, fds[1], step_page);
  ::close(fds[1]);

  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline =
      Clock::now() +
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(deadline_seconds));
  std::string text;
  bool closed = false;
  while (!closed) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) break;
    pollfd p{fds[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    char buffer[65536];
    const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      closed = true;
    } else {
      text.append(buffer, static_cast<size_t>(n));
    }
  }
  ::close(fds[0]);
  if (!closed) {
    // Abandoned: the kill lands when its wait ends; nobody waits for it here.
    ::kill(pid, SIGKILL);
    std::string step(step_page);
    ::munmap(page, kStepBytes);
    return Status::Unavailable(step);
  }
  ::munmap(page, kStepBytes);
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
