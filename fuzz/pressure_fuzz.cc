// libFuzzer target: ParsePressure must return a value or a ParseError.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "probe/pressure.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)stallscope::ParsePressure(text, "pressure");
  return 0;
}
