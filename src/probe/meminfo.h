// /proc/meminfo -> MemInfo (bytes).
//
// ParseMemInfo is pure (text in, struct out) so tests and the fuzzer drive
// it without a file system; ReadMemInfo reads the file under a Root.
// Stateless; thread-safe.
#pragma once

#include <string_view>

#include "core/file.h"
#include "core/status.h"
#include "sample/memory.h"

namespace stallscope {

// Lines are "Name:   <number> kB", except the HugePages_* counts which have
// no unit. Unknown names are skipped (kernels keep adding them); a known
// name with a malformed value, a line without ':' or a missing MemTotal is a
// ParseError naming `source` and the line.
Result<MemInfo> ParseMemInfo(std::string_view text, std::string_view source);

Result<MemInfo> ReadMemInfo(const Root& root);

}  // namespace stallscope
