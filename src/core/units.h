// Human units for text output: bytes as "3.2 GiB", rates as "48.0 MB/s",
// fractions as "12.5%". Binary prefixes for memory (as free -h), decimal for
// throughput (as iostat and fio). Stateless; thread-safe.
#pragma once

#include <cstdint>
#include <string>

namespace stallscope {

std::string FormatBytes(uint64_t bytes);          // 1536 -> "1.5 KiB"
std::string FormatRate(double bytes_per_second);  // 48e6 -> "48.0 MB/s"
std::string FormatPercent(double fraction);       // 0.125 -> "12.5%"

}  // namespace stallscope
