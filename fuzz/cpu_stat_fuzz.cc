// libFuzzer target: ParseCpuStat on two halves of the input (split at the
// first NUL), then ComputeCpuUsage between them in both directions.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "probe/cpu_stat.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  size_t split = text.find('\0');
  std::string_view first = text.substr(0, split);
  std::string_view second = split == std::string_view::npos ? text : text.substr(split + 1);
  auto a = stallscope::ParseCpuStat(first, "stat");
  auto b = stallscope::ParseCpuStat(second, "stat");
  if (a.ok() && b.ok()) {
    (void)stallscope::ComputeCpuUsage(*a, *b);
    (void)stallscope::ComputeCpuUsage(*b, *a);
  }
  return 0;
}
