// RecordJob reads the machine under RecordOptions::root: pointed at a
// fixture host, the run's intervals carry that host's memory, not this one's.
#include "record/recorder.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "core/host_clock.h"
#include "probe/meminfo.h"
#include "store/run_reader.h"
#include "store/run_writer.h"

namespace stallscope {
namespace {

TEST(RecordJob, ReadsTheHostUnderItsRoot) {
  const std::string fixture = std::string(STALLSCOPE_FIXTURES) + "/live_debian12";
  Result<MemInfo> fixture_memory = ReadMemInfo(Root(fixture));
  ASSERT_TRUE(fixture_memory.ok()) << fixture_memory.status().message();
  ASSERT_TRUE(fixture_memory->available_bytes.has_value());

  sigset_t saved;
  pthread_sigmask(SIG_BLOCK, nullptr, &saved);
  BlockRecordSignals();
  char dir[] = "/tmp/stallscope-recorder-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/run.db";
  {
    Result<RunWriter> writer = RunWriter::Create(path, false);
    ASSERT_TRUE(writer.ok()) << writer.status().message();
    Result<Job> job = Job::Start({"sleep", "0.6"}, {});
    ASSERT_TRUE(job.ok()) << job.status().message();
    RunInfo info;
    info.command = "sleep 0.6";
    info.interval_seconds = 0.1;
    info.root_pid = job->pid();
    info.start_monotonic_seconds = MonotonicSeconds();
    ASSERT_TRUE(writer->WriteRunInfo(info).ok());
    RecordOptions options;
    options.interval_seconds = 0.1;
    options.root = fixture;
    std::FILE* quiet = std::fopen("/dev/null", "w");
    Result<RecordOutcome> outcome = RecordJob(*job, info, options, nullptr, *writer, quiet);
    std::fclose(quiet);
    ASSERT_TRUE(outcome.ok()) << outcome.status().message();
    ASSERT_TRUE(writer->Close().ok());
  }
  pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  Result<Timeline> timeline = ReadRun(path);
  ASSERT_TRUE(timeline.ok()) << timeline.status().message();
  ASSERT_FALSE(timeline->samples.empty());
  for (const TimelineSample& s : timeline->samples) {
    EXPECT_EQ(s.mem_available_bytes, *fixture_memory->available_bytes);
  }
  std::remove(path.c_str());
  rmdir(dir);
}

}  // namespace
}  // namespace stallscope
