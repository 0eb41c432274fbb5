// libFuzzer target: ParseMemInfo must return a value or a ParseError, never crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "probe/meminfo.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  stallscope::Result<stallscope::MemInfo> info = stallscope::ParseMemInfo(text, "meminfo");
  if (info.ok()) {
    (void)info->swap_used_bytes();
    (void)stallscope::EffectiveAvailableBytes(*info, stallscope::CgroupMemory{});
  }
  return 0;
}
