// stallscope_job_info from the node's Slurm jobs (export/slurm_job_info.h).
#include "export/slurm_job_info.h"

#include <gtest/gtest.h>

namespace stallscope {
namespace {

TEST(SlurmJobInfo, OneSeriesPerRunningJob) {
  SlurmJobs jobs;
  SlurmJobLine a;
  a.job_id = "9";
  a.user = "ada";
  a.partition = "gpu";
  a.job_name = "train";
  a.cpu_list = "0-3";
  a.gpus = "0,1";
  SlurmJobLine b;
  b.job_id = "10";
  b.user = "bob";
  b.partition = "debug";
  jobs.jobs = {a, b};
  Exposition e;
  EmitSlurmJobInfo(e, jobs);
  const std::string out = RenderExposition(e.families());
  EXPECT_NE(out.find("# TYPE stallscope_job_info gauge\n"), std::string::npos) << out;
  EXPECT_NE(out.find("stallscope_job_info{job_id=\"9\",user=\"ada\",partition=\"gpu\","
                     "job_name=\"train\",cpus=\"0-3\",gpus=\"0,1\"} 1\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("stallscope_job_info{job_id=\"10\",user=\"bob\",partition=\"debug\","
                     "job_name=\"\",cpus=\"\",gpus=\"\"} 1\n"),
            std::string::npos)
      << out;
  // No job: no family at all (a node without Slurm says nothing of it).
  Exposition none;
  EmitSlurmJobInfo(none, SlurmJobs{});
  EXPECT_TRUE(none.families().empty());
}

}  // namespace
}  // namespace stallscope
