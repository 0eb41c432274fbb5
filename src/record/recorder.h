// The recording loop of `run` and `watch`: every interval it samples the
// host and the job's whole process tree, drains the hook's events, appends
// the interval to the run file (one transaction) and prints one summary line
// (and an epoch line when the hook marks a new epoch) on the status stream.
// It returns when the job ends or, for `watch`, when the user interrupts.
//
// Signals: the caller blocks SIGINT, SIGTERM and SIGCHLD before starting the
// job; the loop reads them through a signalfd. For `run`, a signal sent to
// stallscope alone (kill) is forwarded to the job; one from the terminal
// already reached the job (same process group) and is not sent twice. For
// `watch`, Ctrl-C stops watching and never touches the watched process.
// Memory stays bounded: nothing but the previous sample is kept; analysis
// reads the run file back. Not thread-safe; one per run.
#pragma once

#include <cstdio>
#include <functional>
#include <optional>
#include <string>

#include "core/status.h"
#include "record/hook_receiver.h"
#include "record/job.h"
#include "record/kernel_log_watch.h"
#include "record/rank_watch.h"
#include "sample/timeline.h"
#include "store/run_writer.h"

namespace stallscope {

struct RecordOptions {
  double interval_seconds = 1.0;
  std::optional<std::string> data_path;  // the dataset: its disk is "the data device"
  bool forward_signals = true;           // run: yes; watch: no
  std::string root = "/";                // where /proc, /sys and /dev are read (tests: a fixture)
  // What the kernel's log held before the job was launched: built then, so
  // that what the job logs in its first moments (an Xid at CUDA init) is
  // the run's. Unset (watch: the job ran before), read when RecordJob starts.
  std::optional<KernelLogWatch> kernel_log;
  // The run's place in a job that may span nodes, written at start (table
  // node). `node_from_ranks`: `run -- LAUNCHER`, where the launcher places
  // the ranks: the first rank's environment (GROUP_RANK, MASTER_ADDR, ...)
  // completes it once the rank says hello.
  NodeInfo node;
  bool node_from_ranks = false;
  // Several nodes: node rank 0 answers clock pings on UDP `clock_port`; the
  // others measure their offset from `clock_peer` (record/clock_exchange.h)
  // at each sample until one is measured.
  bool serve_clock = false;
  std::string clock_peer;
  int clock_port = 0;
  // The interface the route to a master address leaves by ("" when none):
  // its receive and transmit rates go into every sample once the master is
  // known (NodeInfo::net_interface). The command line passes the kernel's
  // route lookup (net/route.h), which this layer cannot call; unset, no
  // rates are recorded.
  std::function<std::string(const std::string& master_addr)> interface_toward;
  // A rank that stops, and a hang: --hang-after, --hang-action, the stacks
  // folder (record/rank_watch.h).
  HangOptions hang;
  // Processes that join the job by themselves (probe/process_sampler.h's
  // adopt; `watch --slurm-job`: probe/slurm_job.h), for a Job::Follow().
  std::function<std::optional<bool>(int32_t pid)> adopt;
};

struct RecordOutcome {
  RunInfo info;                    // as written at the end
  JobExit exit;                    // how the job ended (unknown for watch)
  bool interrupted = false;        // watch stopped by Ctrl-C / SIGTERM
  bool recording_stopped = false;  // a write to the run file failed; said on the status stream
};

// Blocks SIGINT, SIGTERM and SIGCHLD in the calling thread, before the job
// starts, so none is lost (the job's processes start with an empty mask).
void BlockRecordSignals();

// A non-blocking, close-on-exec signalfd that reads those three signals.
Result<int> OpenRecordSignalFd();

Result<RecordOutcome> RecordJob(Job& job, RunInfo info, const RecordOptions& options,
                                HookReceiver* hook, RunWriter& writer, std::FILE* status);

}  // namespace stallscope
