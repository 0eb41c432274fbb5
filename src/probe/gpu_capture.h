// NVML's answers in a capture: the GpuObservation of each GPU sample a
// capture took (the first one starts the snapshot's interval, the second
// ends it), as the JSON file `stallscope/nvml.json` under the capture's root
// (schema stallscope.nvml/1, docs/captures.md). GpuProbe writes it through
// the capture's ReadLog and, under a root that holds it, reads it back
// instead of loading NVML. Pure; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "sample/gpu.h"

namespace stallscope {

inline constexpr const char* kNvmlCapturePath = "/stallscope/nvml.json";
inline constexpr const char* kNvmlCaptureSchema = "stallscope.nvml/1";

// What the probe saw: whether NVML was there (and why not) and each sample.
struct NvmlCapture {
  bool available = false;
  std::string absent_reason;
  std::vector<GpuObservation> samples;
};

std::string NvmlCaptureToJson(const NvmlCapture& capture);

// ParseError naming `source` when the text is not such a file; fields it
// does not know are ignored, fields it lacks stay empty.
Result<NvmlCapture> ParseNvmlCapture(std::string_view text, std::string_view source);

}  // namespace stallscope
