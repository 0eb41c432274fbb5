// The memory area of this process that holds one address, as
// /proc/self/smaps lists it, and the transparent huge page mode of the
// kernel (/sys/kernel/mm/transparent_hugepage/enabled). `bench io` reads
// both to say whether the huge pages its read buffers asked for were
// granted: a 1 MiB O_DIRECT read into scattered 4 KiB pages can go out as
// two device requests, so a figure measured without them is not the same
// measurement (docs/bench-io.md). Parsing is pure; reading takes the files
// named. Thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace stallscope {

struct SmapsArea {
  uint64_t start = 0;  // [start, end)
  uint64_t end = 0;
  uint64_t rss_bytes = 0;              // Rss
  uint64_t anon_huge_pages_bytes = 0;  // AnonHugePages: transparent huge pages
};

// The area holding `address` in smaps text; NotFound when no area does, an
// InvalidArgument naming `source` and the line when a header or a size of
// that area cannot be read.
Result<SmapsArea> ParseSmapsAreaAt(std::string_view text, uint64_t address,
                                   std::string_view source);
// The same from /proc/self/smaps.
Result<SmapsArea> ReadOwnSmapsAreaAt(uint64_t address);

// "always", "madvise" or "never": the bracketed word of the THP `enabled`
// file; "" when the text has none.
std::string ParseThpMode(std::string_view text);
// The mode from /sys/kernel/mm/transparent_hugepage/enabled; "" when the
// kernel has no transparent huge pages (or the file cannot be read).
std::string ReadThpMode();

}  // namespace stallscope
