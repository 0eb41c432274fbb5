// The job stallscope watches: a command it starts (`run`) or a process tree
// it attaches to (`watch`).
//
// Job::Start forks and execs CMD with extra environment variables, reports a
// command that cannot be executed as an error (exit status 127/126, as a
// shell would) before any sampling starts, and leaves CMD in stallscope's
// process group so a terminal's Ctrl-C reaches both. Signals sent to
// stallscope alone (kill -TERM PID) are forwarded to CMD by the caller
// through Forward(). Not thread-safe; one owner.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace stallscope {

struct JobExit {
  std::optional<int> exit_code;  // it exited
  std::optional<int> signal;     // a signal ended it
  // The shell convention for our own exit code: code, or 128 + signal.
  int ShellStatus() const { return exit_code ? *exit_code : 128 + signal.value_or(0); }
};

// How long StartRanks' launcher waits, after sending the other ranks
// SIGTERM because one failed, before it sends SIGKILL to those that ignore
// it (a rank stuck in a collective, a handler that never returns), and to
// every process below them. Not after a stop the user asked for (SIGINT or
// SIGTERM): a rank may be saving its checkpoint.
inline constexpr int kRankTermGraceSeconds = 10;

// Where StartRanks' ranks sit in the job (dist/node_layout.h decides it):
// this node's ranks are node_rank*procs .. node_rank*procs + procs - 1.
struct RankLayout {
  int procs = 1;
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;  // 0: a free port on 127.0.0.1 (one node)
};

class Job {
 public:
  // argv[0] is looked up in PATH. NotFound -> the caller exits 127;
  // PermissionDenied -> 126. stdout_to_stderr: CMD's stdout goes to our
  // stderr (`run --json` keeps stdout for the JSON alone).
  static Result<Job> Start(const std::vector<std::string>& argv,
                           const std::vector<std::pair<std::string, std::string>>& extra_env,
                           bool stdout_to_stderr = false);
  // Starts `layout.procs` copies of argv as this node's ranks of one
  // data-parallel job, with the variables torchrun sets (RANK, LOCAL_RANK,
  // WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, GROUP_WORLD_SIZE, ROLE_RANK,
  // ROLE_WORLD_SIZE, ROLE_NAME, MASTER_ADDR, MASTER_PORT). The job's pid is a launcher (a fork of
  // stallscope) whose children are the ranks: it waits for all of them, ends the others with
  // SIGTERM when one fails (as torchrun does) and SIGKILL
  // kRankTermGraceSeconds later to those still running, passes on SIGINT/SIGTERM sent
  // to it alone, and exits with the first failed rank's status, or 0. The
  // caller has blocked SIGINT, SIGTERM and SIGCHLD (BlockRecordSignals), as
  // for Start. A command that cannot be executed fails here as in Start.
  static Result<Job> StartRanks(const std::vector<std::string>& argv,
                                const std::vector<std::pair<std::string, std::string>>& extra_env,
                                const RankLayout& layout, bool stdout_to_stderr = false);
  // A running process (not our child): we can watch it but not wait for it.
  static Result<Job> Attach(pid_t pid);
  // Processes that are not one tree (a Slurm job's, found by
  // RecordOptions::adopt): no pid, never ends by itself; the recording
  // ends when it is stopped (SIGTERM from the job's epilog, Ctrl-C).
  static Job Follow() {
    Job job(0, false);
    job.follows_ = true;
    return job;
  }

  Job(Job&& other) noexcept;
  Job& operator=(Job&& other) noexcept;
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;
  ~Job();

  pid_t pid() const { return pid_; }
  // StartRanks: the MASTER_PORT the ranks were given (the free port picked
  // when the layout left it 0); 0 for other jobs.
  int master_port() const { return master_port_; }
  bool is_child() const { return is_child_; }

  // Non-blocking: the exit once the job has ended, nullopt while it runs.
  // For an attached process only "gone" is known (exit unknown: both unset).
  std::optional<JobExit> Poll();
  // A started job whose command has exited and is not reaped yet: its
  // counters in /proc (its own and those of the children it waited for)
  // can still be read once. Always false for an attached process.
  bool ExitedUnreaped() const;
  void Forward(int signal) const;

 private:
  Job(pid_t pid, bool is_child) : pid_(pid), is_child_(is_child) {}
  pid_t pid_ = -1;
  bool is_child_ = false;
  bool reaped_ = false;
  bool follows_ = false;  // Follow(): Poll() never reports an end
  int master_port_ = 0;
};

}  // namespace stallscope
