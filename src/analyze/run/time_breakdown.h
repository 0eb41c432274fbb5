// Where a run's wall time went, per rank: start-up, the steps split into
// compute, data wait, communication and host syncs, checkpoints, evaluation,
// epoch ends, idle gaps and the time after the last step. The rows of a rank
// add up to the run's wall time by construction: every second of it is in
// exactly one row. Read from the hook's records (steps, sync, host syncs,
// epoch marks and the checkpoint and evaluation spans) and, for checkpoints
// the job did not wrap in stallscope.checkpoint(), from the rank process's
// writes to storage; pure. `report` prints it (text, HTML, JSON
// `time_breakdown`); `diff` and `history` compare it.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sample/timeline.h"

namespace stallscope {

// The rows, in the order they print. Declared once: their names in the
// text and their keys in JSON are kTimeRows'.
enum class TimeRow {
  kStartup,        // the run's start to the rank's first step
  kCompute,        // a step less its data wait and communication
  kDataWait,       // next() on the loader
  kRankWait,       // in an all-reduce, waiting for the last rank to launch it
  kCommunication,  // gradient all-reduces outstanding (stallscope.ddp), less that wait
  kHostSyncs,      // the loop's thread blocked on the GPU (.item(), synchronize(): CUDA)
  kCheckpoints,    // stallscope.checkpoint() spans, or gaps and steps with large writes
  kEvaluation,     // evaluation loops (phase="eval", or under no_grad)
  kEpochEnds,      // between two loops, across an epoch mark
  kIdleGaps,       // between two loops, none of the above
  kAfterLastStep,  // the rank's last step to the run's end
};
inline constexpr size_t kTimeRowCount = 11;

struct TimeRowName {
  TimeRow row;
  std::string_view text;  // "data wait"
  std::string_view key;   // "data_wait"
};
inline constexpr std::array<TimeRowName, kTimeRowCount> kTimeRows = {{
    {TimeRow::kStartup, "start-up", "startup"},
    {TimeRow::kCompute, "compute", "compute"},
    {TimeRow::kDataWait, "data wait", "data_wait"},
    {TimeRow::kRankWait, "waiting for ranks", "rank_wait"},
    {TimeRow::kCommunication, "communication", "communication"},
    {TimeRow::kHostSyncs, "host syncs", "host_syncs"},
    {TimeRow::kCheckpoints, "checkpoints", "checkpoints"},
    {TimeRow::kEvaluation, "evaluation", "evaluation"},
    {TimeRow::kEpochEnds, "epoch ends", "epoch_ends"},
    {TimeRow::kIdleGaps, "idle gaps", "idle_gaps"},
    {TimeRow::kAfterLastStep, "after the last step", "after_last_step"},
}};

inline const TimeRowName& NameOf(TimeRow row) { return kTimeRows[static_cast<size_t>(row)]; }

struct RankTime {
  int rank = 0;
  std::string host;  // "" where the file's ranks said none
  double wall_s = 0;
  std::array<double, kTimeRowCount> seconds{};  // by TimeRow; they add up to wall_s
  int64_t steps = 0;
  int64_t checkpoints = 0;            // spans
  int64_t checkpoints_by_writes = 0;  // gaps and steps taken for checkpoints by their writes
  int64_t host_sync_calls = 0;
  int64_t eval_loops = 0;

  double& at(TimeRow row) { return seconds[static_cast<size_t>(row)]; }
  double at(TimeRow row) const { return seconds[static_cast<size_t>(row)]; }
};

struct TimeBreakdown {
  std::vector<RankTime> ranks;     // by rank; empty: no rank reported steps
  std::vector<std::string> notes;  // what the rows cannot tell (older files, no ddp)
};

// A stretch with no checkpoint span in which the rank's processes wrote at
// least this much to storage (/proc/PID/io write_bytes) is a checkpoint:
// in a gap between steps (not the start-up), the part the sample intervals
// that wrote cover; in a step whose compute is over kCheckpointStepFactor
// times the rank's median, the excess.
// A gap shorter than kCheckpointGapSeconds is none (the microseconds
// between two steps of a loop).
inline constexpr double kCheckpointWriteBytes = 16.0 * 1024 * 1024;
inline constexpr double kCheckpointGapSeconds = 0.01;
inline constexpr double kCheckpointStepFactor = 3.0;

// Every rank with steps in `timeline`, over [0, wall]: wall is the run's
// duration (or its last sample), stretched to the last step or span where
// those end later.
TimeBreakdown BreakDownTime(const Timeline& timeline);

// Adds `from`'s ranks to `into` (kept by rank) and its notes not there yet:
// the files of one job, or the runs of one side of a diff.
void JoinTimes(TimeBreakdown& into, TimeBreakdown from);

// Two breakdowns' rows side by side (diff, history): for each row, the
// seconds of the rank the table shows (the lowest), before and after.
struct TimeRowChange {
  TimeRow row;
  double before_s = 0;
  double after_s = 0;
};
std::vector<TimeRowChange> CompareTime(const RankTime& before, const RankTime& after);

}  // namespace stallscope
