// The dataset rules of the io layer: pure judgments over a DatasetCensus
// (data/census.h) — io.small_files, io.remote_fs, io.cold_cache.
//
// The census holds only numbers and names, so every rule is tested on
// synthetic censuses. The thresholds are named constants; their reasoning is
// in analyze/catalog.cc. Stateless; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sample/dataset.h"
#include "sample/finding.h"

namespace stallscope {

// A file smaller than one sequential read of the seed's fio line (bs=1M) is
// read in one small request that pays a whole open + seek.
inline constexpr uint64_t kSmallFileBytes = 1ull << 20;
inline constexpr uint64_t kSmallFilesMinCount = 10000;
inline constexpr double kSmallFilesMinShare = 0.5;
inline constexpr uint64_t kSmallFilesCriticalCount = 100000;
// The seed's floor for storage fit to feed training (2.3): 5000 random 4 KiB
// reads per second, 500 MB/s sequential.
inline constexpr double kFloorRandomIops = 5000;
inline constexpr double kFloorSequentialBytesPerSecond = 500e6;
inline constexpr uint64_t kRemoteWarningFiles = 1000;
inline constexpr double kColdResidentFraction = 0.20;
inline constexpr double kColdMinSecondsAtFloor = 1.0;
// A dataset up to this share of RAM stays cached after epoch 1.
inline constexpr double kCacheFitsMemoryFraction = 0.5;

struct DatasetContext {
  std::optional<uint64_t> memory_total_bytes;  // MemTotal, or a cgroup limit
};

// `path` as the user typed it goes into the commands of `next`.
FindingsWithNotes CheckDataset(const DatasetCensus& census, const DatasetContext& context);

// "abc" stays; anything with shell metacharacters is single-quoted.
std::string ShellQuote(const std::string& text);

}  // namespace stallscope
