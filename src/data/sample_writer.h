// What the packer hands to a shard: one sample (the files of SRC that share
// a key), already read, and the writers that lay samples into a shard file in
// one format. A writer appends to one ShardFile at a time and returns the
// index lines of what it wrote; it owns no file. Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "data/shard_file.h"
#include "sample/pack_index.h"

namespace stallscope {

struct SampleFile {
  std::string path;  // relative to SRC, with its extension
  uint64_t size = 0;
  int64_t mtime_sec = 0;
  std::unique_ptr<char[]> data;  // size bytes
  uint32_t crc = 0;              // CRC32C of data, for --verify
  // tfrecord only, built by the reading thread: framing + Example before the
  // data, Example rest + data CRC after it.
  std::string head;
  std::string tail;
};

struct Sample {
  std::string key;
  std::optional<int64_t> label;
  std::vector<SampleFile> files;
};

class SampleWriter {
 public:
  virtual ~SampleWriter() = default;
  // Starts a shard in `file` (kept until Finish).
  virtual Status Begin(ShardFile* file) = 0;
  // Upper bound of the bytes Write will add for a sample of these files
  // (name, size), so a shard never passes its size bound.
  virtual uint64_t BytesFor(const std::vector<std::pair<std::string, uint64_t>>& files) const = 0;
  // Bytes Finish adds (the tar end-of-archive blocks).
  virtual uint64_t TrailerBytes() const = 0;
  // Appends the sample; adds its index lines to `index`.
  virtual Status Write(const Sample& sample, std::vector<IndexEntry>& index) = 0;
  virtual Status Finish() = 0;
};

std::unique_ptr<SampleWriter> MakeSampleWriter(PackFormat format);

// The tfrecord head/tail of a file (done by reading threads, in parallel).
void PrepareTfRecordFile(SampleFile& file, std::optional<int64_t> label);

}  // namespace stallscope
