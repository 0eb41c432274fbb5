// Running `bench h2d`: pinned and pageable host-to-device copies (and back)
// of every size on every GPU, through a CudaRuntime (cuda_runtime.h), from
// the GPU's NUMA node and the other. The plan and the verdict are
// cuda_h2d.h's. Not thread-safe: it changes the calling thread's CPU
// affinity while it runs.
#pragma once

#include "bench/cuda_h2d.h"
#include "core/status.h"

namespace stallscope {

// Unavailable (the message says why: no device, no driver) when CUDA finds
// no GPU; per-GPU failures become notes on that GPU.
Result<H2dResult> RunH2dBench(const CudaRuntime& cuda, const H2dOptions& options);

}  // namespace stallscope
