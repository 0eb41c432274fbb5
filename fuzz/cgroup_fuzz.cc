// libFuzzer target: every cgroup parser on the same bytes, and the container
// judgement on whatever /proc/self/cgroup parse survives.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "probe/cgroup.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  stallscope::ContainerHints hints;
  if (auto entries = stallscope::ParseProcCgroup(text, "cgroup"); entries.ok()) {
    hints.cgroups = std::move(*entries);
  }
  (void)stallscope::ParseCgroupCounters(text, "memory.stat");
  (void)stallscope::ParseCgroupLimit(text, "memory.max");
  hints.container_variable = stallscope::FindContainerVariable(text);
  (void)stallscope::ClassifyContainer(hints);
  return 0;
}
