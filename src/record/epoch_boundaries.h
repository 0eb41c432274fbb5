// Boundary samples (sample/timeline.h BoundarySample): when the recorder
// takes one, and what it holds. The hook's epoch marks arrive between two
// interval ticks; the recorder reads the job's counters at that moment so
// that each epoch's bytes and seconds are differences of two readings, not
// shares of the intervals around it.
//
// EpochBoundaryClock decides when: at once for an epoch not marked before,
// but at most one reading per kMinBoundarySpacingSeconds, however fast
// epochs come (a mark that comes sooner is read once that much has passed,
// under the latest epoch begun). MakeBoundarySample sums a tree sample and
// the disks' counters into one reading. Both pure; thread-compatible.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sample/disk.h"
#include "sample/process.h"
#include "sample/timeline.h"

namespace stallscope {

class EpochBoundaryClock {
 public:
  // Notes the epochs of `marks` not seen before (any rank: the earliest
  // mark of an epoch starts it). Idempotent.
  void Mark(const std::vector<EpochEvent>& marks);
  // When the pending reading is due (seconds since start); nullopt: none.
  std::optional<double> DueAt() const;
  // The epoch to read now, at `now` seconds since start, when one is due.
  std::optional<int> TakeDue(double now);

 private:
  std::set<int> seen_;
  std::optional<int> pending_;
  std::optional<double> last_taken_;
};

// One reading at `t`: the tree's processes (none when `tree` is null: the
// job is gone) and the bytes read from each of `whole_disks` found in
// `disks` (those that read nothing since boot left out).
BoundarySample MakeBoundarySample(double t, std::optional<int> epoch, const ProcessTree* tree,
                                  const DiskstatsSample& disks,
                                  const std::set<std::string>& whole_disks,
                                  double ticks_per_second);

}  // namespace stallscope
