// Sizes given on the command line: "20G", "512M", "4k", "1.5GiB", "4096".
//
// Suffixes are binary, as fio reads them by default (kb_base=1024): K, M, G,
// T, P with an optional "i" and/or "B" ("20G" = "20GiB" = "20GB" = 20 x 2^30),
// case-insensitive; no suffix means bytes. So a size copied from a fio
// command line means the same bytes here. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace stallscope {

// nullopt for anything else: empty, negative, a unit alone, trailing text,
// more than 2^64-1 bytes, fractions of a byte without a unit ("1.5").
std::optional<uint64_t> ParseByteSize(std::string_view text);

}  // namespace stallscope
