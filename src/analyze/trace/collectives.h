// Who waits for whom: the collectives of several ranks' profiler traces
// matched across the ranks, and each rank's time in them split into waiting
// for the last rank to arrive and moving data.
//
// Matching: NCCL runs a communicator's kernels in launch order, so the n-th
// communication kernel of one communicator in one ProfilerStep is the same
// collective on every rank. The communicator is the process group the
// kernel's args name (PyTorch 2.1 and later), else its stream (the n-th
// communication stream of each rank where the ranks' stream ids differ). A
// step where a rank ran more or fewer collectives of a communicator than the
// others, or where the collectives' kinds disagree, is reported and not
// matched from there: never guessed past.
//
// Clocks: traces say nothing of their hosts' clocks. Unless `same_clock`,
// each rank's offset is found from the collectives' ends (the ranks of one
// NCCL collective finish within microseconds of each other); the spread of
// the ends left after that is reported.
//
// Per collective: each rank's start and end, the last rank's start (the
// arrival), the end; a rank's wait is its start to the arrival, its
// transfer the arrival to its end. The straggler: the ranks the others wait
// for, the share of the steps' time they cost, and the cause from what they
// did since their previous collective against what the others did. Pure;
// thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analyze/trace/breakdown.h"

namespace stallscope {

// A last arrival under this is no lateness (kernel launch jitter).
inline constexpr double kLateMinUs = 20;
// The ranks as late as this share of the latest, in one collective, are
// listed with it (several ranks held up by one cause).
inline constexpr double kLateRanksShare = 0.8;

struct CollectiveOptions {
  bool same_clock = false;  // the traces share one clock (one host): no alignment
};

struct CollectiveRankTimes {
  int rank = 0;
  size_t kernel = 0;          // index into that rank's comm_kernels
  double start = 0, end = 0;  // aligned clock
  double wait_us = 0, transfer_us = 0;
};

struct CollectiveInstance {
  std::string communicator;  // "process group 0 [0, 1]", "stream 84", ...
  std::string collective;    // CollectiveOf, "" unknown
  std::string kernel;        // the first rank's kernel name
  int64_t step = -1;
  size_t seq = 0;                          // its place among its communicator's in the step
  std::vector<CollectiveRankTimes> ranks;  // by rank
  double arrival_us = 0;                   // the last rank's start, aligned
  double end_us = 0;                       // the latest end, aligned
  int last_rank = 0;
  double lateness_us = 0;  // the arrival - the first rank's start
  double transfer_us = 0;  // median of the ranks' transfer
  int group_size = 0;      // the args' group size, else the ranks matched
  int64_t bytes = -1;
  std::optional<double> algbw_gbps, busbw_gbps;  // bytes over the transfer; nccl-tests' factor
};

struct RankStepSplit {
  int64_t step = -1;
  uint64_t collectives = 0;
  double wait_us = 0, transfer_us = 0;
};

struct RankSplit {
  int rank = 0;
  double clock_offset_us = 0;  // subtracted from its times to align them
  uint64_t collectives = 0;    // matched
  uint64_t unmatched = 0;      // its communication kernels in no matched collective
  double wait_us = 0, transfer_us = 0;
  double transfer_exposed_us = 0;   // of the transfer, with no compute kernel running
  double unmatched_exposed_us = 0;  // its unmatched kernels' time with no compute running
  double exposed_us = 0;            // both together, each instant once
  uint64_t last_in = 0;             // collectives it arrived last in, late by kLateMinUs or more
  double caused_wait_us = 0;        // the others' mean wait in those, summed
  double steps_us = 0;              // its steps' time (the share's basis)
  std::vector<RankStepSplit> steps;
};

struct TraceStraggler {
  int rank = 0;
  uint64_t last_in = 0;  // collectives it arrived last in (late by kLateMinUs or more)
  uint64_t of = 0;       // collectives it was matched in
  double lateness_p50_us = 0, lateness_max_us = 0;
  double caused_wait_us = 0;  // the others' mean wait in those, summed
  double share = 0;           // of it over the mean steps' time
  std::string cause;  // "compute", "input", "sync", "host_launch", "late_step_start"; "" unknown
  std::string cause_detail;     // the kernel, CPU op or sync op
  double cause_excess_us = 0;   // how much more of it than the other ranks, over its late arrivals
  size_t worst = 0;             // index of its latest arrival in CollectiveSplit::collectives
  std::vector<int> late_ranks;  // in the worst, late by kLateRanksShare of it or more
};

struct CollectiveSplit {
  bool same_clock = false;
  std::string clock;                            // how times were aligned, in words
  double spread_p50_us = 0, spread_max_us = 0;  // of the collectives' ends, aligned
  double late_min_us =
      kLateMinUs;  // a last arrival counts from here: kLateMinUs or twice the spread
  std::vector<CollectiveInstance> collectives;  // by step, communicator, seq
  std::vector<RankSplit> ranks;                 // as the breakdowns
  std::vector<TraceStraggler>
      stragglers;  // the ranks whose lateness costs kStragglerStepFraction or more, worst first
  std::vector<std::string> notes;  // mismatches, groups not whole
  bool Matched() const { return !collectives.empty(); }
  const RankSplit* Of(int rank) const;
};

CollectiveSplit SplitCollectives(const std::vector<TraceRankBreakdown>& ranks,
                                 const CollectiveOptions& options);

}  // namespace stallscope
