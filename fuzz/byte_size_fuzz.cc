// libFuzzer target: ParseByteSize, the parser of size flags (--size 20G).
// A parsed size must print back to a number that parses to itself.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "core/byte_size.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::optional<uint64_t> bytes = stallscope::ParseByteSize(text);
  if (bytes) {
    std::optional<uint64_t> again = stallscope::ParseByteSize(std::to_string(*bytes));
    if (!again || *again != *bytes) std::abort();
  }
  return 0;
}
