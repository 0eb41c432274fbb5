// Which processes belong to a Slurm job, as `watch --slurm-job ID` follows
// them from the job's prolog to its epilog. A process is the job's when
// - its cgroup path has a component `job_ID` (Slurm's cgroup layouts: v1
//   `/slurm/uid_U/job_ID/step_S/task_T`, v2
//   `/system.slice/slurmstepd.scope/job_ID/step_S/user/task_T`), or
// - its environment carries `SLURM_JOB_ID=ID` (or the older `SLURM_JOBID`),
//   which every process Slurm starts for the job inherits, also under
//   proctrack/linuxproc where there is no cgroup. slurmstepd itself stays
//   out: its environment is slurmd's, and under cgroup v2 it sits in the
//   step's `slurm` leaf (`job_ID/step_S/slurm`), which is not the job's.
// A process that rewrote its environment after exec is still found through
// its parent (the sampler keeps a member's children). An environment that
// cannot be read (another user's process, or a task between slurmstepd's
// fork and its exec, still root's or not dumpable) leaves the answer open:
// the sampler asks again later.
// Pure parsers plus readers that take a root path or a folder (tests: a
// fixture).
//
// Also the running jobs' lines the prolog keeps (STATE_DIR/jobs/ID, one
// `key=value` per line, written atomically, removed by the epilog): the
// exporter's stallscope_job_info reads them.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/file.h"
#include "core/status.h"

namespace stallscope {

// A Slurm job id as the prolog's SLURM_JOB_ID gives it: decimal digits.
Status CheckSlurmJobId(std::string_view id);

// /proc/PID/cgroup's text names the job (a path component `job_ID`).
bool CgroupNamesSlurmJob(std::string_view cgroup_text, std::string_view job_id);

// /proc/PID/environ's text (NUL-separated) sets SLURM_JOB_ID (or
// SLURM_JOBID) to the job id.
bool EnvironNamesSlurmJob(std::string_view environ_text, std::string_view job_id);

// Reads ROOT/proc/PID/cgroup, then ROOT/proc/PID/environ. True when either
// names the job; false when the process is gone or neither does; nullopt
// when the environment is refused (EACCES/EPERM): ask again later.
std::optional<bool> ProcessInSlurmJob(const Root& root, int32_t pid, std::string_view job_id);

// One running job's line.
struct SlurmJobLine {
  std::string job_id;
  std::string user;
  int64_t uid = -1;
  std::string partition;
  std::string nodes;  // the job's node list, as Slurm wrote it
  std::string cpus;   // SLURM_JOB_CPUS_PER_NODE: how many, as Slurm wrote it
  std::string gpus;   // SLURM_JOB_GPUS, else CUDA_VISIBLE_DEVICES; "" when none
  pid_t recorder_pid = 0;
  std::string job_name;  // not in the line: STATE_DIR/job-ID/job_name, from the task prolog
  std::string cpu_list;  // not in the line: the job's cgroup cpuset (SlurmJobCpuList)
};
std::string FormatSlurmJobLine(const SlurmJobLine& line);
// InvalidArgument naming `source` for a line without a job_id of digits or
// with a malformed uid or recorder_pid; unknown keys are skipped.
Result<SlurmJobLine> ParseSlurmJobLine(std::string_view text, std::string_view source);

// A job name as a label may carry it: printable ASCII, no spaces (as `_`),
// at most 128 bytes; "" stays "".
std::string CleanSlurmJobName(std::string_view name);

// The CPUs Slurm confined the job to, as the kernel lists them ("0-3,8"):
// the job's cgroup cpuset under ROOT (cgroup v2:
// /sys/fs/cgroup/system.slice/slurmstepd.scope/job_ID/cpuset.cpus.effective;
// v1: /sys/fs/cgroup/cpuset/slurm/uid_U/job_ID/cpuset.effective_cpus, else
// cpuset.cpus). "" where Slurm gives the job no cpuset (task/none), or
// before its first step made the cgroup. Known once tasks run: the prolog
// cannot know it.
std::string SlurmJobCpuList(const Root& root, std::string_view job_id, int64_t uid);

// The job's name the task prolog left in FOLDER/job_name (a regular file of
// this process's user, no link, no FIFO), cleaned; "" when none.
std::string SlurmJobNameIn(const std::string& folder);

// The jobs STATE_DIR/jobs lists, by id, each with the name the task prolog
// left; lines that cannot be read are counted, not returned. The name is
// read from the job user's folder without following a link or blocking on
// a FIFO: only a regular file of at most 4 KiB owned by the job's uid.
struct SlurmJobs {
  std::vector<SlurmJobLine> jobs;
  int unreadable = 0;
};
SlurmJobs ReadSlurmJobs(const std::string& state_dir);

}  // namespace stallscope
