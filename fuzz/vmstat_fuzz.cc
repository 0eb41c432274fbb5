// libFuzzer target: ParseVmStat, and the rates between the parsed sample and
// an empty one (counters both ways).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "probe/vmstat.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  stallscope::Result<stallscope::VmStat> stat = stallscope::ParseVmStat(text, "vmstat");
  if (stat.ok()) {
    stallscope::VmStat zero;
    (void)stallscope::ComputeVmStatRates(zero, *stat, 1.0, 4096);
    (void)stallscope::ComputeVmStatRates(*stat, zero, 0.5, 65536);
  }
  return 0;
}
