// RecordJob reads the machine under RecordOptions::root: pointed at a
// fixture host, the run's intervals carry that host's memory, not this one's.
#include "record/recorder.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "analyze/host/gpu_health_rules.h"
#include "core/host_clock.h"
#include "probe/meminfo.h"
#include "store/run_reader.h"
#include "store/run_writer.h"

namespace stallscope {
namespace {

// Whether the file at `path` holds `text`, waiting up to 30 s for it.
bool WaitUntilHolds(const std::string& path, const std::string& text) {
  for (int tries = 0; tries < 3000; ++tries) {
    std::ifstream in(path);
    std::string held((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (held.find(text) != std::string::npos) return true;
    usleep(10000);
  }
  return false;
}

// Records `argv` under `root` at 0.1 s into the run file `path`, with the
// record signals blocked and the kernel's log read before the job starts,
// as `run` does; the job's exit code, or an error. With `logged_first`,
// recording begins only once the job wrote that to the root's dev/kmsg.
Result<int> RecordUnder(const std::string& root, const std::vector<std::string>& argv,
                        const std::string& path, const std::string& logged_first = "") {
  sigset_t saved;
  pthread_sigmask(SIG_BLOCK, nullptr, &saved);
  BlockRecordSignals();
  Result<int> exit_code = [&]() -> Result<int> {
    Result<RunWriter> writer = RunWriter::Create(path, false);
    if (!writer.ok()) return writer.status();
    RunInfo info;
    info.start_monotonic_seconds = MonotonicSeconds();
    RecordOptions options;
    options.kernel_log.emplace(Root(root), info.start_monotonic_seconds);
    Result<Job> job = Job::Start(argv, {});
    if (!job.ok()) return job.status();
    if (!logged_first.empty() && !WaitUntilHolds(root + "/dev/kmsg", logged_first)) {
      return Status::Unavailable("the job never wrote " + logged_first);
    }
    info.command = argv.front();
    info.interval_seconds = 0.1;
    info.root_pid = job->pid();
    if (Status st = writer->WriteRunInfo(info); !st.ok()) return st;
    options.interval_seconds = 0.1;
    options.root = root;
    std::FILE* quiet = std::fopen("/dev/null", "w");
    Result<RecordOutcome> outcome = RecordJob(*job, info, options, nullptr, *writer, quiet);
    std::fclose(quiet);
    if (!outcome.ok()) return outcome.status();
    if (Status st = writer->Close(); !st.ok()) return st;
    return outcome->exit.exit_code.value_or(-1);
  }();
  pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  return exit_code;
}

TEST(RecordJob, ReadsTheHostUnderItsRoot) {
  const std::string fixture = std::string(STALLSCOPE_FIXTURES) + "/live_debian12";
  Result<MemInfo> fixture_memory = ReadMemInfo(Root(fixture));
  ASSERT_TRUE(fixture_memory.ok()) << fixture_memory.status().message();
  ASSERT_TRUE(fixture_memory->available_bytes.has_value());

  char dir[] = "/tmp/stallscope-recorder-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/run.db";
  Result<int> exit_code = RecordUnder(fixture, {"sleep", "0.6"}, path);
  ASSERT_TRUE(exit_code.ok()) << exit_code.status().message();
  Result<Timeline> timeline = ReadRun(path);
  ASSERT_TRUE(timeline.ok()) << timeline.status().message();
  ASSERT_FALSE(timeline->samples.empty());
  for (const TimelineSample& s : timeline->samples) {
    EXPECT_EQ(s.mem_available_bytes, *fixture_memory->available_bytes);
  }
  std::remove(path.c_str());
  rmdir(dir);
}

// The kernel's log of the run: an Xid already in the log when the run
// starts is not the run's; one a process appends while the job runs is,
// whatever its time (the kernel's clock need not agree with ours).
TEST(RecordJob, KeepsTheXidsLoggedWhileTheJobRan) {
  char dir[] = "/tmp/stallscope-recorder-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string root = std::string(dir) + "/host";
  std::filesystem::copy(
      std::string(STALLSCOPE_FIXTURES) + "/live_debian12", root,
      std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks);
  std::filesystem::create_directories(root + "/dev");
  const std::string kmsg = root + "/dev/kmsg";
  {
    std::ofstream log(kmsg);
    log << "6,1,0,-;Linux version 6.1.0-27-amd64\n"
           "4,2210,190838925,-;NVRM: Xid (PCI:0000:3b:00): 13, pid=7311, name=python3, "
           "Graphics SM Warp Exception\n";
  }
  const std::string path = std::string(dir) + "/run.db";
  // The job itself writes the driver's record, halfway through.
  const std::string script =
      "sleep 0.3; printf '4,2290,%s,-;NVRM: Xid (PCI:0000:17:00): 79, pid=4242, name=python3, "
      "GPU has fallen off the bus.\\n' \"$(($(cut -d. -f1 /proc/uptime) * 1000000))\" >> " +
      kmsg + "; printf '6,2291,1,-;mlx5_core 0000:ca:00.0 ens1f0np0: Link down\\n' >> " + kmsg +
      "; sleep 0.3";
  Result<int> exit_code = RecordUnder(root, {"sh", "-c", script}, path);
  ASSERT_TRUE(exit_code.ok()) << exit_code.status().message();
  ASSERT_EQ(*exit_code, 0);
  Result<Timeline> timeline = ReadRun(path);
  ASSERT_TRUE(timeline.ok()) << timeline.status().message();
  EXPECT_TRUE(timeline->kernel_events_recorded);
  ASSERT_EQ(timeline->xids.size(), 1u);  // not the Xid 13 of before
  EXPECT_EQ(timeline->xids[0].xid, 79);
  EXPECT_EQ(timeline->xids[0].bus_id, "0000:17:00");
  EXPECT_EQ(timeline->xids[0].pid, 4242);
  ASSERT_TRUE(timeline->xids[0].monotonic_seconds.has_value());
  ASSERT_EQ(timeline->port_events.size(), 1u);
  EXPECT_EQ(timeline->port_events[0].device, "0000:ca:00.0");

  FindingsWithNotes judged = CheckRunKernelLog(*timeline);
  ASSERT_EQ(judged.findings.size(), 2u);
  EXPECT_EQ(judged.findings[0].id, "code.gpu_xid");
  EXPECT_EQ(judged.findings[0].severity, Severity::kCritical);
  EXPECT_NE(judged.findings[0].summary.find("during the run"), std::string::npos);
  EXPECT_NE(judged.findings[0].summary.find("s into the run"), std::string::npos);
  EXPECT_EQ(judged.findings[1].id, "network.port_errors");
  std::filesystem::remove_all(dir);
}

// An Xid the job logs as its very first action (a GPU that fails at CUDA
// init) is the run's: the log was read before the job was launched, and
// the recording here begins only once the record is written.
TEST(RecordJob, KeepsTheXidTheJobLoggedFirst) {
  char dir[] = "/tmp/stallscope-recorder-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string root = std::string(dir) + "/host";
  std::filesystem::copy(
      std::string(STALLSCOPE_FIXTURES) + "/live_debian12", root,
      std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks);
  std::filesystem::create_directories(root + "/dev");
  const std::string kmsg = root + "/dev/kmsg";
  std::ofstream(kmsg) << "6,1,0,-;Linux version 6.1.0-27-amd64\n";
  const std::string path = std::string(dir) + "/run.db";
  const std::string script =
      "printf '4,2290,%s,-;NVRM: Xid (PCI:0000:17:00): 79, pid=4242, name=python3, "
      "GPU has fallen off the bus.\\n' \"$(($(cut -d. -f1 /proc/uptime) * 1000000))\" >> " +
      kmsg + "; sleep 0.3";
  Result<int> exit_code = RecordUnder(root, {"sh", "-c", script}, path, "Xid (PCI:0000:17:00)");
  ASSERT_TRUE(exit_code.ok()) << exit_code.status().message();
  ASSERT_EQ(*exit_code, 0);
  Result<Timeline> timeline = ReadRun(path);
  ASSERT_TRUE(timeline.ok()) << timeline.status().message();
  ASSERT_EQ(timeline->xids.size(), 1u);
  EXPECT_EQ(timeline->xids[0].xid, 79);
  EXPECT_EQ(timeline->xids[0].bus_id, "0000:17:00");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace stallscope
