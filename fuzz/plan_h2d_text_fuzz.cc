// libFuzzer target: the text parsers of `plan memory` and `bench h2d`:
// ParseParamCount (--params 70B), ParseNodeList (sysfs has_memory, cpulist)
// and CudaBusIdToSysfs (cudaDeviceGetPCIBusId's text). Each input goes to all
// three; results must be sane (positive finite counts, sorted unique nodes,
// sysfs addresses of the form dddd:bb:dd.f).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "bench/cuda_h2d.h"
#include "plan/memory_plan.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (std::optional<double> params = stallscope::ParseParamCount(text)) {
    if (!std::isfinite(*params) || *params <= 0) std::abort();
  }
  if (std::optional<std::vector<int>> nodes = stallscope::ParseNodeList(text)) {
    for (size_t i = 1; i < nodes->size(); ++i)
      if ((*nodes)[i - 1] >= (*nodes)[i]) std::abort();
  }
  if (std::optional<std::string> address = stallscope::CudaBusIdToSysfs(text)) {
    if (address->size() != 12 || (*address)[4] != ':' || (*address)[7] != ':' ||
        (*address)[10] != '.')
      std::abort();
  }
  return 0;
}
