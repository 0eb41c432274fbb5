// The verdict of `bench io`: is this storage fast enough to feed training?
// Pure: a measured StorageSpeed in, findings out. Thread-safe.
//
// io.storage_slow (catalog.cc) fires, critical, when sequential 1 MiB reads
// stay under the sequential threshold or random 4 KiB reads under the IOPS
// threshold: seed 2.3, "if sequential reads are below 500 MB/s or random 4K
// read IOPS below 5000, this storage is most likely unfit as a direct source
// of training data".
#pragma once

#include <string>
#include <vector>

#include "sample/finding.h"
#include "sample/io_bench.h"

namespace stallscope {

inline constexpr double kStorageSlowSequentialBytesPerSecond = 500e6;  // seed 2.3: 500 MB/s
inline constexpr double kStorageSlowRandomIops = 5000;                 // seed 2.3: 5000 IOPS

struct StorageThresholds {
  double sequential_bytes_per_second = kStorageSlowSequentialBytesPerSecond;
  double random_iops = kStorageSlowRandomIops;
};

// What `bench io` measured, in the rule's terms.
struct StorageSpeed {
  std::string path;
  std::string fs_type;  // "" when unknown
  bool remote = false;
  bool direct = true;  // false: buffered reads (the page cache may flatter them)
  unsigned jobs = 0;
  unsigned iodepth = 0;
  double sequential_bytes_per_second = 0;
  double sequential_p99_ms = 0;
  double random_iops = 0;
  double random_p99_ms = 0;
};

FindingsWithNotes CheckStorageSpeed(const StorageSpeed& speed, const StorageThresholds& thresholds);

// The figures the verdict rule judges, from a `bench io` result.
StorageSpeed SpeedOf(const IoBenchResult& result);

}  // namespace stallscope
