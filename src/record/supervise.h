// Supervising a job to its end while its hook reports are collected: the
// loop `ab` and `scale` share (each run of theirs is one job, judged by what
// its hook said). It waits for the job on a signalfd and the hook's socket,
// drains the hook, passes on SIGINT/SIGTERM sent to stallscope alone (from a
// terminal the job got them too: same process group), and ends the job with
// `timeout_signal` once past the deadline. `run` and `watch` supervise
// through RecordJob (recorder.h), which also samples the host each interval;
// the rank launcher of Job::StartRanks reaps its ranks itself (job.cc).
// Not thread-safe; one owner.
#pragma once

#include <csignal>
#include <cstdint>
#include <optional>

#include "record/hook_receiver.h"
#include "record/job.h"

namespace stallscope {

struct SuperviseOptions {
  int signal_fd = -1;                  // OpenRecordSignalFd (SIGINT, SIGTERM, SIGCHLD blocked)
  int64_t start_ns = 0;                // CLOCK_MONOTONIC: the hook's event times count from here
  std::optional<int64_t> deadline_ns;  // CLOCK_MONOTONIC; nullopt: no time limit
  int timeout_signal = SIGTERM;        // sent once, at the deadline
  int poll_ms = 200;                   // the longest wait between two looks at the job
};

struct SupervisedRun {
  JobExit exit;
  bool timed_out = false;    // the deadline passed and timeout_signal was sent
  bool interrupted = false;  // SIGINT or SIGTERM reached stallscope
};

// Returns when the job has ended; `events` has every report the hook sent.
SupervisedRun SuperviseJob(Job& job, HookReceiver& hook, const SuperviseOptions& options,
                           HookEvents& events);

}  // namespace stallscope
