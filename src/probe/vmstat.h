// /proc/vmstat -> VmStat (counters since boot; rates in sample/memory.h).
//
// ParseVmStat is pure; ReadVmStat reads the file under a Root.
// Stateless; thread-safe.
#pragma once

#include <string_view>

#include "core/file.h"
#include "core/status.h"
#include "sample/memory.h"

namespace stallscope {

// Lines are "name <unsigned number>". Per-zone counters of kernels before 4.8
// (pgscan_direct_normal, allocstall_dma32, ...) are summed into one field.
// A line that is not two fields, or a value that is not a number, is a
// ParseError naming `source` and the line; unknown names are skipped.
Result<VmStat> ParseVmStat(std::string_view text, std::string_view source);

Result<VmStat> ReadVmStat(const Root& root);

}  // namespace stallscope
