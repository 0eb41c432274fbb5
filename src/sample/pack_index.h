// The index (.idx) of a shard and the manifest.json of a packed folder,
// schema stallscope.pack/1 (docs/pack-format.md): how they are written and
// parsed, and what a pack did (its summary). Pure functions over text;
// thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace stallscope {

enum class PackFormat { kTfRecord, kWds };
std::string_view PackFormatName(PackFormat f);         // "tfrecord" / "wds"
std::string_view ShardExtension(PackFormat f);         // "tfrecord" / "tar"
std::string ShardName(PackFormat f, uint64_t number);  // "shard-00012.tar"

// One line of an index: a framed record (tfrecord) or a sample's run of tar
// members (wds) at [offset, offset + length) of the shard.
struct IndexEntry {
  uint64_t offset = 0;
  uint64_t length = 0;
  bool operator==(const IndexEntry&) const = default;
};

std::string FormatIndexLine(const IndexEntry& e);  // "OFFSET LENGTH\n"
// Lines "OFFSET LENGTH"; errors name `source` and the line. Entries must not
// overlap and must be in increasing offset order.
Result<std::vector<IndexEntry>> ParseIndex(std::string_view text, std::string_view source);

struct ShardInfo {
  std::string name;
  std::string index;
  uint64_t samples = 0;  // samples (keys) in the shard
  uint64_t records = 0;  // index lines: records (tfrecord, one per file) or samples (wds)
  uint64_t bytes = 0;
};

struct Manifest {
  PackFormat format = PackFormat::kTfRecord;
  uint64_t samples = 0;
  uint64_t records = 0;
  std::vector<std::string> classes;
  bool shuffle = false;
  uint64_t seed = 0;
  std::vector<ShardInfo> shards;
};

inline constexpr std::string_view kManifestName = "manifest.json";
inline constexpr std::string_view kPackSchema = "stallscope.pack/1";

std::string ManifestToJson(const Manifest& m);
// Errors name `source`; shard and index names must be plain file names.
Result<Manifest> ParseManifest(std::string_view text, std::string_view source);

// What a pack did (data/packer.h), as `pack` prints it (render/pack.h).
struct SkippedFile {
  std::string path;  // relative to SRC
  std::string reason;
};

struct PackSummary {
  Manifest manifest;
  uint64_t files = 0;      // packed
  uint64_t bytes_in = 0;   // of the packed files
  uint64_t bytes_out = 0;  // of the shards
  uint64_t hidden_skipped = 0;
  std::vector<SkippedFile> skipped;  // with --skip-unreadable
  uint64_t samples_skipped = 0;
  bool verified = false;
  double seconds = 0;
};

}  // namespace stallscope
