// The verdict of `bench io`: is this storage fast enough to feed training?
// Pure: a measured StorageSpeed in, findings out. Thread-safe.
//
// io.storage_slow (catalog.cc) fires, critical, when sequential 1 MiB reads
// stay under the sequential threshold or random 4 KiB reads under the IOPS
// threshold: storage under 500 MB/s sequential or 5000 random 4K IOPS is
// most likely unfit to serve training data directly (copy the data to local
// disk or pack it into large files first).
#pragma once

#include <string>
#include <vector>

#include "sample/finding.h"
#include "sample/io_bench.h"

namespace stallscope {

inline constexpr double kStorageSlowSequentialBytesPerSecond = 500e6;  // rule of thumb: 500 MB/s
inline constexpr double kStorageSlowRandomIops = 5000;                 // rule of thumb: 5000 IOPS

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
