// What the kernel logged about the hardware while a job ran: the NVIDIA Xid
// errors and RDMA/mlx5 port link-downs (probe/kernel_log.h) that were not in
// the log when the run started. `run` reads the log once before it
// launches the job (so what the job logs in its first moments is the run's;
// `watch` when it begins) and once when the job ended (never while it runs:
// the log is read whole, up to 64 MiB); a record is this run's when the
// first read did not hold it, so no clock has to agree with the kernel's. Where the first read
// failed, the records timed at or after the start are taken instead. The
// events' times become seconds since the run's start. Not thread-safe (one
// per run).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "core/file.h"
#include "core/status.h"
#include "probe/kernel_log.h"

namespace stallscope {

class KernelLogWatch {
 public:
  // Reads what the log under `root` holds now.
  KernelLogWatch(const Root& root, double start_monotonic_seconds);

  // The Xids and port events logged since then, their monotonic_seconds made
  // seconds since the start. An unreadable log is the reader's error.
  Result<KernelLogEvents> SinceStart() const;

 private:
  using Key = std::pair<int64_t, std::string>;  // the record's microseconds (-1: none), message
  static Key KeyOf(const std::optional<double>& seconds, const std::string& message);

  Root root_;
  double start_ = 0;
  bool baseline_read_ = false;
  std::set<Key> before_;
};

}  // namespace stallscope
