// The GPU rules: pure functions over what NVML reported (sample/gpu.h),
// for one moment (`doctor`) or a recorded run (`run`, `report`).
//
//  - code.util_misleading: utilization.gpu says a kernel was running most of
//    the time while GPM's SM activity says the SMs were mostly idle (95%
//    utilization, yet epochs twice as long as expected). Judged only with
//    GPM; without it a note says why not.
//  - memory.gpu_near_full: used / total memory of a GPU, naming the
//    processes that hold it.
//  - code.gpu_throttled: power or thermal or hardware slowdown throttle
//    reasons active while the GPU works, with the SM clock against its max.
// Thresholds are named constants; their reasoning is in analyze/catalog.cc.
// Thread-safe (no state).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sample/finding.h"
#include "sample/gpu.h"
#include "sample/timeline.h"

namespace stallscope {

// code.util_misleading.
inline constexpr double kUtilMisleadingUtilPercent = 80.0;      // "the GPU looks busy"
inline constexpr double kUtilMisleadingSmActivePercent = 50.0;  // warning below
inline constexpr double kUtilMisleadingCriticalSmActivePercent = 25.0;
// memory.gpu_near_full.
inline constexpr double kGpuNearFullWarningFraction = 0.95;
inline constexpr double kGpuNearFullCriticalFraction = 0.99;
// code.gpu_throttled: a run fires when this share of the busy samples throttled.
inline constexpr double kThrottledRunFraction = 0.20;
// critical when the SM clock ran below this share of its max while throttled.
inline constexpr double kThrottledCriticalClockFraction = 0.70;

// One GPU as the rules judge it: a moment (samples = 1) or a run's summary.
struct GpuJudged {
  GpuState gpu;  // a run: mean utilization, mean GPM figures, peak memory
  int samples = 1;
  int gpm_samples = 0;             // samples with GPM SM activity
  int busy_samples = 0;            // samples without the GpuIdle reason
  int throttled_samples = 0;       // busy samples with a slowdown reason
  uint64_t throttle_reasons = 0;   // union of slowdown reasons over those
  double throttled_clock_mhz = 0;  // mean SM clock while throttled
};

// A moment of one GPU.
GpuJudged JudgeMoment(const GpuState& gpu);
// A run's GPU samples, one GpuJudged per GPU (by index), lost GPUs included.
std::vector<GpuJudged> SummarizeRunGpus(const std::vector<GpuPoint>& points);

// process_names: pid -> command name, to name the holders of GPU memory.
// The notes: where a rule could not judge (no GPM) or a GPU was lost.
FindingsWithNotes CheckGpus(const std::vector<GpuJudged>& gpus,
                            const std::map<int, std::string>& process_names);

// A moment of every GPU (doctor): JudgeMoment then CheckGpus.
FindingsWithNotes CheckGpuObservation(const GpuObservation& observation,
                                      const std::map<int, std::string>& process_names);

// The run's GPU findings (pure): SummarizeRunGpus then CheckGpus, with the
// names from the run's process points.
FindingsWithNotes CheckRunGpus(const Timeline& timeline);

}  // namespace stallscope
