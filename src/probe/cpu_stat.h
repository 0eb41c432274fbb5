// /proc/stat -> CpuStat (clock ticks since boot; percentages in sample/cpu.h).
//
// ParseCpuStat is pure; ReadCpuStat reads the file under a Root.
// Stateless; thread-safe.
#pragma once

#include <string_view>

#include "core/file.h"
#include "core/status.h"
#include "sample/cpu.h"

namespace stallscope {

// Reads the "cpu" and "cpuN" lines (4 to 10 columns; older kernels print
// fewer), ctxt, processes, procs_running, procs_blocked and btime; other
// lines (intr, softirq, page, swap of 2.4) are skipped. A missing "cpu" line,
// a CPU line with fewer than 4 numbers, or a value that is not a number is a
// ParseError naming `source` and the line.
Result<CpuStat> ParseCpuStat(std::string_view text, std::string_view source);

Result<CpuStat> ReadCpuStat(const Root& root);

// USER_HZ of the running kernel, from sysconf(_SC_CLK_TCK): the unit of
// every *_ticks field. Falls back to 100 only if sysconf itself fails.
long ClockTicksPerSecond();

}  // namespace stallscope
