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

// A file smaller than one 1 MiB sequential read (as `fio --bs=1M` reads) is
// read in one small request that pays a whole open + seek.
inline constexpr uint64_t kSmallFileBytes = 1ull << 20;
inline constexpr uint64_t kSmallFilesMinCount = 10000;
inline constexpr double kSmallFilesMinShare = 0.5;
inline constexpr uint64_t kSmallFilesCriticalCount = 100000;
// The rule-of-thumb floor for storage fit to feed training: 5000 random 4 KiB
// reads per second, 500 MB/s sequential (as storage_rules.h).
inline constexpr double kFloorRandomIops = 5000;
inline constexpr double kFloorSequentialBytesPerSecond = 500e6;
inline constexpr uint64_t kRemoteWarningFiles = 1000;
inline constexpr double kColdResidentFraction = 0.20;
inline constexpr double kColdMinSecondsAtFloor = 1.0;
// io.remote_fs's per-epoch cost: a DataLoader's workers each wait one round
// trip per file, in parallel; 8 is a common num_workers (the user's own count
// goes in DatasetContext). A packed shard is 256 MiB (stallscope pack's size).
inline constexpr int kAssumedLoaderWorkers = 8;
inline constexpr uint64_t kPackShardBytes = 256ull << 20;
// A dataset up to this share of RAM stays cached after epoch 1.
inline constexpr double kCacheFitsMemoryFraction = 0.5;

struct DatasetContext {
  std::optional<uint64_t> memory_total_bytes;  // MemTotal, or a cgroup limit
  std::optional<int> loader_workers;           // else kAssumedLoaderWorkers
};

// What a loader pays per epoch on a remote mount, from the open latency of a
// sample and the file count and bytes of the walk.
struct RemoteEpochCost {
  int workers = 0;
  double remote_seconds = 0;  // files x open p50 / workers
  double local_seconds = 0;   // files / kFloorRandomIops (a local disk at the floor)
  uint64_t shards = 0;        // 256 MiB shards after packing
  double packed_seconds = 0;  // shards x open p50 / workers
  double saved_seconds = 0;   // remote - packed
};
RemoteEpochCost RemoteCostPerEpoch(uint64_t files, uint64_t bytes, double open_p50_us, int workers);

// `path` as the user typed it goes into the commands of `next`.
FindingsWithNotes CheckDataset(const DatasetCensus& census, const DatasetContext& context);

// "abc" stays; anything with shell metacharacters is single-quoted.
std::string ShellQuote(const std::string& text);

}  // namespace stallscope
