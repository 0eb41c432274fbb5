// What `run` and `watch` learn of the files the job reads: each sample's
// open input files of the tree's members (probe/open_files.h), summed per
// path and role into the run's inputs table (sample/timeline.h InputSeen),
// and the data disk they sit on. Pure bookkeeping, no I/O; not thread-safe
// (one per recording).
//
// Bounded: past kMaxInputsKept paths a new one is counted in dropped()
// instead of kept (a folder of a million small files is still named by the
// ones kept: analyze/run/inputs.h groups them by directory).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "sample/input_format.h"
#include "sample/timeline.h"

namespace stallscope {

inline constexpr size_t kMaxInputsKept = 16384;

class InputTracker {
 public:
  // The files `pid` (in `role`: "worker" or "rank") held open at t.
  void Add(double t, const std::string& role, const std::vector<OpenInput>& files);

  // The device (major, minor) behind most of what the workers were caught
  // reading, else the ranks; nullopt when no file seen has one (remote
  // file systems, tmpfs).
  std::optional<std::pair<uint32_t, uint32_t>> DataDevice() const;

  std::vector<InputSeen> Inputs() const;
  uint64_t dropped() const { return dropped_; }
  size_t paths() const { return kept_.size(); }

 private:
  struct Kept {
    InputSeen seen;
    std::map<int32_t, double> pids;  // each reader, and the last sample that caught it
    uint32_t major = 0, minor = 0;
  };
  std::map<std::pair<std::string, std::string>, Kept> kept_;  // by (path, role)
  uint64_t dropped_ = 0;
};

}  // namespace stallscope
