// OtherProcessesCpu: which processes outside a job's tree take the host's
// CPUs, for io.cpu_contention (analyze/run/io_rules.h): the loader's workers
// wait for CPUs another job holds. Each call lists /proc and reads every
// other process's stat by path (open, read, close: nothing is kept open), so
// the recorder calls it only in intervals where the host's CPUs were busy
// beyond what the tree itself used. CPU is the stat ticks since the
// previous call, over the time since then; a process first seen in a call
// has no figure until the next. Processes are told apart by pid and start
// time, so a reused pid starts afresh. Owns its baseline; thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "core/file.h"
#include "sample/timeline.h"

namespace stallscope {

class OtherProcessesCpu {
 public:
  explicit OtherProcessesCpu(Root root, int64_t clock_ticks_per_second = 0);

  // The `top` processes not in `members` with the most CPU since the
  // previous call, most first, each at `t`; `monotonic_seconds` is now.
  // Empty on the first call (the baseline) and when /proc cannot be listed.
  std::vector<OtherProcessPoint> Sample(double t, double monotonic_seconds,
                                        const std::set<int>& members, size_t top = 5);

 private:
  Root root_;
  double ticks_per_second_;
  bool have_previous_ = false;
  double previous_seconds_ = 0;
  // pid -> (start time, CPU ticks) at the previous call.
  std::map<int, std::pair<uint64_t, uint64_t>> previous_;
};

}  // namespace stallscope
