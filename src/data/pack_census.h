// The census of a source folder for `pack`: every file under SRC (names
// starting with '.' skipped, and the output folder when it sits inside SRC),
// grouped into samples by key (docs/pack-format.md), in byte order of keys,
// with class labels when SRC is laid out as class folders. What cannot be
// packed (a FIFO, a socket, a dangling link, a folder that cannot be opened)
// is kept with the reason, so the packer reports it by name. SRC is read
// by the parallel walk `dataset` uses (data/walk.h); the census is sorted
// afterwards, so it does not depend on the walk's order. Reads the file
// system; thread-compatible.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace stallscope {

struct SourceFile {
  std::string path;  // relative to SRC
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  std::string problem;  // non-empty: why it cannot be packed
};

struct SourceSample {
  std::string key;
  std::optional<int64_t> label;
  std::vector<SourceFile> files;  // in byte order of extension
  uint64_t bytes = 0;
};

struct SourceCensus {
  std::vector<SourceSample> samples;
  std::vector<std::string> classes;  // empty: no class folders
  uint64_t files = 0;
  uint64_t bytes = 0;
  uint64_t hidden_skipped = 0;
};

struct SourceCensusOptions {
  std::string src;
  // A folder not to descend into (the output, when inside SRC); st_dev/ino.
  std::optional<std::pair<dev_t, ino_t>> exclude;
};

Result<SourceCensus> TakeSourceCensus(const SourceCensusOptions& options);

// Fisher-Yates over the samples with our own generator (splitmix64), so a
// seed gives the same order with every compiler and library.
void ShuffleSamples(std::vector<SourceSample>& samples, uint64_t seed);

}  // namespace stallscope
