#include "record/job.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace stallscope {
namespace {

// In a child about to exec CMD: the signals stallscope blocks for its
// signalfd must not stay blocked there.
void UnblockAllSignals() {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
}

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

// argv as execvp takes it, built before fork (the pointers borrow argv's
// strings, which must outlive the exec).
std::vector<char*> ExecArgs(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  return args;
}

void WriteErrno(int fd, int err) {
  ssize_t ignored = write(fd, &err, sizeof err);
  (void)ignored;
}

// How a spawn went: `failed` names the step that failed and `err` its errno.
// After a failed exec the child is left unreaped for the caller.
struct Spawned {
  enum class Step { kNone, kPipe, kFork, kExec };
  pid_t pid = -1;
  Step failed = Step::kNone;
  int err = 0;
};

// Forks a child that runs in_child(report_fd), which must exec (the report
// pipe is close-on-exec, so the parent's read then sees end of file) or write
// its errno to report_fd (WriteErrno) and _exit. Returns once the child has
// exec'd or reported. The one fork-exec-report path of Start, StartRanks and
// the launcher's ranks.
template <typename InChild>
Spawned SpawnConfirmed(InChild&& in_child) {
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) return {-1, Spawned::Step::kPipe, errno};
  pid_t pid = fork();
  if (pid < 0) {
    int err = errno;
    close(report[0]);
    close(report[1]);
    return {-1, Spawned::Step::kFork, err};
  }
  if (pid == 0) {
    close(report[0]);
    in_child(report[1]);
    _exit(127);
  }
  close(report[1]);
  int child_errno = 0;
  ssize_t n;
  do {
    n = read(report[0], &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  close(report[0]);
  if (n == sizeof child_errno) return {pid, Spawned::Step::kExec, child_errno};
  return {pid, Spawned::Step::kNone, 0};
}

// Start's and StartRanks' answer: the child's pid once `command` runs, or the
// error (a command that cannot be executed is reaped and named: NotFound for
// ENOENT, as a shell's 127).
Result<pid_t> SpawnedPid(const Spawned& spawned, const std::string& command) {
  switch (spawned.failed) {
    case Spawned::Step::kNone:
      return spawned.pid;
    case Spawned::Step::kPipe:
      return Status::FromErrno("pipe", spawned.err);
    case Spawned::Step::kFork:
      return Status::FromErrno("fork", spawned.err);
    case Spawned::Step::kExec:
      break;
  }
  waitpid(spawned.pid, nullptr, 0);
  if (spawned.err == ENOENT) return Status::NotFound(command + ": command not found");
  return Status::FromErrno(command, spawned.err);
}

}  // namespace

Result<Job> Job::Start(const std::vector<std::string>& argv,
                       const std::vector<std::pair<std::string, std::string>>& extra_env,
                       bool stdout_to_stderr) {
  if (argv.empty()) return Status::InvalidArgument("no command given after --");
  std::vector<char*> args = ExecArgs(argv);
  Spawned spawned = SpawnConfirmed([&](int report_fd) {
    UnblockAllSignals();
    for (const auto& [name, value] : extra_env) setenv(name.c_str(), value.c_str(), 1);
    if (stdout_to_stderr) dup2(STDERR_FILENO, STDOUT_FILENO);
    execvp(args[0], args.data());
    WriteErrno(report_fd, errno);
  });
  Result<pid_t> pid = SpawnedPid(spawned, argv[0]);
  if (!pid.ok()) return pid.status();
  return Job(*pid, true);
}

Result<Job> Job::Attach(pid_t pid) {
  if (pid <= 0) return Status::InvalidArgument("--pid " + std::to_string(pid) + ": not a pid");
  if (kill(pid, 0) != 0 && errno == ESRCH) {
    return Status::NotFound("pid " + std::to_string(pid) + ": no such process");
  }
  return Job(pid, false);
}

Job::Job(Job&& other) noexcept
    : pid_(other.pid_),
      is_child_(other.is_child_),
      reaped_(other.reaped_),
      follows_(other.follows_),
      master_port_(other.master_port_) {
  other.pid_ = -1;
}

Job& Job::operator=(Job&& other) noexcept {
  std::swap(pid_, other.pid_);
  std::swap(is_child_, other.is_child_);
  std::swap(reaped_, other.reaped_);
  std::swap(follows_, other.follows_);
  std::swap(master_port_, other.master_port_);
  return *this;
}

Job::~Job() = default;

std::optional<JobExit> Job::Poll() {
  if (follows_) return std::nullopt;
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

bool Job::ExitedUnreaped() const {
  if (pid_ <= 0 || reaped_ || !is_child_) return false;
  siginfo_t info{};
  return waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
         info.si_pid == pid_;
}

void Job::Forward(int signal) const {
  if (pid_ > 0 && !reaped_) kill(pid_, signal);
}

}  // namespace stallscope

// ---------------------------------------------------------------------------
// StartRanks: the launcher.

namespace stallscope {
namespace {

// SIGKILL to each of `roots` and every process below it (a rank started
// through `sh -c` or a wrapper has its work in a child), read from /proc's
// parent links; children first found, then killed all at once.
void KillTrees(const std::vector<pid_t>& roots) {
  std::vector<std::pair<pid_t, pid_t>> links;  // (pid, parent)
  if (DIR* dir = opendir("/proc")) {
    while (dirent* e = readdir(dir)) {
      char* end = nullptr;
      const long pid = std::strtol(e->d_name, &end, 10);
      if (pid <= 0 || *end != '\0') continue;
      char path[64];
      std::snprintf(path, sizeof path, "/proc/%ld/stat", pid);
      int fd = open(path, O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;
      char buf[512];
      const ssize_t n = read(fd, buf, sizeof buf - 1);
      close(fd);
      if (n <= 0) continue;
      buf[n] = '\0';
      // "pid (comm) state ppid ...": the comm may hold spaces and ')'.
      const char* close_paren = std::strrchr(buf, ')');
      if (!close_paren) continue;
      char state = 0;
      long ppid = 0;
      if (std::sscanf(close_paren + 1, " %c %ld", &state, &ppid) != 2) continue;
      links.emplace_back(static_cast<pid_t>(pid), static_cast<pid_t>(ppid));
    }
    closedir(dir);
  }
  std::vector<pid_t> tree(roots.begin(), roots.end());
  for (size_t i = 0; i < tree.size() && tree.size() < 65536; ++i) {
    for (const auto& [pid, parent] : links) {
      if (parent == tree[i]) tree.push_back(pid);
    }
  }
  for (pid_t pid : tree) kill(pid, SIGKILL);
}

int64_t MonotonicNow() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<int64_t>(now.tv_sec) * 1000000000LL + now.tv_nsec;
}

// Waits for one of `set` until `deadline_ns` (CLOCK_MONOTONIC): false once
// the deadline passed; else true, with the signal (or -1, interrupted) in
// `sig`.
bool WaitSignalUntil(const sigset_t& set, int64_t deadline_ns, siginfo_t* info, int* sig) {
  const int64_t left_ns = deadline_ns - MonotonicNow();
  if (left_ns <= 0) return false;
  timespec wait{static_cast<time_t>(left_ns / 1000000000LL),
                static_cast<long>(left_ns % 1000000000LL)};
  *sig = sigtimedwait(&set, info, &wait);
  return true;
}

// A TCP port free on 127.0.0.1 now (the kernel's pick for port 0). Another
// process may take it before rank 0 binds it; torchrun has the same window.
Result<int> FreeTcpPort() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::FromErrno("socket", errno);
  struct sockaddr_in addr {};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof addr;
  if (bind(fd, reinterpret_cast<struct sockaddr*>(&addr), sizeof addr) != 0 ||
      getsockname(fd, reinterpret_cast<struct sockaddr*>(&addr), &size) != 0) {
    int err = errno;
    close(fd);
    return Status::FromErrno("a free port on 127.0.0.1", err);
  }
  close(fd);
  return static_cast<int>(ntohs(addr.sin_port));
}

// What the launcher tells the recorder of its ranks' ends, as hook records
// on the job's hook socket (STALLSCOPE_SOCKET; docs/hook-protocol.md): a
// rank's exit status, and the signals the launcher sent the others. Nothing
// when the job runs outside stallscope's recorder; a datagram that cannot be
// sent is dropped.
class LauncherReports {
 public:
  LauncherReports() {
    const char* path = std::getenv("STALLSCOPE_SOCKET");
    if (path == nullptr || std::strlen(path) >= sizeof addr_.sun_path) return;
    addr_.sun_family = AF_UNIX;
    std::strcpy(addr_.sun_path, path);
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  }
  ~LauncherReports() {
    if (fd_ >= 0) close(fd_);
  }
  LauncherReports(const LauncherReports&) = delete;
  LauncherReports& operator=(const LauncherReports&) = delete;

  void Exited(pid_t pid, int rank, int status) {
    const bool exited = WIFEXITED(status);
    Send("exit %d %d %lld %s %d\n", static_cast<int>(pid), rank,
         static_cast<long long>(MonotonicNow()), exited ? "code" : "signal",
         exited ? WEXITSTATUS(status) : WTERMSIG(status));
  }
  void SentSignal(pid_t pid, int rank, int sig) {
    Send("sent_signal %d %d %lld %d\n", static_cast<int>(pid), rank,
         static_cast<long long>(MonotonicNow()), sig);
  }

 private:
  template <typename... Args>
  void Send(const char* format, Args... args) {
    if (fd_ < 0) return;
    char line[160];
    const int n = std::snprintf(line, sizeof line, format, args...);
    if (n <= 0 || static_cast<size_t>(n) >= sizeof line) return;
    (void)sendto(fd_, line, static_cast<size_t>(n), 0, reinterpret_cast<sockaddr*>(&addr_),
                 sizeof addr_);
  }
  int fd_ = -1;
  sockaddr_un addr_{};
};

// The launcher's life after fork: never returns.
[[noreturn]] void RunLauncher(const std::vector<char*>& args,
                              const std::vector<std::pair<std::string, std::string>>& env,
                              const RankLayout& layout, int port, bool stdout_to_stderr,
                              int report_fd) {
  if (stdout_to_stderr) dup2(STDERR_FILENO, STDOUT_FILENO);
  for (const auto& [name, value] : env) setenv(name.c_str(), value.c_str(), 1);
  const int procs = layout.procs;
  const std::string world = std::to_string(layout.procs * layout.nnodes);
  setenv("WORLD_SIZE", world.c_str(), 1);
  setenv("LOCAL_WORLD_SIZE", std::to_string(procs).c_str(), 1);
  setenv("GROUP_RANK", std::to_string(layout.node_rank).c_str(), 1);
  setenv("GROUP_WORLD_SIZE", std::to_string(layout.nnodes).c_str(), 1);
  setenv("ROLE_WORLD_SIZE", world.c_str(), 1);
  setenv("ROLE_NAME", "default", 1);
  setenv("MASTER_ADDR", layout.master_addr.c_str(), 1);
  setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
  // As torchrun does with more than one process per node: one OpenMP thread
  // per rank unless the user chose, so K ranks do not each start one thread
  // per core and fight over them (which also makes a healthy rank look like
  // a straggler).
  if (procs > 1) setenv("OMP_NUM_THREADS", "1", 0);
  std::vector<pid_t> ranks;
  for (int i = 0; i < procs; ++i) {
    Spawned rank = SpawnConfirmed([&](int rank_report_fd) {
      UnblockAllSignals();
      const std::string rank = std::to_string(layout.node_rank * procs + i);
      setenv("RANK", rank.c_str(), 1);
      setenv("ROLE_RANK", rank.c_str(), 1);
      setenv("LOCAL_RANK", std::to_string(i).c_str(), 1);
      execvp(args[0], args.data());
      WriteErrno(rank_report_fd, errno);
    });
    if (rank.failed != Spawned::Step::kNone) {
      WriteErrno(report_fd, rank.err);
      for (pid_t r : ranks) kill(r, SIGKILL);
      if (rank.failed == Spawned::Step::kPipe) _exit(126);
      while (wait(nullptr) > 0) {
      }
      _exit(127);
    }
    ranks.push_back(rank.pid);
  }
  close(report_fd);  // every rank runs: the caller's read sees end of file

  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGCHLD);
  size_t alive = ranks.size();
  LauncherReports reports;
  auto rank_of = [&](size_t i) { return layout.node_rank * procs + static_cast<int>(i); };
  std::optional<int> first_failure;  // as a shell status
  // Once a rank failed and the others were sent SIGTERM: when (CLOCK_MONOTONIC,
  // ns) a rank that ignores it is sent SIGKILL; 0: not yet.
  int64_t kill_at_ns = 0;
  bool user_stop = false;  // a SIGINT or SIGTERM reached the launcher
  while (alive > 0) {
    siginfo_t info;
    int sig = 0;
    if (kill_at_ns != 0 && !WaitSignalUntil(set, kill_at_ns, &info, &sig)) {
      std::vector<pid_t> live;
      for (size_t i = 0; i < ranks.size(); ++i) {
        if (ranks[i] <= 0) continue;
        live.push_back(ranks[i]);
        reports.SentSignal(ranks[i], rank_of(i), SIGKILL);
      }
      KillTrees(live);
      kill_at_ns = 0;
      continue;
    }
    if (kill_at_ns == 0) sig = sigwaitinfo(&set, &info);
    if (sig < 0) continue;
    if (sig != SIGCHLD) {
      // The user asked the job to stop: ranks that end on it are no failure
      // to hurry the others over.
      user_stop = true;
      // Sent to the launcher alone: the ranks have not seen it. From the
      // terminal they have (same process group).
      if (info.si_code == SI_USER || info.si_code == SI_QUEUE) {
        for (pid_t r : ranks) {
          if (r > 0) kill(r, sig);
        }
      }
      continue;
    }
    int status = 0;
    pid_t done;
    while ((done = waitpid(-1, &status, WNOHANG)) > 0) {
      for (size_t i = 0; i < ranks.size(); ++i) {
        pid_t& r = ranks[i];
        if (r != done) continue;
        r = -1;
        --alive;
        reports.Exited(done, rank_of(i), status);
        bool failed = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
        if (failed && !first_failure) {
          first_failure = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
          for (size_t j = 0; j < ranks.size(); ++j) {
            if (ranks[j] <= 0) continue;
            kill(ranks[j], SIGTERM);
            if (!user_stop) reports.SentSignal(ranks[j], rank_of(j), SIGTERM);
          }
          if (!user_stop) kill_at_ns = MonotonicNow() + kRankTermGraceSeconds * 1000000000LL;
        }
      }
    }
  }
  _exit(first_failure.value_or(0) & 0xff);
}

}  // namespace

Result<Job> Job::StartRanks(const std::vector<std::string>& argv,
                            const std::vector<std::pair<std::string, std::string>>& extra_env,
                            const RankLayout& layout, bool stdout_to_stderr) {
  if (argv.empty()) return Status::InvalidArgument("no command given after --");
  if (layout.procs < 1) {
    return Status::InvalidArgument("--procs " + std::to_string(layout.procs) +
                                   ": must be at least 1");
  }
  Result<int> port = layout.master_port > 0 ? Result<int>(layout.master_port) : FreeTcpPort();
  if (!port.ok()) return port.status();
  std::vector<char*> args = ExecArgs(argv);
  Spawned spawned = SpawnConfirmed([&](int report_fd) {
    RunLauncher(args, extra_env, layout, *port, stdout_to_stderr, report_fd);
  });
  Result<pid_t> pid = SpawnedPid(spawned, argv[0]);
  if (!pid.ok()) return pid.status();
  Job job(*pid, true);
  job.master_port_ = *port;
  return job;
}

}  // namespace stallscope
