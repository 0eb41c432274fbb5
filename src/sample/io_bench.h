// What `bench io` measured, as plain data: the test file's plan, each timed
// read phase (bytes, IOs, latency histogram), the metadata phase's
// operations, and the whole run (IoBenchResult). bench/io_bench.h
// (RunIoBench, with bench/io_plan.h, bench/read_phase.h and
// bench/metadata_phase.h) builds it; render/bench_io.h renders it and the
// CLI judges it with analyze/host/storage_rules.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sample/latency_histogram.h"

namespace stallscope {

struct TestFilePlan {
  uint64_t bytes = 0;       // the size the bench reads over (MiB multiple)
  uint64_t write_from = 0;  // keep bytes below this, write [write_from, bytes)
  bool reuse = false;       // an existing file covers `bytes`: nothing to write
  bool capped = false;      // smaller than asked because of the free space
};

enum class ReadEngine { kIoUring, kPsync };

struct ReadPhaseResult {
  uint32_t block_bytes = 0;
  uint64_t ios = 0;  // completed within the runtime
  uint64_t bytes = 0;
  double seconds = 0;        // the longest job's measured time, as fio's group_reporting
  LatencyHistogram latency;  // submit to completion, nanoseconds
  // The read buffers of all jobs, and how much of them the kernel backed
  // with 2 MiB transparent huge pages (asked for blocks above 4 KiB).
  uint64_t buffer_bytes = 0;
  uint64_t buffer_huge_bytes = 0;

  double bytes_per_second() const { return seconds > 0 ? bytes / seconds : 0; }
  double iops() const { return seconds > 0 ? ios / seconds : 0; }
};

std::string_view ReadEngineName(ReadEngine engine);  // "io_uring", "psync"

inline constexpr uint32_t kMetadataFileBytes = 4096;

struct MetadataOp {
  std::string op;            // "create", "open", "stat", "readdir", "unlink"
  uint64_t ops = 0;          // files (for readdir: entries listed)
  double seconds = 0;        // wall time of the operation's pass
  LatencyHistogram latency;  // per call; for readdir per listing of the whole directory
  double per_second() const { return seconds > 0 ? ops / seconds : 0; }
};

struct MetadataResult {
  uint64_t files = 0;
  uint32_t file_bytes = kMetadataFileBytes;
  std::vector<MetadataOp> ops;
};

struct IoBenchResult {
  std::string path;         // resolved
  std::string file;         // the test file
  std::string fs_type;      // "ext4", "nfs4", "ramfs"; "" when unknown
  std::string device;       // "vda", "nvme0n1p2"; "" for file systems without one
  bool remote = false;      // a network or cluster file system
  uint64_t free_bytes = 0;  // before the test file was written
  TestFilePlan plan;
  uint64_t requested_bytes = 0;
  bool file_kept = false;
  double write_seconds = 0;  // making the file (0 when reused)
  bool direct = true;        // O_DIRECT reads
  std::string read_mode;     // "O_DIRECT", or why buffered
  // Buffered only: the share of the file still in the page cache after the
  // drop before each phase (mincore); 1.0 on ramfs, where nothing can drop.
  std::optional<double> cached_after_drop_sequential;
  std::optional<double> cached_after_drop_random;
  ReadEngine engine = ReadEngine::kIoUring;
  std::string thp_mode;  // transparent huge pages: "always", "madvise", "never"; "" unknown
  unsigned jobs = 0;
  unsigned iodepth = 0;
  double runtime_seconds = 0;
  ReadPhaseResult sequential;
  ReadPhaseResult random;
  std::optional<MetadataResult> metadata;
  double total_seconds = 0;
  std::vector<std::string> notes;
};

}  // namespace stallscope
