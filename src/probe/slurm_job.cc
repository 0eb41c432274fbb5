// Which processes belong to a Slurm job: slurm_job.h.
#include "probe/slurm_job.h"

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
  size_t start = 0;
  while (start < cgroup_text.size()) {
    size_t end = cgroup_text.find('\n', start);
    if (end == cgroup_text.npos) end = cgroup_text.size();
    std::string_view line = cgroup_text.substr(start, end - start);
    start = end + 1;
    // hierarchy-ID:controllers:path; the path may hold ':' itself.
    size_t first = line.find(':');
    size_t second = first == line.npos ? line.npos : line.find(':', first + 1);
    if (second == line.npos) continue;
    std::string_view path = line.substr(second + 1);
    size_t at = 0;
    while (at <= path.size()) {
      size_t slash = path.find('/', at);
      if (slash == path.npos) slash = path.size();
      if (path.substr(at, slash - at) == component) return true;
      at = slash + 1;
    }
  }
  return false;
}

bool EnvironNamesSlurmJob(std::string_view environ_text, std::string_view job_id) {
  if (job_id.empty()) return false;
  size_t start = 0;
  while (start < environ_text.size()) {
    size_t end = environ_text.find('\0', start);
    if (end == environ_text.npos) end = environ_text.size();
    std::string_view entry = environ_text.substr(start, end - start);
    start = end + 1;
    for (std::string_view name :
         {std::string_view("SLURM_JOB_ID="), std::string_view("SLURM_JOBID=")}) {
      if (entry.size() == name.size() + job_id.size() && entry.substr(0, name.size()) == name &&
          entry.substr(name.size()) == job_id) {
        return true;
      }
    }
  }
  return false;
}

bool ProcessInSlurmJob(const Root& root, int32_t pid, std::string_view job_id) {
  const std::string dir = root.Path("/proc/" + std::to_string(pid));
  if (Result<std::string> cgroup = ReadFile(dir + "/cgroup", 64 << 10);
      cgroup.ok() && CgroupNamesSlurmJob(*cgroup, job_id)) {
    return true;
  }
  // The environment a process started with (at most what a large one holds).
  Result<std::string> environ = ReadFile(dir + "/environ", 1 << 20);
  return environ.ok() && EnvironNamesSlurmJob(*environ, job_id);
}

}  // namespace stallscope
