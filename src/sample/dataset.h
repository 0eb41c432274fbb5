// A dataset folder's census as plain data: files, bytes and a size
// histogram, the file system and device, page-cache residency and open/stat
// latency. data/census.h takes it; analyze/host/dataset_rules.h judges it.
// Thread-compatible.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace stallscope {

// The size histogram: six buckets, each 16x the one before, so a user reads
// "<4 KiB", "4-64 KiB", ... at a glance.
inline constexpr size_t kSizeBuckets = 6;
// Upper bounds (exclusive) of the first five buckets; the last is open.
inline constexpr std::array<uint64_t, kSizeBuckets - 1> kSizeBucketUpper = {
    4ull << 10, 64ull << 10, 1ull << 20, 16ull << 20, 256ull << 20};
// "<4K", "4K-64K", "64K-1M", "1M-16M", "16M-256M", ">=256M".
std::string SizeBucketLabel(size_t bucket);
size_t SizeBucketOf(uint64_t size_bytes);

struct SizeBucket {
  uint64_t files = 0;
  uint64_t bytes = 0;
};

// What mincore said about a sample of the files (all of them when few).
struct ResidencyCensus {
  bool sampled = false;  // false: every file was looked at
  uint64_t files_checked = 0;
  uint64_t files_failed = 0;  // could not be opened or mapped
  uint64_t bytes_checked = 0;
  uint64_t resident_bytes = 0;
  double resident_fraction = 0;  // resident_bytes / bytes_checked; 0 when nothing checked
  std::string first_error;       // of the files that failed, the first
};

// Open and stat latency over a sample of the files, measured one at a time
// after the walk (so directory entries are cached: on NFS, stat may be served
// from the attribute cache, while open revalidates with the server).
struct MetadataLatency {
  uint64_t files = 0;
  double stat_p50_us = 0;
  double stat_p99_us = 0;
  double open_p50_us = 0;  // open + close
  double open_p99_us = 0;
  // What a loader pays for one file: open, read it (up to 1 MiB), close;
  // 0 where not measured (a census of an older version).
  double fetch_p50_us = 0;
  double fetch_p99_us = 0;
};

struct DatasetCensus {
  std::string path;           // as asked
  std::string resolved_path;  // realpath: what was walked
  int threads = 0;
  double walk_seconds = 0;

  uint64_t files = 0;          // regular files
  uint64_t bytes = 0;          // their apparent sizes (st_size), as du --apparent-size -b
  uint64_t directories = 0;    // below the root
  uint64_t symlinks = 0;       // not followed
  uint64_t other_entries = 0;  // sockets, fifos, devices
  uint64_t empty_files = 0;
  std::array<SizeBucket, kSizeBuckets> histogram{};
  int max_depth = 0;         // of any entry; the root's own entries are depth 1
  std::string deepest_path;  // one entry at max_depth
  uint64_t largest_file_bytes = 0;

  uint64_t unreadable = 0;  // directories that could not be read, entries not stat'ed
  std::vector<std::string> unreadable_examples;  // "path: reason", the first few

  // Where it lives.
  std::string fs_type;      // mountinfo's ("nfs4", "fuse.sshfs"), else statfs's name
  std::string statfs_name;  // from statfs f_type ("nfs", "ext4"); "" when unknown
  std::optional<int64_t> statfs_type;
  std::string mount_point;
  std::string source;         // "/dev/nvme0n1p2", "server:/export"
  std::string mount_options;  // mountinfo's per-mount then per-superblock options, joined by ","
  std::string device;         // "nvme0n1p2"; "" when none (nfs, tmpfs, overlay)
  std::string disk;           // "nvme0n1"
  std::vector<std::string> backing_disks;  // under dm/md
  bool remote = false;

  ResidencyCensus residency;
  std::optional<MetadataLatency> latency;  // absent when there are no files

  std::vector<std::string> notes;  // degradations: what could not be looked at

  // Files under 1 MiB: the first three buckets.
  uint64_t SmallFiles() const;
  uint64_t SmallBytes() const;
};

}  // namespace stallscope
