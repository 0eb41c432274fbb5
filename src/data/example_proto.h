// tf.train.Example, encoded and decoded by hand (no protobuf dependency).
//
// The message is small and fixed:
//   Example { Features features = 1; }
//   Features { map<string, Feature> feature = 1; }   // entry: key = 1, value = 2
//   Feature { oneof kind { BytesList bytes_list = 1; FloatList float_list = 2;
//                          Int64List int64_list = 3; } }
//   BytesList { repeated bytes value = 1; }  FloatList { repeated float value = 1 [packed]; }
//   Int64List { repeated int64 value = 1 [packed]; }
// The packer writes features in byte order of their names (as protobuf's
// deterministic serialization does): "data" (bytes), "key" (bytes), "label"
// (int64, only with class folders). The file's bytes sit in the middle of the
// message, so the encoder returns what goes before and after them and the
// caller never copies the payload. The decoder reads any Example (unknown
// fields skipped, packed or unpacked numbers) and returns views into its
// input. Stateless; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace stallscope {

// The serialized Example is prefix + data + suffix.
struct ExampleFraming {
  std::string prefix;
  std::string suffix;
  uint64_t size(uint64_t data_size) const { return prefix.size() + data_size + suffix.size(); }
};
ExampleFraming EncodeExampleFraming(std::string_view key, uint64_t data_size,
                                    std::optional<int64_t> label);

struct ParsedFeature {
  enum class Kind { kNone, kBytes, kFloat, kInt64 };
  Kind kind = Kind::kNone;
  std::vector<std::string_view> bytes;
  std::vector<float> floats;
  std::vector<int64_t> ints;
};

struct ParsedExample {
  std::vector<std::pair<std::string_view, ParsedFeature>> features;
  // The feature of that name (the last one, as protobuf map parsing keeps), or null.
  const ParsedFeature* Find(std::string_view name) const;
};

// Views point into `message`, which must outlive the result. `source` names
// the record in error messages ("shard-00000.tfrecord@1024").
Result<ParsedExample> ParseExample(std::string_view message, std::string_view source);

// The packer's three features, checked: key and data one bytes value each,
// label one int64 when present.
struct PackedRecord {
  std::string_view key;
  std::string_view data;
  std::optional<int64_t> label;
};
Result<PackedRecord> ParsePackedRecord(std::string_view message, std::string_view source);

}  // namespace stallscope
