// The IO rules over a recorded run: a saturated data disk, a CPU-bound
// loader, the DataLoader's settings, the steps' wait for data. Pure;
// thread-safe. Part of the run's rules (run_rules.h: CheckRun, and the data
// wait these share: MeasureDataWait).
#pragma once

#include <cstdint>
#include <vector>

#include "sample/finding.h"
#include "sample/timeline.h"

namespace stallscope {

// io.device_saturated: iostat -x figures of the data disk.
inline constexpr double kDiskSaturatedUtilPercent = 90.0;
inline constexpr double kDiskSaturatedAwaitMs = 20.0;
inline constexpr int kDiskSaturatedMinIntervals = 3;            // in a row: not a blip
inline constexpr double kDiskSaturatedCriticalFraction = 0.30;  // of the sampled intervals

// io.input_bound: sum(wait) / sum(step) of the hook's steps.
inline constexpr double kInputBoundWarningFraction = 0.10;
inline constexpr double kInputBoundCriticalFraction = 0.30;
inline constexpr int64_t kInputBoundMinSteps = 5;  // after each rank's first step

// io.loader_config.
inline constexpr double kShortEpochSeconds = 30.0;
inline constexpr double kWorkerRestartCostFraction = 0.05;  // of an epoch
inline constexpr int kMaxPrefetchBatches = 64;              // num_workers * prefetch_factor
inline constexpr int kTorchDefaultPrefetchFactor = 2;
inline constexpr int kSuggestedPrefetchFactor = 4;

// io.cpu_bound_loader.
inline constexpr double kLoaderCpuSaturatedFraction = 0.90;  // of the CPUs the ranks leave
inline constexpr double kHostCpuSaturatedPercent = 95.0;
inline constexpr double kCpuSaturatedRunFraction = 0.50;  // "most of the run"

// io.device_saturated, io.cpu_bound_loader, io.loader_config, io.input_bound,
// in that order: at equal severity the cause comes before the symptom, so the
// verdict (the first critical finding) names what to fix.
std::vector<Finding> CheckRunIo(const Timeline& timeline);

}  // namespace stallscope
