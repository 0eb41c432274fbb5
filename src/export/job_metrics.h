// JobTable: what the exporter knows about the training processes that
// report through the Python hook (docs/hook-protocol.md), one entry per
// process (a rank), and the Prometheus series made from it.
//
// Pure: datagrams and the clock come in as arguments, so tests drive it
// without sockets or sleeps; thread-compatible. Memory is bounded: at most
// max_processes entries (a datagram from one more process is counted and
// ignored) and an entry that has not reported for expiry_seconds is dropped,
// so a host that runs job after job for months holds only the live ones.
// A process is named by its `job` record (the hook sends STALLSCOPE_JOB, else
// TORCHELASTIC_RUN_ID, else script-PPID); a new process with the same job
// name and rank replaces the old one (a restarted rank), so no two entries
// ever make the same series.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "render/exposition.h"

namespace stallscope {

// Upper bounds of the step-time histogram, seconds: from 10 ms steps of a
// small model to the tens of seconds of a large one.
inline constexpr double kStepBucketsSeconds[] = {0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                                 1,    2.5,   5,    10,  30,   60};

struct JobProcess {
  int pid = 0;
  std::string job;  // the job's name; "pid-N" until the hook names it
  int rank = 0;
  int local_rank = 0;
  int world_size = 1;
  uint64_t steps = 0;
  double step_seconds_sum = 0;
  double wait_seconds_sum = 0;
  uint64_t bucket_counts[std::size(kStepBucketsSeconds)] = {};  // not cumulative
  double last_step_seconds = 0;
  double last_wait_seconds = 0;
  int epoch = -1;           // -1: no epoch marked yet
  int loader_workers = -1;  // -1: no loader reported
  uint64_t dropped_datagrams = 0;
  int64_t last_seen_ns = 0;
};

class JobTable {
 public:
  JobTable(size_t max_processes, double expiry_seconds)
      : max_processes_(max_processes), expiry_ns_(static_cast<int64_t>(expiry_seconds * 1e9)) {}

  // One datagram of hook records received at now_ns (monotonic).
  void Ingest(std::string_view datagram, int64_t now_ns);
  // Drops processes silent for longer than the expiry.
  void Expire(int64_t now_ns);
  // The per-rank series, labelled job_name, rank and host.
  void Emit(Exposition& out, const std::string& host, int64_t now_ns) const;

  const std::map<int, JobProcess>& processes() const { return processes_; }
  uint64_t malformed_lines() const { return malformed_; }
  uint64_t refused_records() const { return refused_; }
  uint64_t expired_processes() const { return expired_; }

 private:
  JobProcess* ProcessFor(int pid, int rank, int64_t now_ns);
  void Name(JobProcess& p, std::string name);

  size_t max_processes_;
  int64_t expiry_ns_;
  std::map<int, JobProcess> processes_;  // by pid
  uint64_t malformed_ = 0;
  uint64_t refused_ = 0;
  uint64_t expired_ = 0;
};

// A job name as a label value: printable ASCII, at most 128 bytes; other
// names are refused (nullopt-like: empty).
std::string CleanJobName(std::string_view name);

}  // namespace stallscope
