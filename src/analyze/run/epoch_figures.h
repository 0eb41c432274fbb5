// Per-epoch figures from the boundary samples (sample/timeline.h
// BoundarySample): what the job read and the CPU it used between two
// readings, as exact differences of counters, wherever the interval ticks
// fell. Files without boundary samples give no spans, and the rules fall
// back to the interval samples. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sample/timeline.h"

namespace stallscope {

// The time between two consecutive boundary samples. It covers the epochs
// first_epoch..last_epoch: one, unless marks came closer than
// kMinBoundarySpacingSeconds; the span to the job's end reading covers the
// last epochs marked.
struct BoundarySpan {
  int first_epoch = 0;
  int last_epoch = 0;
  double start_s = 0;
  double seconds = 0;
  // Bytes the job read from the data disk: the smaller of what the disk read
  // and what the tree's processes read from storage (either alone where the
  // other is not known); nullopt when neither is.
  std::optional<double> read_bytes;
  std::optional<double> cpu_seconds;  // the tree's; nullopt when it lost a process
  uint64_t rss_bytes = 0;             // the larger of the two readings
};

// The disk the spans count: the run's data device, else the whole disk
// that read the most between the first and the last boundary sample ("" when
// none read).
std::string BoundaryDisk(const Timeline& timeline);

// In time order; empty without at least two boundary samples.
std::vector<BoundarySpan> BoundarySpans(const Timeline& timeline);

}  // namespace stallscope
