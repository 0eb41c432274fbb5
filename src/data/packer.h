// `stallscope pack`: small files of a folder into TFRecord or WebDataset
// shards with an index each and a manifest (docs/pack-format.md).
//
// Pack() takes the census of SRC, orders the samples (byte order of keys, or
// a seeded shuffle), reads files on `jobs` threads ahead of one writer that
// lays them into shards in order, so the output is the same for the same
// input and seed whatever the thread timing. Reading is bounded to a window
// of bytes ahead of the writer. A shard is complete before it gets its name;
// on an error every file this run wrote is removed and the error names the
// file (the source file, or the shard that could not be written). The
// progress callback runs on the calling thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "sample/pack_index.h"

namespace stallscope {

inline constexpr uint64_t kDefaultShardSize = uint64_t{256} << 20;

struct PackProgress {
  uint64_t samples_done = 0, samples_total = 0;
  uint64_t bytes_done = 0, bytes_total = 0;
};

// Reading threads by default: two per CPU (reads wait on storage), at most 8.
// More threads than that on a warm cache only fight over the CPU's caches:
// on 2 CPUs, 8 threads cost twice the system time of 4.
int DefaultPackJobs();

struct PackOptions {
  std::string src;
  std::string out;
  PackFormat format = PackFormat::kTfRecord;
  uint64_t shard_size = kDefaultShardSize;
  int jobs = DefaultPackJobs();
  bool shuffle = false;
  uint64_t seed = 0;
  bool force = false;            // replace the shards of an earlier pack in OUT
  bool skip_unreadable = false;  // go on past files that cannot be read, count them
  bool verify = false;           // re-read every record after packing
  std::function<void(const PackProgress&)> progress;
};

Result<PackSummary> Pack(const PackOptions& options);

// One source file read as the packer reads it: refused (naming the file) when
// it is not a regular file or when its size or mtime differ from the census
// or change while it is read.
struct SourceFile;
struct SampleFile;
Result<SampleFile> ReadPackSource(const std::string& src, const SourceFile& census);

}  // namespace stallscope
