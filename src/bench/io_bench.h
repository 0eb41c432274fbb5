// `stallscope bench io PATH`: the storage under PATH measured the way fio
// does: sequential 1 MiB reads with O_DIRECT, random 4 KiB reads,
// and the metadata operations of a folder of small files, each with its
// latency percentiles.
//
// RunIoBench owns everything it puts under PATH: the test file
// (kTestFileName, sized by PlanTestFile, written under a temporary name and
// renamed when complete, reused when already there, removed at the end unless
// `keep`) and the metadata directory (always removed). On error or when
// `stop` is set it removes what it made before returning. Where O_DIRECT is
// refused (EINVAL on open or on the first read: ramfs, some FUSE and network
// file systems) or `buffered` is asked for, it reads through the page cache
// after dropping the file's pages (posix_fadvise DONTNEED) before each
// phase, and says so in `read_mode` and `notes`. One call at a time per PATH.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bench/io_plan.h"
#include "bench/metadata_phase.h"
#include "bench/read_phase.h"
#include "core/status.h"
#include "sample/io_bench.h"

namespace stallscope {

inline constexpr const char* kTestFileName = "stallscope-bench-io.dat";
inline constexpr const char* kMetadataDirName = "stallscope-bench-io.meta";

struct IoBenchOptions {
  std::string path;  // a directory
  uint64_t size_bytes = kDefaultTestFileBytes;
  double runtime_seconds = kDefaultRuntimeSeconds;  // per read phase
  unsigned jobs = kDefaultJobs;
  unsigned iodepth = kDefaultIodepth;
  uint64_t metadata_files = kDefaultMetadataFiles;  // 0: no metadata phase
  bool keep = false;
  bool buffered = false;             // read through the page cache even where O_DIRECT works
  std::optional<ReadEngine> engine;  // nullopt: io_uring, pread where io_uring is refused
  const std::atomic<bool>* stop = nullptr;
  std::function<void(std::string_view)> progress;  // "writing the test file...", per phase
  // Called after each block of the test file is written and each metadata
  // call, from any thread: what keeps a caller's idle deadline
  // (core/child_call.h) from calling a slow but live mount dead. May be empty.
  std::function<void()> advance;
};

// Checks the options (InvalidArgument naming the flag), PATH (NotFound /
// InvalidArgument naming it), then runs. Unavailable when the free space is
// too little or `stop` was set; IoError and friends when IO fails.
Result<IoBenchResult> RunIoBench(const IoBenchOptions& options);

// PATH: an existing, writable directory. NotFound, InvalidArgument or
// PermissionDenied naming it; the CLI reports these as bad usage.
Status CheckIoBenchPath(const std::string& path);

// The options' own checks, apart so the CLI can report them as bad usage.
Status ValidateIoBenchOptions(const IoBenchOptions& options);

// The share of [0, bytes) of an open file that is in the page cache (mincore
// over a mapping, as vmtouch does).
Result<double> CachedFraction(int fd, uint64_t bytes);

}  // namespace stallscope
