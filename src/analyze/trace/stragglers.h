// Potential stragglers across ranks, as Holistic Trace Analysis (HTA)
// defines them (get_potential_stragglers with
// find_stragglers_with_late_start_comm_kernels): over the kept steps of every
// rank, the NCCL kernels (names starting "ncclKernel", on a stream above 0,
// launched in a step numbered above 0) at least 1% of the mean step time;
// of each (rank, stream, step, name) the last; the (stream, name) whose
// duration varies most across ranks (sample std, mean over the steps); per
// step, the ranks whose start of that kernel is among the `candidates`
// latest; the ranks counted most often, lower rank first on ties. Pure;
// thread-safe.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace stallscope {

inline constexpr int kStragglerCandidates = 2;
inline constexpr double kStragglerMinStepShare = 0.01;  // HTA's min_normalized_duration

struct CommKernelRow {
  int stream = 0;
  std::string name;
  int64_t step = 0;  // the ProfilerStep its launch is in
  double start = 0, dur = 0;
};

// What one rank's trace gives the analysis.
struct StragglerFigures {
  int rank = 0;
  std::vector<int64_t> steps;                                 // the kept steps
  double first_us = std::numeric_limits<double>::infinity();  // over rows in the steps
  double last_end_us = -std::numeric_limits<double>::infinity();
  std::vector<CommKernelRow> comm;  // in time order
};

struct PotentialStragglers {
  std::vector<int> ranks;  // the `candidates` most often late, most first
  int stream = 0;          // the kernel the start times are of
  std::string kernel;
  uint64_t steps = 0;                                 // steps compared
  std::vector<std::pair<int, uint64_t>> late_counts;  // per rank: steps among the latest
  std::string why_none;                               // set when there is no result
};

PotentialStragglers FindPotentialStragglers(const std::vector<StragglerFigures>& ranks,
                                            int candidates = kStragglerCandidates);

}  // namespace stallscope
