// Slurm's prolog, epilog and task prolog, and a job's merged report:
// slurm_job.h.
#include "app/slurm_job.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <map>
#include <thread>

#include "core/atomic_file.h"
#include "core/file.h"
#include "core/json_text.h"
#include "core/text.h"
#include "dist/node_layout.h"
#include "formats/nccl_log/files.h"
#include "probe/slurm_job.h"
#include "render/run_report.h"

namespace stallscope {
namespace {

Result<double> ParseSeconds(std::string_view value, std::string_view where) {
  char* end = nullptr;
  const std::string text(value);
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !(v > 0) || v > 86400) {
    return Status::InvalidArgument(std::string(where) + ": '" + text +
                                   "' is not a number of seconds (more than 0, at most 86400)");
  }
  return v;
}

bool IsDigits(std::string_view s) { return !s.empty() && ParseUint(s).has_value(); }

std::string FormatDouble(double v) { return fmt::format("{:g}", v); }

// mkdir -p, each new folder with `mode`.
Status MakeFolders(const std::string& path, mode_t mode) {
  for (size_t at = 1; at <= path.size(); ++at) {
    if (at != path.size() && path[at] != '/') continue;
    const std::string part = path.substr(0, at);
    if (mkdir(part.c_str(), mode) != 0 && errno != EEXIST) return Status::FromErrno(part, errno);
  }
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return Status::FromErrno(path, errno);
  if (!S_ISDIR(st.st_mode)) return Status::InvalidArgument(path + ": not a folder");
  return Status::Ok();
}

// The recorder the prolog started for this job, still running as the job's
// user: the pid's command line is `... watch --slurm-job ID ...` and its
// real uid the job's. A pid reused since is left alone.
bool IsJobRecorder(pid_t pid, const SlurmJobEnv& job) {
  const std::string dir = "/proc/" + std::to_string(pid);
  Result<std::string> cmdline = ReadFile(dir + "/cmdline", 1 << 16);
  Result<std::string> status = ReadFile(dir + "/status", 1 << 16);
  if (!cmdline.ok() || !status.ok()) return false;
  const std::vector<std::string_view> words = Split(*cmdline, '\0');
  bool watch = false, ours = false;
  for (size_t i = 0; i < words.size(); ++i) {
    if (words[i] == "watch") watch = true;
    if (words[i] == "--slurm-job" && i + 1 < words.size() && words[i + 1] == job.id) ours = true;
  }
  size_t uid_at = status->find("\nUid:");
  if (uid_at == std::string::npos) return false;
  const long uid = std::strtol(status->c_str() + uid_at + 5, nullptr, 10);
  return watch && ours && uid == static_cast<long>(job.uid);
}

// Drops to the job's user and groups for good; a failure ends the process.
void BecomeJobUser(const SlurmJobEnv& job) {
  if (getuid() == job.uid && geteuid() == job.uid) return;
  if (initgroups(job.user.c_str(), job.gid) != 0 && setgroups(1, &job.gid) != 0) _exit(70);
  if (setgid(job.gid) != 0 || setuid(job.uid) != 0) _exit(70);
  if (job.uid != 0 && setuid(0) == 0) _exit(70);  // the drop must be for good
}

// stdin from /dev/null, stdout and stderr to `log` (or /dev/null), every
// other descriptor closed: slurmd waits on the pipes it gave the prolog.
void DetachDescriptors(const std::string& log) {
  int null = open("/dev/null", O_RDWR);
  int out = log.empty() ? -1 : open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (null >= 0) dup2(null, 0);
  dup2(out >= 0 ? out : null, 1);
  dup2(out >= 0 ? out : null, 2);
  closefrom(3);
}

// Runs `body` in a grandchild in a session of its own (so that slurmd's
// end of the prolog's process group does not reach it); returns the
// grandchild's pid, once the child in between has ended.
template <typename Body>
Result<pid_t> StartDetached(Body body) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return Status::FromErrno("pipe", errno);
  pid_t child = fork();
  if (child < 0) return Status::FromErrno("fork", errno);
  if (child == 0) {
    close(pipe_fds[0]);
    setsid();
    pid_t grandchild = fork();
    if (grandchild == 0) {
      // slurmd's pipes let go before anything that may wait (NSS, NFS).
      close(pipe_fds[1]);
      DetachDescriptors("");
      setpgid(0, 0);  // a group of its own: the epilog ends it and what it started
      try {
        body();
      } catch (...) {
        _exit(70);
      }
      _exit(0);
    }
    (void)!write(pipe_fds[1], &grandchild, sizeof grandchild);
    _exit(grandchild > 0 ? 0 : 1);
  }
  close(pipe_fds[1]);
  pid_t grandchild = -1;
  ssize_t n = read(pipe_fds[0], &grandchild, sizeof grandchild);
  close(pipe_fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  if (n != sizeof grandchild || grandchild <= 0) return Status::Unavailable("fork failed");
  return grandchild;
}

// A descriptor that names the process itself, not its pid (-1 when gone).
int OpenPidFd(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

void SignalPidFd(int pidfd, int signal) {
  if (pidfd >= 0) (void)syscall(SYS_pidfd_send_signal, pidfd, signal, nullptr, 0);
}

// Whether the process behind a pidfd has ended (or the descriptor failed).
bool PidFdEnded(int pidfd, int wait_ms) {
  if (pidfd < 0) return true;
  struct pollfd p = {pidfd, POLLIN, 0};
  return poll(&p, 1, wait_ms) != 0;
}

// A folder of root's (the state folder and its jobs/): a real folder owned
// by this process's user, writable by no one else; made when missing.
Status CheckStateFolder(const std::string& path) {
  if (Status made = MakeFolders(path, 0755); !made.ok()) return made;
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) return Status::FromErrno(path, errno);
  if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022) != 0) {
    return Status::InvalidArgument(
        path + ": the state folder must be a folder of uid " + std::to_string(geteuid()) +
        " that no one else may write (not a link); fix it or set state_dir");
  }
  return Status::Ok();
}

// A run file's or mark's name without its suffix, as node and try:
// NODE -> (NODE, 0), NODE.r2 -> (NODE, 2).
std::pair<std::string, int> NodeAndTry(const std::string& stem) {
  size_t dot = stem.rfind(".r");
  if (dot != std::string::npos && dot + 2 < stem.size() &&
      stem.find_first_not_of("0123456789", dot + 2) == std::string::npos) {
    return {stem.substr(0, dot), std::atoi(stem.c_str() + dot + 2)};
  }
  return {stem, 0};
}

// Removes the files in a folder of the job's (sockets, step rings; no
// sub-folders are made there), then the folder. Links are removed, never
// followed.
void RemoveSocketFolder(const std::string& dir) {
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  if (DIR* d = fdopendir(fd)) {
    std::vector<std::string> names;
    while (struct dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    for (const std::string& name : names) unlinkat(dirfd(d), name.c_str(), 0);
    closedir(d);
  } else {
    close(fd);
  }
  rmdir(dir.c_str());
}

}  // namespace

Result<SlurmSettings> ParseSlurmSettings(std::string_view text, std::string_view file_name) {
  SlurmSettings s;
  int line_number = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_number;
    if (size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    line = Trim(line);
    if (line.empty()) continue;
    size_t eq = line.find('=');
    if (eq == std::string_view::npos) {
      return Status::ParseError(file_name, line_number, "expected `key = value`");
    }
    std::string_view key = Trim(line.substr(0, eq));
    std::string_view value = Trim(line.substr(eq + 1));
    const std::string where = std::string(file_name) + ":" + std::to_string(line_number);
    auto seconds = [&](double& into) -> Status {
      Result<double> v = ParseSeconds(value, where + ": " + std::string(key));
      if (!v.ok()) return v.status();
      into = *v;
      return Status::Ok();
    };
    Status parsed = Status::Ok();
    if (key == "output" || key == "state_dir") {
      if (value.empty() || value.front() != '/') {
        return Status::ParseError(file_name, line_number,
                                  std::string(key) + ": an absolute path is expected");
      }
      (key == "output" ? s.output : s.state_dir) = std::string(value);
    } else if (key == "interval") {
      parsed = seconds(s.interval_seconds);
    } else if (key == "stop_wait") {
      parsed = seconds(s.stop_wait_seconds);
    } else if (key == "start_wait") {
      parsed = seconds(s.start_wait_seconds);
    } else if (key == "merge_wait") {
      parsed = seconds(s.merge_wait_seconds);
    } else {
      return Status::ParseError(file_name, line_number,
                                "unknown key '" + std::string(key) +
                                    "' (known: output, state_dir, interval, stop_wait, "
                                    "start_wait, merge_wait)");
    }
    if (!parsed.ok()) return parsed;
  }
  return s;
}

Result<SlurmSettings> LoadSlurmSettings() {
  const char* named = std::getenv("STALLSCOPE_SLURM_CONF");
  const std::string path = named && *named ? named : kSlurmSettingsFile;
  Result<std::string> text = ReadFile(path, 1 << 16);
  if (!text.ok()) {
    if (text.status().IsNotFound() && !(named && *named)) return SlurmSettings{};
    return text.status();
  }
  return ParseSlurmSettings(*text, path);
}

Result<std::string> ExpandSlurmFolder(std::string_view pattern, std::string_view work_dir,
                                      std::string_view job_id, std::string_view user) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%') {
      out += pattern[i];
      continue;
    }
    const char next = i + 1 < pattern.size() ? pattern[i + 1] : '\0';
    ++i;
    switch (next) {
      case 'w':
        out += work_dir;
        break;
      case 'j':
        out += job_id;
        break;
      case 'u':
        out += user;
        break;
      case '%':
        out += '%';
        break;
      default:
        return Status::InvalidArgument("output '" + std::string(pattern) + "': %" +
                                       std::string(1, next) + " is not %w, %j, %u or %%");
    }
  }
  return out;
}

Result<SlurmJobEnv> ReadSlurmJobEnv(const EnvLookup& env) {
  SlurmJobEnv job;
  auto need = [&](const char* name, std::string& into) -> Status {
    std::optional<std::string> v = env(name);
    if (!v || v->empty()) return Status::NotFound(std::string(name) + " is not set");
    into = *v;
    return Status::Ok();
  };
  std::string uid, gid;
  for (auto [name, into] : {std::pair<const char*, std::string*>{"SLURM_JOB_ID", &job.id},
                            {"SLURM_JOB_UID", &uid},
                            {"SLURM_JOB_GID", &gid}}) {
    if (Status s = need(name, *into); !s.ok()) return s;
  }
  if (!IsDigits(uid) || !IsDigits(gid) || !CheckSlurmJobId(job.id).ok()) {
    return Status::InvalidArgument("SLURM_JOB_ID, SLURM_JOB_UID and SLURM_JOB_GID must be numbers");
  }
  job.uid = static_cast<uid_t>(std::strtoul(uid.c_str(), nullptr, 10));
  job.gid = static_cast<gid_t>(std::strtoul(gid.c_str(), nullptr, 10));
  job.user = env("SLURM_JOB_USER").value_or("");
  job.work_dir = env("SLURM_JOB_WORK_DIR").value_or("");
  if (job.work_dir.empty() || job.work_dir.front() != '/') {
    return Status::NotFound("SLURM_JOB_WORK_DIR is not an absolute path");
  }
  job.node = env("SLURMD_NODENAME").value_or("");
  if (job.node.empty()) job.node = ShortHostname(Root("/"));
  job.node_list = env("SLURM_JOB_NODELIST").value_or(env("SLURM_NODELIST").value_or(""));
  job.partition = env("SLURM_JOB_PARTITION").value_or("");
  job.cpus = env("SLURM_JOB_CPUS_PER_NODE").value_or("");
  job.gpus = env("SLURM_JOB_GPUS").value_or(env("CUDA_VISIBLE_DEVICES").value_or(""));
  // slurmd 22.05 gives prologs SLURM_JOB_RESTART_COUNT; other versions
  // SLURM_RESTART_COUNT.
  std::string restarts =
      env("SLURM_JOB_RESTART_COUNT").value_or(env("SLURM_RESTART_COUNT").value_or("0"));
  if (IsDigits(restarts)) job.restart_count = std::atoi(restarts.c_str());
  return job;
}

Result<SlurmJobPaths> PathsOfSlurmJob(const SlurmSettings& settings, const SlurmJobEnv& job) {
  Result<std::string> folder = ExpandSlurmFolder(settings.output, job.work_dir, job.id, job.user);
  if (!folder.ok()) return folder.status();
  if (job.node.empty() || job.node.find('/') != std::string::npos || job.node[0] == '.') {
    return Status::InvalidArgument("node name '" + job.node + "' cannot name a file");
  }
  SlurmJobPaths p;
  p.folder = *folder;
  const std::string stem =
      p.folder + "/" + job.node +
      (job.restart_count > 0 ? ".r" + std::to_string(job.restart_count) : std::string());
  p.run_file = stem + ".db";
  p.log_file = stem + ".log";
  p.done_file = stem + ".done";
  p.socket_dir = settings.state_dir + "/job-" + job.id;
  p.job_line = settings.state_dir + "/jobs/" + job.id;
  return p;
}

SlurmJobLine LineOfSlurmJob(const SlurmJobEnv& job, pid_t recorder) {
  SlurmJobLine line;
  line.job_id = job.id;
  line.user = job.user;
  line.uid = job.uid;
  line.partition = job.partition;
  line.nodes = job.node_list;
  line.cpus = job.cpus;
  line.gpus = job.gpus;
  line.recorder_pid = recorder;
  return line;
}

void NoteSlurmJobName(const SlurmSettings& settings, const EnvLookup& env) {
  std::optional<std::string> id = env("SLURM_JOB_ID");
  std::optional<std::string> name = env("SLURM_JOB_NAME");
  if (!id || !CheckSlurmJobId(*id).ok() || !name || name->empty()) return;
  const std::string dir = settings.state_dir + "/job-" + *id;
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid()) return;
  (void)WriteFileAtomically(dir + "/job_name", CleanSlurmJobName(*name) + "\n");
}

Status SlurmProlog(const SlurmSettings& settings, const SlurmJobEnv& job,
                   const std::string& stallscope_exe) {
  Result<SlurmJobPaths> paths = PathsOfSlurmJob(settings, job);
  if (!paths.ok()) return paths.status();
  if (Status s = CheckStateFolder(settings.state_dir); !s.ok()) return s;
  if (Status s = CheckStateFolder(settings.state_dir + "/jobs"); !s.ok()) return s;
  // The socket's folder is the user's: the job's hook writes its step rings
  // there, and the recorder, once it is the user, binds in it. One left by
  // an earlier try is taken only if it is a real folder of root or the user.
  if (mkdir(paths->socket_dir.c_str(), 0700) != 0) {
    if (errno != EEXIST) return Status::FromErrno(paths->socket_dir, errno);
    struct stat st {};
    if (lstat(paths->socket_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) ||
        (st.st_uid != 0 && st.st_uid != job.uid)) {
      return Status::InvalidArgument(paths->socket_dir +
                                     ": not a folder of root or the job's user");
    }
    RemoveSocketFolder(paths->socket_dir);  // a stale socket would pass for the new one
    if (mkdir(paths->socket_dir.c_str(), 0700) != 0 && errno != EEXIST) {
      return Status::FromErrno(paths->socket_dir, errno);
    }
  }
  if (lchown(paths->socket_dir.c_str(), job.uid, job.gid) != 0 ||
      chmod(paths->socket_dir.c_str(), 0700) != 0) {
    return Status::FromErrno(paths->socket_dir, errno);
  }
  const std::string interval = FormatDouble(settings.interval_seconds);
  // --out is relative to the folder the recorder works in, its % doubled
  // (watch expands %h and %r in --out; a folder may hold a % of its own).
  std::string out_name;
  for (char ch : paths->run_file.substr(paths->folder.size() + 1)) {
    out_name += ch;
    if (ch == '%') out_name += '%';
  }
  Result<pid_t> recorder = StartDetached([&] {
    BecomeJobUser(job);
    umask(022);
    // Made as the user: a submit folder on NFS with root_squash refuses root.
    if (!MakeFolders(paths->folder, 0755).ok() || chdir(paths->folder.c_str()) != 0) _exit(73);
    int log = open(paths->log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, 0644);
    if (log >= 0) {
      dup2(log, 1);
      dup2(log, 2);
      close(log);
    }
    std::vector<std::string> args = {stallscope_exe, "watch",           "--slurm-job", job.id,
                                     "--hook-dir",   paths->socket_dir, "--out",       out_name,
                                     "--interval",   interval,          "--force"};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(stallscope_exe.c_str(), argv.data());
    _exit(127);
  });
  if (!recorder.ok()) return recorder.status();
  const int pidfd = OpenPidFd(*recorder);
  auto give_up = [&](Status why) {
    // The job runs without it: nothing is left that says otherwise.
    SignalPidFd(pidfd, SIGKILL);
    if (pidfd >= 0) close(pidfd);
    unlink(paths->job_line.c_str());
    RemoveSocketFolder(paths->socket_dir);
    return why;
  };
  if (Status s =
          WriteFileAtomically(paths->job_line, FormatSlurmJobLine(LineOfSlurmJob(job, *recorder)));
      !s.ok()) {
    return give_up(s);
  }
  // The tasks start after the prolog: the socket is there for their hooks.
  const std::string socket = paths->socket_dir + "/hook.sock";
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(settings.start_wait_seconds);
  while (!PathExists(socket)) {
    if (PidFdEnded(pidfd, 20) || std::chrono::steady_clock::now() >= deadline) {
      return give_up(
          Status::Unavailable("the recorder (pid " + std::to_string(*recorder) + ") did not open " +
                              socket + " within " + FormatDouble(settings.start_wait_seconds) +
                              " s (" + paths->folder + " not writable by " + job.user +
                              "? its output, where it could write one: " + paths->log_file + ")"));
    }
  }
  if (pidfd >= 0) close(pidfd);
  return Status::Ok();
}

Status SlurmEpilog(const SlurmSettings& settings, const SlurmJobEnv& job) {
  Result<SlurmJobPaths> paths = PathsOfSlurmJob(settings, job);
  if (!paths.ok()) return paths.status();
  Status outcome = Status::Ok();
  Result<std::string> line = ReadFile(paths->job_line, 1 << 16);
  Result<SlurmJobLine> parsed =
      line.ok() ? ParseSlurmJobLine(*line, paths->job_line) : Result<SlurmJobLine>(line.status());
  const pid_t recorder = parsed.ok() ? parsed->recorder_pid : 0;
  // The process, once known to be this job's recorder, is held by a pidfd:
  // a pid reused meanwhile is never signalled.
  const int pidfd = recorder > 1 ? OpenPidFd(recorder) : -1;
  if (pidfd >= 0 && IsJobRecorder(recorder, job)) {
    SignalPidFd(pidfd, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration<double>(settings.stop_wait_seconds);
    while (!PidFdEnded(pidfd, 20) && std::chrono::steady_clock::now() < deadline) {
    }
    if (!PidFdEnded(pidfd, 0)) {
      kill(-recorder, SIGKILL);  // its group: it and what it started (setpgid)
      SignalPidFd(pidfd, SIGKILL);
      outcome = Status::Unavailable("the recorder (pid " + std::to_string(recorder) +
                                    ") did not end within " +
                                    FormatDouble(settings.stop_wait_seconds) + " s: killed");
    }
  } else if (!line.ok()) {
    outcome = Status::NotFound("no recorder for job " + job.id + " on this node (" +
                               paths->job_line + ": " + line.status().message() + ")");
  }
  if (pidfd >= 0) close(pidfd);
  unlink(paths->job_line.c_str());
  RemoveSocketFolder(paths->socket_dir);
  // The batch host merges the nodes' files once each node marked its own
  // (this try's marks only); detached, so that the epilog ends now whatever
  // the merge takes.
  Result<std::vector<std::string>> hosts = ExpandSlurmHostList(job.node_list);
  const bool merges = hosts.ok() && !hosts->empty() && hosts->front() == job.node;
  const size_t nodes = hosts.ok() ? hosts->size() : 1;
  const double merge_wait = settings.merge_wait_seconds;
  const int this_try = job.restart_count;
  Result<pid_t> marker = StartDetached([&] {
    BecomeJobUser(job);
    if (!WriteFileAtomically(paths->done_file, "").ok() || !merges) _exit(0);
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(merge_wait);
    auto done_count = [&] {
      Result<std::vector<std::string>> names = ListDirectory(paths->folder);
      if (!names.ok()) return size_t{0};
      return static_cast<size_t>(std::count_if(names->begin(), names->end(), [&](const auto& n) {
        return n.ends_with(".done") && NodeAndTry(n.substr(0, n.size() - 5)).second == this_try;
      }));
    };
    while (done_count() < nodes && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    _exit(WriteSlurmJobReport(paths->folder).ok() ? 0 : 1);
  });
  if (!marker.ok() && outcome.ok()) outcome = marker.status();
  return outcome;
}

std::vector<std::string> SlurmTaskPrologLines(const SlurmSettings& settings, const EnvLookup& env,
                                              const std::string& hook_python_dir,
                                              const std::string& crc32c_library) {
  // The hook is importable in every task, so that a script that imports it
  // runs where no recorder listens (it then records nothing).
  std::string python_path = hook_python_dir;
  if (std::optional<std::string> own = env("PYTHONPATH"); own && !own->empty()) {
    python_path += ":" + *own;
  }
  std::vector<std::string> lines = {"export PYTHONPATH=" + python_path};
  if (!crc32c_library.empty()) lines.push_back("export STALLSCOPE_CRC32C=" + crc32c_library);
  std::optional<std::string> id = env("SLURM_JOB_ID");
  if (!id || !CheckSlurmJobId(*id).ok()) return lines;
  const std::string socket = settings.state_dir + "/job-" + *id + "/hook.sock";
  struct stat st {};
  if (stat(socket.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) {
    lines.push_back("export STALLSCOPE_SOCKET=" + socket);
  }
  return lines;
}

Result<std::vector<std::string>> SlurmJobRunFiles(const std::string& folder) {
  Result<std::vector<std::string>> names = ListDirectory(folder);
  if (!names.ok()) return names.status();
  // Each node's latest try: a requeued job's earlier files are another run.
  std::map<std::string, std::pair<int, std::string>> latest;
  for (const std::string& n : *names) {
    if (!n.ends_with(".db")) continue;
    auto [node, attempt] = NodeAndTry(n.substr(0, n.size() - 3));
    auto it = latest.find(node);
    if (it == latest.end() || it->second.first < attempt) latest[node] = {attempt, n};
  }
  std::vector<std::string> files;
  for (const auto& [node, kept] : latest) files.push_back(folder + "/" + kept.second);
  if (files.empty()) return Status::NotFound(folder + ": no run file (NODE.db) in it");
  return files;
}

Result<RunAnalysis> WriteSlurmJobReport(const std::string& folder) {
  Result<std::vector<std::string>> files = SlurmJobRunFiles(folder);
  if (!files.ok()) return files.status();
  Result<RunAnalysis> run = AnalyzeRunFiles(*files);
  if (!run.ok()) return run.status();
  if (Status s = WriteFileAtomically(folder + "/report.txt", RenderRunReportText("report", *run));
      !s.ok()) {
    return s;
  }
  if (Status s = WriteFileAtomically(folder + "/report.json",
                                     JsonText(RunReportJson("report", *run, {})) + "\n");
      !s.ok()) {
    return s;
  }
  return run;
}

}  // namespace stallscope
