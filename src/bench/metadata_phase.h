// The metadata phase of `bench io`: what a data set of small files costs
// before a single byte is read. `jobs` threads create `files` small files in
// one directory (create + write + close), then open+close each, stat each,
// list the directory, and unlink them all; each operation's latency goes
// into a histogram. On a local disk open and stat hit the kernel's caches
// (microseconds); on NFS, Lustre or GPFS each is a round trip to a server,
// so a loader that lists and opens them every epoch crawls. The directory is
// made by the phase and removed by it, also on error. Thread-safe: each call
// owns its threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "sample/io_bench.h"

namespace stallscope {

inline constexpr uint64_t kDefaultMetadataFiles = 4096;

struct MetadataSpec {
  std::string dir;  // created by the phase; must not exist, or hold only our files
  uint64_t files = kDefaultMetadataFiles;
  unsigned jobs = 1;
  const std::atomic<bool>* stop = nullptr;
  // Called after each call that answered, from the phase's threads (a
  // caller's idle deadline: core/child_call.h). May be empty.
  std::function<void()> advance;
};

Result<MetadataResult> RunMetadataPhase(const MetadataSpec& spec);

// The name of file `index` made by job `job`: "f<job>-<index>".
std::string MetadataFileName(unsigned job, uint64_t index);

}  // namespace stallscope
