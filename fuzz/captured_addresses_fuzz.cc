// libFuzzer target: a capture's interface addresses (probe/captured_addresses.h)
// on any text; what parses prints and parses again to the same addresses.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "probe/captured_addresses.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  stallscope::Result<stallscope::InterfaceAddresses> addresses =
      stallscope::ParseCapturedAddresses(text, "fuzz");
  if (!addresses.ok()) return 0;
  stallscope::Result<stallscope::InterfaceAddresses> back =
      stallscope::ParseCapturedAddresses(stallscope::AddressesToCaptureJson(*addresses), "again");
  if (!back.ok() || back->size() != addresses->size()) std::abort();
  return 0;
}
