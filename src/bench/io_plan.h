// The sizing rule of `bench io`'s test file, and the arithmetic of who reads
// where. Pure: facts in, a plan out; thread-safe.
//
// The test file takes at most half the free space of the file system it is
// on (a bench that fills the disk under a training job is worse than no
// bench), never less than kMinTestFileBytes (below that the reads measure
// the device's cache, not its media), and is reused when one is already
// there: an existing file at least as large as asked for costs no space, so
// the free-space rule only limits what would be written.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "sample/io_bench.h"

namespace stallscope {

inline constexpr uint64_t kMiB = uint64_t{1} << 20;
inline constexpr uint64_t kGiB = uint64_t{1} << 30;
inline constexpr uint32_t kSequentialBlockBytes = 1 << 20;  // as fio --rw=read --bs=1M
inline constexpr uint32_t kRandomBlockBytes = 4096;         // as fio --rw=randread --bs=4k
inline constexpr uint64_t kMinTestFileBytes = 16 * kMiB;
// The usual fio storage check: --size=20G --numjobs=4 --runtime=30 (--iodepth
// left at fio's default, 1: four DataLoader workers each waiting on its read).
inline constexpr uint64_t kDefaultTestFileBytes = 20 * kGiB;
inline constexpr unsigned kDefaultJobs = 4;
inline constexpr unsigned kDefaultIodepth = 1;
inline constexpr double kDefaultRuntimeSeconds = 30;

// requested: --size; free_bytes: statfs f_bavail x f_frsize of the file
// system; existing_bytes: the size of a test file already there (0: none);
// jobs: each sequential job needs a slice of at least one 1 MiB block.
// InvalidArgument when `requested` is below the minimum; Unavailable (the
// refusal, naming `where` and the figures) when half the free space is too
// little.
Result<TestFilePlan> PlanTestFile(uint64_t requested, uint64_t free_bytes, uint64_t existing_bytes,
                                  unsigned jobs, const std::string& where);

// The sequential slice of job `job` of `jobs` over a file of `file_bytes`:
// equal, 1 MiB-aligned, disjoint (fio's --offset_increment=slice --size=slice).
struct Slice {
  uint64_t offset = 0;
  uint64_t bytes = 0;
};
Slice SequentialSlice(uint64_t file_bytes, unsigned jobs, unsigned job);

// A uniformly random 4 KiB-aligned offset in [0, file_bytes) from a 64-bit
// random number (Lemire's multiply-shift, no modulo bias worth the name).
uint64_t RandomBlockOffset(uint64_t random64, uint64_t file_bytes);

// splitmix64: the per-job random stream of the random-read phase.
uint64_t NextRandom(uint64_t& state);

}  // namespace stallscope
