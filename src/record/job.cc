#include "record/job.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

namespace stallscope {
namespace {

// An attached process that has exited but that its parent has not reaped
// yet is a zombie: kill(pid, 0) still succeeds, but it is over.
bool IsZombie(pid_t pid) {
  std::string path = "/proc/" + std::to_string(pid) + "/stat";
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buffer[1024];
  ssize_t n = read(fd, buffer, sizeof buffer - 1);
  close(fd);
  if (n <= 0) return false;
  buffer[n] = '\0';
  // "pid (comm) S ...": the state follows the last ')' (comm may hold one).
  const char* paren = strrchr(buffer, ')');
  return paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X');
}

}  // namespace

Result<Job> Job::Start(const std::vector<std::string>& argv,
                       const std::vector<std::pair<std::string, std::string>>& extra_env,
                       bool stdout_to_stderr) {
  if (argv.empty()) return Status::InvalidArgument("no command given after --");
  // The child reports a failed exec through this close-on-exec pipe: an
  // empty read means exec succeeded.
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) return Status::FromErrno("pipe", errno);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  pid_t pid = fork();
  if (pid < 0) {
    int err = errno;
    close(report[0]);
    close(report[1]);
    return Status::FromErrno("fork", err);
  }
  if (pid == 0) {
    close(report[0]);
    // Signals stallscope blocks for its signalfd must not stay blocked in CMD.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    for (const auto& [name, value] : extra_env) setenv(name.c_str(), value.c_str(), 1);
    if (stdout_to_stderr) dup2(STDERR_FILENO, STDOUT_FILENO);
    execvp(args[0], args.data());
    int err = errno;
    ssize_t ignored = write(report[1], &err, sizeof err);
    (void)ignored;
    _exit(127);
  }
  close(report[1]);
  int child_errno = 0;
  ssize_t n;
  do {
    n = read(report[0], &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  close(report[0]);
  if (n == sizeof child_errno) {
    waitpid(pid, nullptr, 0);
    if (child_errno == ENOENT) return Status::NotFound(argv[0] + ": command not found");
    return Status::FromErrno(argv[0], child_errno);
  }
  return Job(pid, true);
}

Result<Job> Job::Attach(pid_t pid) {
  if (pid <= 0) return Status::InvalidArgument("--pid " + std::to_string(pid) + ": not a pid");
  if (kill(pid, 0) != 0 && errno == ESRCH) {
    return Status::NotFound("pid " + std::to_string(pid) + ": no such process");
  }
  return Job(pid, false);
}

Job::Job(Job&& other) noexcept
    : pid_(other.pid_), is_child_(other.is_child_), reaped_(other.reaped_) {
  other.pid_ = -1;
}

Job& Job::operator=(Job&& other) noexcept {
  std::swap(pid_, other.pid_);
  std::swap(is_child_, other.is_child_);
  std::swap(reaped_, other.reaped_);
  return *this;
}

Job::~Job() = default;

std::optional<JobExit> Job::Poll() {
  if (pid_ <= 0 || reaped_) return JobExit{};
  if (!is_child_) {
    if ((kill(pid_, 0) != 0 && errno == ESRCH) || IsZombie(pid_)) {
      reaped_ = true;
      return JobExit{};
    }
    return std::nullopt;
  }
  int status = 0;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == 0) return std::nullopt;
  if (r < 0) {
    reaped_ = true;
    return JobExit{};
  }
  reaped_ = true;
  JobExit exit;
  if (WIFEXITED(status)) exit.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) exit.signal = WTERMSIG(status);
  return exit;
}

void Job::Forward(int signal) const {
  if (pid_ > 0 && !reaped_) kill(pid_, signal);
}

}  // namespace stallscope
