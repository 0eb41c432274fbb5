// The IO rules over a recorded run: a saturated data disk, a CPU-bound
// loader, the DataLoader's settings, the steps' wait for data. Pure;
// thread-safe. Part of the run's rules (rules.h: CheckRun, and the data
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
// With the workers' run delay recorded (schedstat): a worker is CPU-bound
// in an interval when it was on a CPU or waiting for one this much of it,
// most of that its own work, while the data disk was under this busy.
inline constexpr double kWorkerBusyPercent = 80.0;
inline constexpr double kWorkerOwnCpuPercent = 50.0;
inline constexpr double kDataDiskIdlePercent = 50.0;

// io.input_bound, io.cold_cache, io.device_saturated, io.cpu_contention,
// io.cpu_bound_loader, io.loader_config (loader_rules.h holds the
// second and the fourth). io.cold_cache lowers to info the input_bound and
// cpu_bound_loader findings that hold in epoch 0 only; io.cpu_contention
// (warning or critical) replaces io.cpu_bound_loader.
FindingsWithNotes CheckRunIo(const Timeline& timeline);

}  // namespace stallscope
