// JobTable: hook datagrams in, per-rank series out, with the bounds that
// keep the exporter's memory flat (expiry, a process cap, restarted ranks).
#include "export/job_metrics.h"

#include <gtest/gtest.h>

#include "sample/process.h"

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

TEST(JobTable, ASlurmTasksSeriesCarryItsJobId) {
  JobTable t(16, 300);
  t.Ingest("hello 100 0 0 2\njob 100 0 train\nslurm 100 0 4242\nstep 100 0 0 10 0 50000000\n",
           kSecond, 0, 1001);
  t.Ingest("hello 200 1 1 2\njob 200 1 train\nstep 200 1 0 10 0 50000000\n", kSecond, 0, 1001);
  std::string out = Render(t, 2 * kSecond);
  EXPECT_NE(out.find("stallscope_job_steps_total{job_name=\"train\",rank=\"0\",host=\"node1\","
                     "uid=\"1001\",job_id=\"4242\"} 1\n"),
            std::string::npos)
      << out;
  // Outside Slurm, the labels are those of before.
  EXPECT_NE(out.find("stallscope_job_steps_total{job_name=\"train\",rank=\"1\",host=\"node1\","
                     "uid=\"1001\"} 1\n"),
            std::string::npos)
      << out;
  // A job id that is not digits is a malformed record, not a label.
  const uint64_t before = t.malformed_lines();
  t.Ingest("slurm 100 0 42x\nslurm 100 0\nslurm 100 0 123456789012345678901\n", kSecond, 0, 1001);
  EXPECT_EQ(t.malformed_lines(), before + 3);
  EXPECT_EQ(t.processes().at(100).slurm_job_id, "4242");
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

TEST(JobTable, TheSendersPidStandsInForTheRecordsOwn) {
  JobTable t(16, 300);
  // A process that claims to be pid 100 is filed under the pid the kernel gave.
  t.Ingest("hello 100 0 0 1\njob 100 0 victim\n", kSecond, 4242);
  ASSERT_EQ(t.processes().size(), 1u);
  EXPECT_EQ(t.processes().begin()->first, 4242);
  EXPECT_EQ(t.processes().begin()->second.pid, 4242);
  // Without credentials, the record's own pid is used, as before.
  t.Ingest("hello 100 0 0 1\n", kSecond);
  EXPECT_EQ(t.processes().count(100), 1u);
}

// The kernel's uid of the sender labels the series; two users' jobs of one
// name and rank stay apart, and a pid reused by another user starts afresh.
TEST(JobTable, TheSendersUidLabelsItsSeriesAndKeepsUsersApart) {
  JobTable t(16, 300);
  t.Ingest("job 100 0 train\nstep 100 0 0 1 1 1\n", kSecond, 100, 1000);
  t.Ingest("job 200 0 train\nstep 200 0 0 1 1 1\n", kSecond, 200, 1001);
  ASSERT_EQ(t.processes().size(), 2u);  // not a restarted rank: another user's job
  std::string out = Render(t, 2 * kSecond);
  EXPECT_NE(out.find("stallscope_job_steps_total{job_name=\"train\",rank=\"0\",host=\"node1\","
                     "uid=\"1000\"} 1"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("stallscope_job_steps_total{job_name=\"train\",rank=\"0\",host=\"node1\","
                     "uid=\"1001\"} 1"),
            std::string::npos)
      << out;
  // Pid 100 reused by uid 1001: not the old process's counters.
  t.Ingest("step 100 0 0 1 1 1\n", 3 * kSecond, 100, 1001);
  EXPECT_EQ(t.processes().at(100).uid, 1001);
  EXPECT_EQ(t.processes().at(100).steps, 1u);
  EXPECT_EQ(t.processes().at(100).job, "pid-100");
  // Without credentials, no uid label.
  t.Ingest("step 300 0 0 1 1 1\n", 3 * kSecond);
  EXPECT_NE(Render(t, 3 * kSecond).find("{job_name=\"pid-300\",rank=\"0\",host=\"node1\"}"),
            std::string::npos);
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

ProcessSample Member(int pid, int ppid, double cpu_s, uint64_t rss, uint64_t delay_ns) {
  ProcessSample m;
  m.pid = pid;
  m.ppid = ppid;
  m.utime_seconds = cpu_s;
  m.rss_bytes = rss;
  m.run_delay_ns = delay_ns;
  return m;
}

TEST(JobTable, SyncWaitOfTheDdpHookIsACounter) {
  JobTable t(16, 300);
  t.Ingest("hello 100 0 0 2\njob 100 0 train\nstep 100 0 0 10 0 50000000\n", kSecond);
  // No sync record yet: no series (a job without stallscope.ddp).
  EXPECT_EQ(Render(t, kSecond).find("stallscope_job_sync_wait_seconds_total{"), std::string::npos);
  t.Ingest("sync 100 0 0 20000000 30000000\nsync 100 0 1 5000000 1000000\n", kSecond);
  EXPECT_DOUBLE_EQ(t.processes().at(100).sync_seconds_sum, 0.025);
  EXPECT_NE(Render(t, kSecond)
                .find("stallscope_job_sync_wait_seconds_total{job_name=\"train\",rank=\"0\","
                      "host=\"node1\"} 0.025\n"),
            std::string::npos)
      << Render(t, kSecond);
}

TEST(JobTable, TreeFiguresByRoleAndCountersThatNeverGoBack) {
  JobTable t(16, 300);
  t.Ingest("hello 100 0 0 1\njob 100 0 train\n", kSecond);
  // Before the tree is read: no role series.
  EXPECT_EQ(Render(t, kSecond).find("stallscope_job_rss_bytes{"), std::string::npos);
  ProcessTree tree;
  tree.root_pid = 100;
  tree.processes = {Member(100, 1, 10, 1000, 1000000000), Member(101, 100, 4, 300, 500000000),
                    Member(102, 100, 6, 200, 0)};
  t.UpdateTree(100, tree);
  const JobProcess& p = t.processes().at(100);
  EXPECT_EQ(p.rank_role.processes, 1);
  EXPECT_EQ(p.rank_role.rss_bytes, 1000u);
  EXPECT_EQ(p.workers_role.processes, 2);
  EXPECT_EQ(p.workers_role.rss_bytes, 500u);
  EXPECT_DOUBLE_EQ(p.workers_role.cpu_seconds, 10);
  EXPECT_DOUBLE_EQ(p.workers_role.run_delay_seconds, 0.5);
  // Worker 102 exits, 103 starts: the CPU counter keeps 102's 6 s.
  tree.processes = {Member(100, 1, 11, 1000, 1000000000), Member(101, 100, 5, 300, 500000000),
                    Member(103, 100, 1, 250, 100000000)};
  t.UpdateTree(100, tree);
  EXPECT_EQ(p.workers_role.processes, 2);
  EXPECT_EQ(p.workers_role.rss_bytes, 550u);
  EXPECT_DOUBLE_EQ(p.workers_role.cpu_seconds, 12);
  EXPECT_DOUBLE_EQ(p.workers_role.run_delay_seconds, 0.6);
  EXPECT_DOUBLE_EQ(p.rank_role.cpu_seconds, 11);
  std::string out = Render(t, kSecond);
  const std::string w = "{job_name=\"train\",rank=\"0\",host=\"node1\",role=\"workers\"}";
  EXPECT_NE(out.find("stallscope_job_cpu_seconds_total" + w + " 12\n"), std::string::npos) << out;
  EXPECT_NE(out.find("stallscope_job_processes" + w + " 2\n"), std::string::npos);
  EXPECT_NE(out.find("stallscope_job_rss_bytes" + w + " 550\n"), std::string::npos);
  EXPECT_NE(out.find("stallscope_job_run_delay_seconds_total" + w + " 0.6\n"), std::string::npos);
  // Unknown pids are ignored.
  t.UpdateTree(999, tree);
  EXPECT_EQ(t.processes().size(), 1u);
}

TEST(JobTable, DataDeviceIsTheOneMostReadFrom) {
  JobTable t(16, 300);
  t.Ingest("hello 100 0 0 1\njob 100 0 train\n", kSecond);
  t.SeenInput(100, "vda", "ext4");
  t.SeenInput(100, "nvme0n1", "xfs");
  t.SeenInput(100, "nvme0n1", "xfs");
  std::string out = Render(t, kSecond);
  EXPECT_NE(out.find("stallscope_job_data_device_info{job_name=\"train\",rank=\"0\",host=\"node1\","
                     "device=\"nvme0n1\",fs_type=\"xfs\"} 1\n"),
            std::string::npos)
      << out;
  // A file system without a disk (NFS) names only its type; bounded.
  JobTable u(16, 300);
  u.Ingest("hello 200 0 0 1\njob 200 0 remote\n", kSecond);
  u.SeenInput(200, "", "nfs4");
  EXPECT_NE(Render(u, kSecond).find("host=\"node1\",fs_type=\"nfs4\"} 1\n"), std::string::npos);
  for (int i = 0; i < 100; ++i) u.SeenInput(200, "d" + std::to_string(i), "ext4");
  EXPECT_LE(u.processes().at(200).data_devices.size(), kMaxDataDevices);
}

}  // namespace
}  // namespace stallscope
