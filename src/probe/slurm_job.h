// Which processes belong to a Slurm job, as `watch --slurm-job ID` follows
// them from the job's prolog to its epilog. A process is the job's when
// - its cgroup path has a component `job_ID` (Slurm's cgroup layouts: v1
//   `/slurm/uid_U/job_ID/step_S/task_T`, v2
//   `/system.slice/slurmstepd.scope/job_ID/step_S/user/task_T`), or
// - its environment carries `SLURM_JOB_ID=ID` (or the older `SLURM_JOBID`),
//   which every process Slurm starts for the job inherits, also under
//   proctrack/linuxproc where there is no cgroup. slurmstepd itself carries
//   neither and stays out.
// A process that rewrote its environment after exec is still found through
// its parent (the sampler keeps a member's children). The environment of
// another user's process is unreadable without privilege: not a member.
// Pure parsers plus one reader that takes a root path (tests: a fixture).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

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

// Reads ROOT/proc/PID/cgroup, then ROOT/proc/PID/environ. False when
// neither names the job or neither can be read (gone, not ours).
bool ProcessInSlurmJob(const Root& root, int32_t pid, std::string_view job_id);

}  // namespace stallscope
