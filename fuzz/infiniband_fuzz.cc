// libFuzzer target: the RDMA port attribute parsers (state, rate, LID).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "probe/infiniband.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)stallscope::ParseIbPortState(text, "fuzz");
  (void)stallscope::ParseIbRate(text, "fuzz");
  (void)stallscope::ParseIbLid(text, "fuzz");
  return 0;
}
