// Verifying a packed dataset against its manifest and index (pack_verify.cc):
// what `pack` checks after writing and `pack --verify` checks on its own.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace stallscope {

// What --verify checks of a packed folder, also usable on its own: every
// shard of the manifest against its index (tfrecord: framing and both CRCs
// of every record, a well-formed Example; wds: tar headers, checksums, sizes,
// one key per sample, the end-of-archive blocks), the counts of the manifest,
// and nothing in a shard outside its index.
struct VerifiedEntry {
  std::string name;  // tfrecord: the key feature; wds: the member name
  uint64_t size = 0;
  uint32_t crc = 0;  // CRC32C of the bytes
};
struct VerifySummary {
  uint64_t shards = 0, records = 0, samples = 0, bytes = 0;
  std::vector<VerifiedEntry> entries;  // in shard order, when asked for
};
Result<VerifySummary> VerifyPack(const std::string& out, bool keep_entries = false);

}  // namespace stallscope
