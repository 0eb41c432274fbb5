// libFuzzer target: a capture's NVML answers (probe/gpu_capture.h) on any
// text; what parses prints and parses again to the same samples.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "probe/gpu_capture.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  stallscope::Result<stallscope::NvmlCapture> capture = stallscope::ParseNvmlCapture(text, "fuzz");
  if (!capture.ok()) return 0;
  std::string again = stallscope::NvmlCaptureToJson(*capture);
  stallscope::Result<stallscope::NvmlCapture> back = stallscope::ParseNvmlCapture(again, "again");
  if (!back.ok() || back->samples.size() != capture->samples.size()) std::abort();
  return 0;
}
