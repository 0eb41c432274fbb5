// stallscope_job_info for the node's Slurm jobs: slurm_job_info.h.
#include "export/slurm_job_info.h"

namespace stallscope {

void EmitSlurmJobInfo(Exposition& out, const SlurmJobs& jobs) {
  if (jobs.jobs.empty()) return;
  out.Family("stallscope_job_info", MetricType::kGauge,
             "A Slurm job running on this node (from its prolog to its epilog); always 1. "
             "job_name is empty until a task of the job started; cpus is the job's cgroup "
             "cpuset, empty without one; gpus as Slurm named them to the prolog.");
  for (const SlurmJobLine& j : jobs.jobs) {
    out.Add("stallscope_job_info",
            {{"job_id", j.job_id},
             {"user", j.user},
             {"partition", j.partition},
             {"job_name", j.job_name},
             {"cpus", j.cpu_list},
             {"gpus", j.gpus}},
            1);
  }
}

}  // namespace stallscope
