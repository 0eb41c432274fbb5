// Which processes belong to a Slurm job: slurm_job.h.
#include "probe/slurm_job.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "core/text.h"

namespace stallscope {

Status CheckSlurmJobId(std::string_view id) {
  if (id.empty() || id.size() > 20 || id.find_first_not_of("0123456789") != id.npos) {
    return Status::InvalidArgument("Slurm job id '" + std::string(id) +
                                   "': expected digits, as SLURM_JOB_ID gives it");
  }
  return Status::Ok();
}

bool CgroupNamesSlurmJob(std::string_view cgroup_text, std::string_view job_id) {
  if (job_id.empty()) return false;
  const std::string component = "job_" + std::string(job_id);
  for (std::string_view line : Split(cgroup_text, '\n')) {
    // hierarchy-ID:controllers:path; the path may hold ':' itself.
    size_t first = line.find(':');
    size_t second = first == line.npos ? line.npos : line.find(':', first + 1);
    if (second == line.npos) continue;
    bool in_job = false;
    for (std::string_view part : Split(line.substr(second + 1), '/')) {
      if (part == component) {
        in_job = true;
      } else if (in_job && part == "slurm") {
        in_job = false;  // cgroup v2's job_ID/step_S/slurm: slurmstepd's own leaf
        break;
      }
    }
    if (in_job) return true;
  }
  return false;
}

bool EnvironNamesSlurmJob(std::string_view environ_text, std::string_view job_id) {
  if (job_id.empty()) return false;
  const std::string wanted[] = {"SLURM_JOB_ID=" + std::string(job_id),
                                "SLURM_JOBID=" + std::string(job_id)};
  for (std::string_view entry : Split(environ_text, '\0')) {
    if (entry == wanted[0] || entry == wanted[1]) return true;
  }
  return false;
}

std::optional<bool> ProcessInSlurmJob(const Root& root, int32_t pid, std::string_view job_id) {
  const std::string dir = root.Path("/proc/" + std::to_string(pid));
  if (Result<std::string> cgroup = ReadFile(dir + "/cgroup", 64 << 10);
      cgroup.ok() && CgroupNamesSlurmJob(*cgroup, job_id)) {
    return true;
  }
  // The environment a process started with (at most what a large one holds).
  const std::string path = dir + "/environ";
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == EACCES || errno == EPERM) return std::nullopt;
    return false;
  }
  std::string text;
  char buffer[16384];
  for (;;) {
    ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      close(fd);
      return err == EACCES || err == EPERM ? std::nullopt : std::optional<bool>(false);
    }
    if (n == 0 || text.size() > (1 << 20)) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  return EnvironNamesSlurmJob(text, job_id);
}

std::string FormatSlurmJobLine(const SlurmJobLine& line) {
  std::string out;
  auto add = [&](const char* key, const std::string& value) {
    std::string clean = value;
    std::replace(clean.begin(), clean.end(), '\n', ' ');
    out += std::string(key) + "=" + clean + "\n";
  };
  add("job_id", line.job_id);
  add("user", line.user);
  add("uid", std::to_string(line.uid));
  add("partition", line.partition);
  add("nodes", line.nodes);
  add("cpus", line.cpus);
  add("gpus", line.gpus);
  add("recorder_pid", std::to_string(line.recorder_pid));
  return out;
}

Result<SlurmJobLine> ParseSlurmJobLine(std::string_view text, std::string_view source) {
  SlurmJobLine line;
  auto bad = [&](const std::string& what) {
    return Status::InvalidArgument(std::string(source) + ": " + what);
  };
  for (std::string_view l : SplitLines(text)) {
    size_t eq = l.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view key = l.substr(0, eq);
    std::string value(l.substr(eq + 1));
    if (key == "job_id") {
      line.job_id = value;
    } else if (key == "user") {
      line.user = value;
    } else if (key == "uid") {
      std::optional<int64_t> uid = ParseInt(value);
      if (!uid || *uid < -1 || *uid > 0xffffffffLL) return bad("uid '" + value + "'");
      line.uid = *uid;
    } else if (key == "partition") {
      line.partition = value;
    } else if (key == "nodes") {
      line.nodes = value;
    } else if (key == "cpus") {
      line.cpus = value;
    } else if (key == "gpus") {
      line.gpus = value;
    } else if (key == "recorder_pid") {
      std::optional<int64_t> pid = ParseInt(value);
      if (!pid || *pid < 0 || *pid > (1 << 30)) return bad("recorder_pid '" + value + "'");
      line.recorder_pid = static_cast<pid_t>(*pid);
    }
  }
  if (!CheckSlurmJobId(line.job_id).ok()) return bad("no job_id of digits");
  return line;
}

std::string CleanSlurmJobName(std::string_view name) {
  std::string out;
  for (char c : name.substr(0, 128)) {
    out += (c > 32 && c < 127) ? c : '_';
  }
  return out;
}

namespace {

// DIR/job_name, where DIR is the job user's: neither DIR nor the file may be
// a link, the file must be a regular one of the job's uid (a FIFO would
// block the exporter; a link to a root-only file would leak it as a label).
std::string ReadJobName(const std::string& dir, int64_t uid) {
  int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0) return "";
  int fd = openat(dfd, "job_name", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  close(dfd);
  if (fd < 0) return "";
  struct stat st {};
  std::string text;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && static_cast<int64_t>(st.st_uid) == uid &&
      st.st_size <= 4096) {
    char buffer[4097];
    ssize_t n = read(fd, buffer, sizeof buffer);
    if (n > 0) text.assign(buffer, static_cast<size_t>(std::min<ssize_t>(n, 4096)));
  }
  close(fd);
  return CleanSlurmJobName(Trim(text));
}

}  // namespace

std::string SlurmJobCpuList(const Root& root, std::string_view job_id, int64_t uid) {
  if (!CheckSlurmJobId(job_id).ok()) return "";
  const std::string job = "job_" + std::string(job_id);
  std::vector<std::string> candidates = {"/sys/fs/cgroup/system.slice/slurmstepd.scope/" + job +
                                         "/cpuset.cpus.effective"};
  if (uid >= 0) {
    const std::string v1 = "/sys/fs/cgroup/cpuset/slurm/uid_" + std::to_string(uid) + "/" + job;
    candidates.push_back(v1 + "/cpuset.effective_cpus");
    candidates.push_back(v1 + "/cpuset.cpus");
  }
  for (const std::string& path : candidates) {
    Result<std::string> text = ReadFile(root.Path(path), 4096);
    if (!text.ok()) continue;
    std::string_view list = Trim(*text);
    // A cpuset list: digits, ',' and '-' only.
    if (!list.empty() && list.find_first_not_of("0123456789,-") == std::string_view::npos) {
      return std::string(list);
    }
  }
  return "";
}

std::string SlurmJobNameIn(const std::string& folder) {
  return ReadJobName(folder, static_cast<int64_t>(geteuid()));
}

SlurmJobs ReadSlurmJobs(const std::string& state_dir) {
  SlurmJobs out;
  Result<std::vector<std::string>> names = ListDirectory(state_dir + "/jobs");
  if (!names.ok()) return out;
  for (const std::string& name : *names) {
    if (!CheckSlurmJobId(name).ok()) continue;  // a rename's temporary file
    const std::string path = state_dir + "/jobs/" + name;
    Result<std::string> text = ReadFile(path, 1 << 16);
    Result<SlurmJobLine> line =
        text.ok() ? ParseSlurmJobLine(*text, path) : Result<SlurmJobLine>(text.status());
    if (!line.ok() || line->job_id != name) {
      ++out.unreadable;
      continue;
    }
    line->job_name = ReadJobName(state_dir + "/job-" + name, line->uid);
    out.jobs.push_back(std::move(*line));
  }
  std::sort(out.jobs.begin(), out.jobs.end(), [](const SlurmJobLine& a, const SlurmJobLine& b) {
    return a.job_id.size() != b.job_id.size() ? a.job_id.size() < b.job_id.size()
                                              : a.job_id < b.job_id;
  });
  return out;
}

}  // namespace stallscope
