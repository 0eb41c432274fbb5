// libFuzzer target: ParseSmapsAreaAt at an address taken from the input's
// first bytes, and ParseThpMode, on any text.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "probe/smaps.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uint64_t address = 0x7f3c6a400064;
  if (size >= 8) {
    std::memcpy(&address, data, 8);
    data += 8;
    size -= 8;
  }
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)stallscope::ParseSmapsAreaAt(text, address, "smaps");
  (void)stallscope::ParseSmapsAreaAt(text, 0x7f3c6a400064, "smaps");
  (void)stallscope::ParseThpMode(text);
  return 0;
}
