// Rendering the GPUs NVML reported (sample/gpu.h): the "gpu" section of
// `snapshot` text (in the shape of nvidia-smi's table) and the "gpus" object
// of stallscope.snapshot/1 JSON. Without a GPU the text is one line, "gpu: no
// NVIDIA GPU found (...)", and the JSON {"available": false, "reason": ...}.
// Pure; thread-safe.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "sample/gpu.h"

namespace stallscope {

std::string RenderGpuText(const GpuObservation& gpus);
nlohmann::ordered_json GpusToJson(const GpuObservation& gpus);

}  // namespace stallscope
