// The exporter's view of the Slurm jobs running on its node:
// `stallscope_job_info{job_id,user,partition,job_name,cpus,gpus} 1` for
// each job the prolog listed (probe/slurm_job.h's ReadSlurmJobs, with each
// job's cpuset read by the caller), gone once its epilog removed the line.
// Pure: the listing comes in as an argument.
#pragma once

#include "probe/slurm_job.h"
#include "render/exposition.h"

namespace stallscope {

void EmitSlurmJobInfo(Exposition& out, const SlurmJobs& jobs);

}  // namespace stallscope
