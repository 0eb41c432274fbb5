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
// name and rank of the same user replaces the old one (a restarted rank),
// so no two entries ever make the same series. A process's series carry its
// user's uid (label `uid`) as the kernel said it sent them, so that two
// users' jobs of one name stay apart and neither ends the other's series.
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

// What the exporter read of one role of a rank's process tree at the last
// scrape: "rank" is the process that reports, "workers" everything below it
// (DataLoader workers). The CPU and run delay are counters that never go
// back: a member that exits leaves its last figures in them.
struct RoleFigures {
  int processes = 0;
  uint64_t rss_bytes = 0;
  double cpu_seconds = 0;
  double run_delay_seconds = 0;  // runnable, waiting for a CPU (schedstat)
};

// One member of a tree at the last read, for the counters above.
struct MemberTotals {
  bool worker = false;
  double cpu_seconds = 0;
  double run_delay_seconds = 0;
};

struct JobProcess {
  int pid = 0;
  int64_t uid = -1;          // the sender's uid (SCM_CREDENTIALS); -1: unknown, no label
  std::string job;           // the job's name; "pid-N" until the hook names it
  std::string slurm_job_id;  // the `slurm` record's (SLURM_JOB_ID): label job_id; "" outside Slurm
  int rank = 0;
  int local_rank = 0;
  int world_size = 1;
  uint64_t steps = 0;
  double step_seconds_sum = 0;
  double wait_seconds_sum = 0;
  double sync_seconds_sum = 0;  // stallscope.ddp(model): gradient synchronization wait
  bool reports_sync = false;
  uint64_t bucket_counts[std::size(kStepBucketsSeconds)] = {};  // not cumulative
  double last_step_seconds = 0;
  double last_wait_seconds = 0;
  int epoch = -1;           // -1: no epoch marked yet
  int loader_workers = -1;  // -1: no loader reported
  uint64_t dropped_datagrams = 0;
  int64_t last_seen_ns = 0;
  // The process tree (JobTable::UpdateTree); tree_read false until read.
  bool tree_read = false;
  RoleFigures rank_role, workers_role;
  double exited_cpu_seconds[2] = {};  // rank, workers: members gone
  double exited_run_delay_seconds[2] = {};
  std::map<int32_t, MemberTotals> members;  // by pid, as last read
  // The disk (as the disk series name it) or, without one, the file system
  // type, behind most of the input files the workers (else the rank) were
  // caught reading; counted per (device, fs_type), at most kMaxDataDevices.
  std::map<std::pair<std::string, std::string>, uint64_t> data_devices;
};

inline constexpr size_t kMaxDataDevices = 16;

struct ProcessTree;

class JobTable {
 public:
  JobTable(size_t max_processes, double expiry_seconds)
      : max_processes_(max_processes), expiry_ns_(static_cast<int64_t>(expiry_seconds * 1e9)) {}

  // One datagram of hook records received at now_ns (monotonic).
  // sender_pid: the process that sent the datagram, as the kernel says
  // (SCM_CREDENTIALS); when above 0 it stands in for each record's own pid
  // field, so a process cannot report as another one. sender_uid: its user,
  // from the same credentials; -1 when unknown.
  void Ingest(std::string_view datagram, int64_t now_ns, int sender_pid = 0,
              int64_t sender_uid = -1);
  // The tree of the process `pid` as read now (the root first, then its
  // descendants): its RSS, CPU and run delay by role. Unknown pids are
  // ignored.
  void UpdateTree(int pid, const ProcessTree& tree);
  // An input file the tree of `pid` was caught reading, on `device` (a
  // whole disk, empty for a file system without one) of type fs_type.
  void SeenInput(int pid, const std::string& device, const std::string& fs_type);
  // Drops processes silent for longer than the expiry.
  void Expire(int64_t now_ns);
  // The per-rank series, labelled job_name, rank, host and, when known, uid.
  void Emit(Exposition& out, const std::string& host, int64_t now_ns) const;

  const std::map<int, JobProcess>& processes() const { return processes_; }
  uint64_t malformed_lines() const { return malformed_; }
  uint64_t refused_records() const { return refused_; }
  uint64_t expired_processes() const { return expired_; }

 private:
  // The entry of `pid`, made when new (or when the pid is another uid's).
  JobProcess* ProcessFor(int pid, int rank, int64_t uid, int64_t now_ns);
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
