// SuperviseJob (record/supervise.h): the loop ab and scale share waits the
// job out, ends it with the timeout signal once past the deadline (once),
// and returns how it ended.
#include "record/supervise.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include "core/host_clock.h"
#include "record/recorder.h"

namespace stallscope {
namespace {

class Supervise : public ::testing::Test {
 protected:
  // The signals are blocked for this test only: the others run with the
  // mask they had.
  void SetUp() override {
    pthread_sigmask(SIG_BLOCK, nullptr, &saved_mask_);
    BlockRecordSignals();
    Result<int> fd = OpenRecordSignalFd();
    ASSERT_TRUE(fd.ok()) << fd.status().message();
    signal_fd_ = *fd;
    Result<HookReceiver> hook = HookReceiver::Create();
    ASSERT_TRUE(hook.ok()) << hook.status().message();
    hook_.emplace(std::move(*hook));
  }
  void TearDown() override {
    if (signal_fd_ >= 0) close(signal_fd_);
    pthread_sigmask(SIG_SETMASK, &saved_mask_, nullptr);  // a pending SIGCHLD is ignored
  }
  SuperviseOptions Options(std::optional<double> timeout_seconds, int signal) const {
    SuperviseOptions o;
    o.signal_fd = signal_fd_;
    o.start_ns = MonotonicNs();
    if (timeout_seconds) o.deadline_ns = o.start_ns + static_cast<int64_t>(*timeout_seconds * 1e9);
    o.timeout_signal = signal;
    o.poll_ms = 20;
    return o;
  }
  sigset_t saved_mask_{};
  int signal_fd_ = -1;
  std::optional<HookReceiver> hook_;
};

TEST_F(Supervise, AJobThatEndsByItselfIsNotTimedOut) {
  Result<Job> job = Job::Start({"sh", "-c", "exit 7"}, {});
  ASSERT_TRUE(job.ok()) << job.status().message();
  HookEvents events;
  SupervisedRun run = SuperviseJob(*job, *hook_, Options(60.0, SIGTERM), events);
  ASSERT_TRUE(run.exit.exit_code.has_value());
  EXPECT_EQ(*run.exit.exit_code, 7);
  EXPECT_FALSE(run.timed_out);
  EXPECT_FALSE(run.interrupted);
  EXPECT_TRUE(events.steps.empty());
}

TEST_F(Supervise, PastTheDeadlineTheJobGetsTheTimeoutSignal) {
  Result<Job> job = Job::Start({"sleep", "60"}, {});
  ASSERT_TRUE(job.ok()) << job.status().message();
  HookEvents events;
  SupervisedRun run = SuperviseJob(*job, *hook_, Options(0.2, SIGKILL), events);
  EXPECT_TRUE(run.timed_out);
  ASSERT_TRUE(run.exit.signal.has_value());
  EXPECT_EQ(*run.exit.signal, SIGKILL);
}

}  // namespace
}  // namespace stallscope
