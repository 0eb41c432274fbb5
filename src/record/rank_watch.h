// Watching the job's ranks for a stop while `run` records: a rank that ends
// before the others (its exit, seen the moment it happens through a pidfd),
// and a job where no rank finishes a step for --hang-after (a hang).
//
// The ranks are the processes that said hello to the hook. Each keeps a
// step ring beside the hook's socket (python/stallscope/_stops.py): its
// steps, in shared memory that outlives it, and whether it waits in a
// gradient all-reduce since when. RankWatch reads the rings for the steps a
// killed rank had not yet sent (Recover), for where each rank is when
// another dies (RankState rows, reason "death"), and, at a hang, with
// /proc (state, wchan, threads, CPU time) and each rank's Python stacks
// (faulthandler, on the signal the ring says is armed; never another), two
// looks some seconds apart (reason "hang"). The rules that judge these rows
// are analyze/run/rank_stop_rules.h. Not thread-safe; one owner (the recorder).
#pragma once

#include <array>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/file.h"
#include "core/status.h"
#include "record/hook_receiver.h"
#include "sample/timeline.h"

namespace stallscope {

struct HangOptions {
  // nullopt: the larger of kHangFloorSeconds and kHangStepFactor x the
  // median step; 0: no hang detection.
  std::optional<double> after_seconds;
  bool kill = false;              // --hang-action kill: end the job once a hang is found
  std::string stacks_dir;         // where the hook's faulthandler writes (RUN.db.stacks/); "" none
  int stack_signal = 0;           // the real-time signal the hook arms (0: none)
  double look_gap_seconds = 3.0;  // between the two looks
};
inline constexpr double kHangFloorSeconds = 60;
// The stop records (hook, launcher) a run keeps at most: a few per rank; a
// job that raises through its loader in a loop must not grow the recorder.
inline constexpr size_t kMaxStopsKept = 20000;
// --hang-action kill: how long the dumps asked for are waited for.
inline constexpr double kDumpWaitSeconds = 10;
// Ranks the job's own launcher left running when it ended: SIGKILL this
// long after SIGTERM (as `run --procs`'s launcher does, kRankTermGraceSeconds).
inline constexpr double kOrphanGraceSeconds = 10;
// The hook's stack signal is SIGRTMIN + this: clear of glibc's own two
// real-time signals and of the low ones other libraries take first; never
// SIGUSR1/SIGUSR2, which Slurm and Lightning use.
inline constexpr int kStackSignalOffset = 6;
inline constexpr double kHangStepFactor = 20;

// What the recorder does after Check(): nothing, or end the job (kill).
enum class HangAction { kNone, kEndJob };

class RankWatch {
 public:
  // `ring_dir`: the hook's socket folder ("" when there is no hook).
  RankWatch(Root root, std::string ring_dir, HangOptions options, int64_t start_ns);
  ~RankWatch();
  RankWatch(const RankWatch&) = delete;
  RankWatch& operator=(const RankWatch&) = delete;

  // The ranks that said hello (those already known are skipped: call it
  // after every drain), and the steps reported since the last NoteSteps.
  void NoteRanks(const std::vector<RankInfo>& ranks);
  void NoteSteps(const std::vector<StepEvent>& steps);
  // The pidfds of live ranks, for the recorder's poll.
  std::vector<int> PidFds() const;
  // Ranks whose pidfd fired: their end noted (how "gone"), and where the
  // others were at that moment (rank_states, reason "death").
  void NoteEnds(int64_t now_ns);
  // Once per interval: a hang looked for, in two looks at least
  // look_gap_seconds apart, each at an interval (the loop is never held
  // longer than a look: 0.3 s for the stacks); a line on `status` when
  // found. kEndJob: --hang-action kill, once the dumps asked for are in.
  HangAction Check(int64_t now_ns, std::FILE* status);
  // At the job's end: the steps rings hold that never came as datagrams,
  // appended to `events.steps` (numbered after the rank's last).
  void Recover(HookEvents& events);
  // `sig` to every live rank (--hang-action kill: SIGKILL after the grace).
  void SignalRanks(int sig);
  // The job `run` started has ended: ranks of it still running (their
  // launcher gone: no one else will end them) get SIGTERM, SIGKILL
  // kOrphanGraceSeconds later, each signal noted (sent_signal, recorder), a
  // line on `status`. Returns how many were left.
  int EndOrphans(std::FILE* status);
  // Asks PyTorch's Flight Recorder of every rank for a dump: a line written
  // to each named pipe (FIFO, `*.pipe`) in the stacks folder, which
  // ProcessGroupNCCL makes there under TORCH_NCCL_DEBUG_INFO_PIPE_FILE and
  // its watchdog reads. Never blocks. Returns how many pipes took it.
  int RequestFlightRecorderDumps() const;
  // Whether every pipe asked has its dump beside it, written (its size held
  // since the last call).
  bool DumpsDone();

  // Rows not yet written (taken by the caller); all of them at the end.
  bool has_rows() const { return !states_.empty(); }
  std::vector<RankStop> TakeStops();
  std::vector<RankState> TakeStates();

 private:
  struct Rank;
  struct Ring;
  std::optional<Ring> ReadRing(const Rank& r) const;
  bool Ours(int pid) const;
  RankState StateOf(const Rank& r, double t, const char* reason) const;
  void Look(std::vector<RankState>& into, double t);
  bool Stuck(const RankState& first, const RankState& second, double gap_seconds) const;
  HangAction Judge(int64_t now_ns, double t, double threshold, std::FILE* status);
  double Threshold() const;

  Root root_;
  std::string ring_dir_;
  HangOptions options_;
  int64_t start_ns_;
  std::map<int, Rank*> ranks_;           // by pid; owned
  std::vector<double> recent_steps_;     // step durations, the last few hundred
  std::optional<int64_t> last_step_ns_;  // the latest step end of any rank
  std::optional<int64_t> next_check_ns_;
  bool hang_reported_ = false;
  // The two looks: the first's rows and time, and when the second is due.
  std::vector<RankState> first_look_;
  int64_t first_look_ns_ = 0;
  std::optional<int64_t> second_look_ns_;
  // --hang-action kill: when the job ends at the latest, the dumps awaited.
  std::optional<int64_t> end_job_ns_;
  int dumps_asked_ = 0;
  std::map<std::string, int64_t> dump_sizes_;
  size_t deaths_seen_ = 0;
  std::vector<RankStop> stops_;
  std::vector<RankState> states_;
};

// RUN.db.stacks/ made, or emptied of an earlier run's rank-*.txt; a path
// there that is not a directory of its own is an error (nothing outside the
// run's output is touched). At the end, FinishStacksDir removes the empty
// files and the folder when nothing is left.
Status PrepareStacksDir(const std::string& dir);
void FinishStacksDir(const std::string& dir);

}  // namespace stallscope
