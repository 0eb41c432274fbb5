// JobTable: hook datagrams in, per-rank series out, with the bounds that
// keep the exporter's memory flat (expiry, a process cap, restarted ranks).
#include "export/job_metrics.h"

#include <gtest/gtest.h>

namespace stallscope {
namespace {

constexpr int64_t kSecond = 1000000000;

std::string Render(const JobTable& t, int64_t now) {
  Exposition e;
  t.Emit(e, "node1", now);
  return RenderExposition(e.families());
}

TEST(JobTable, StepsBecomeCountersAndAHistogramPerRank) {
  JobTable t(16, 300);
  t.Ingest(
      "hello 100 0 0 2\njob 100 0 train-7\nloader 100 0 64 2 0 2 1 1000 0\n"
      "epoch 100 0 3 5\n"
      "step 100 0 0 10 20000000 50000000\nstep 100 0 1 20 0 2000000000\n",
      kSecond);
  t.Ingest("hello 200 1 1 2\nstep 200 1 0 10 1000000 40000000\n", kSecond);
  ASSERT_EQ(t.processes().size(), 2u);
  const JobProcess& p = t.processes().at(100);
  EXPECT_EQ(p.job, "train-7");
  EXPECT_EQ(p.steps, 2u);
  EXPECT_DOUBLE_EQ(p.step_seconds_sum, 2.05);
  EXPECT_DOUBLE_EQ(p.wait_seconds_sum, 0.02);
  EXPECT_EQ(p.epoch, 3);
  EXPECT_EQ(p.loader_workers, 2);
  EXPECT_EQ(p.world_size, 2);
  std::string out = Render(t, 3 * kSecond);
  const std::string l0 = "{job_name=\"train-7\",rank=\"0\",host=\"node1\"";
  EXPECT_NE(out.find("stallscope_job_steps_total" + l0 + "} 2\n"), std::string::npos) << out;
  EXPECT_NE(out.find("stallscope_job_data_wait_seconds_total" + l0 + "} 0.02\n"),
            std::string::npos);
  // 0.05 s falls in le=0.05; 2 s in le=2.5; cumulative.
  EXPECT_NE(out.find("stallscope_job_step_seconds_bucket" + l0 + ",le=\"0.025\"} 0\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("stallscope_job_step_seconds_bucket" + l0 + ",le=\"0.05\"} 1\n"),
            std::string::npos);
  EXPECT_NE(out.find("stallscope_job_step_seconds_bucket" + l0 + ",le=\"2.5\"} 2\n"),
            std::string::npos);
  EXPECT_NE(out.find("stallscope_job_step_seconds_count" + l0 + "} 2\n"), std::string::npos);
  EXPECT_NE(out.find("stallscope_job_report_age_seconds" + l0 + "} 2\n"), std::string::npos);
  // The second process never named its job: its pid names it.
  EXPECT_NE(
      out.find("stallscope_job_steps_total{job_name=\"pid-200\",rank=\"1\",host=\"node1\"} 1"),
      std::string::npos);
}

TEST(JobTable, SilentProcessesExpire) {
  JobTable t(16, 300);
  t.Ingest("hello 100 0 0 1\n", 0);
  t.Ingest("hello 101 0 0 1\n", 200 * kSecond);
  t.Expire(301 * kSecond);
  ASSERT_EQ(t.processes().size(), 1u);
  EXPECT_EQ(t.processes().begin()->first, 101);
  EXPECT_EQ(t.expired_processes(), 1u);
  t.Expire(1000 * kSecond);
  EXPECT_TRUE(t.processes().empty());
  EXPECT_EQ(Render(t, 1000 * kSecond), "");
}

TEST(JobTable, ProcessCapBoundsMemory) {
  JobTable t(4, 300);
  for (int pid = 1; pid <= 100; ++pid) {
    t.Ingest("step " + std::to_string(pid) + " 0 0 1 1 1\n", kSecond);
  }
  EXPECT_EQ(t.processes().size(), 4u);
  EXPECT_EQ(t.refused_records(), 96u);
}

TEST(JobTable, ARestartedRankReplacesTheOldOneSoSeriesNeverRepeat) {
  JobTable t(16, 300);
  t.Ingest("job 100 0 j\nstep 100 0 0 1 1 1\n", kSecond);
  t.Ingest("job 300 0 j\n", 2 * kSecond);
  ASSERT_EQ(t.processes().size(), 1u);
  EXPECT_EQ(t.processes().begin()->first, 300);
  std::string out = Render(t, 2 * kSecond);
  EXPECT_NE(out.find("stallscope_job_steps_total{job_name=\"j\",rank=\"0\",host=\"node1\"} 0"),
            std::string::npos)
      << out;
}

TEST(JobTable, GarbageIsCountedNotTrusted) {
  JobTable t(16, 300);
  t.Ingest(
      "step\nstep x 0 0 1 1 1\nstep 5 0 0 1 -1 1\njob 5 0\njob 5 0 has space\n"
      "job 5 0 \x01\x02\nstep -3 0 0 1 1 1\nfuture 5 0 a b c\n\n",
      kSecond);
  EXPECT_TRUE(t.processes().empty());
  EXPECT_EQ(t.malformed_lines(), 7u);
  EXPECT_EQ(CleanJobName(std::string(129, 'a')), "");
  EXPECT_EQ(CleanJobName("a\"b\\c"), "a\"b\\c");  // escaped when printed
}

}  // namespace
}  // namespace stallscope
