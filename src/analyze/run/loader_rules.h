// Two io rules over a recorded run that look past the loader itself: CPUs
// taken by processes outside the job (io.cpu_contention), and a first epoch
// slow because the page cache was cold while later epochs run normally
// (io.cold_cache). Part of CheckRunIo (io_rules.h), which also lowers the
// loader findings they explain. Pure; thread-safe.
#pragma once

#include <optional>
#include <vector>

#include "analyze/run/rules.h"
#include "sample/finding.h"
#include "sample/timeline.h"

namespace stallscope {

// io.cpu_contention: the CPU the host's processes outside the tree used, as
// a share of all the CPUs, in the median interval of the run.
inline constexpr double kCpuContentionShare = 0.25;
inline constexpr double kCpuContentionRunFraction = 0.5;  // of the intervals

// io.cold_cache: epoch 0 this much slower than the median later epoch, by
// at least kColdCacheMinSeconds, having read kColdCacheMinReadBytes from
// the data disk while the later epochs read under kColdCacheLaterReadShare
// of its rate.
inline constexpr double kColdCacheSlowdown = 1.5;
inline constexpr double kColdCacheMinSeconds = 2.0;
inline constexpr double kColdCacheMinReadBytes = 16.0 * 1024 * 1024;
inline constexpr double kColdCacheLaterReadShare = 0.2;

std::optional<Finding> CheckCpuContention(const Timeline& timeline,
                                          const std::optional<DataWait>& wait);
std::optional<Finding> CheckColdCache(const Timeline& timeline,
                                      const std::vector<EpochSummary>& epochs);

// The worst rank's data wait over the steps after epoch 0
// (MeasureDataWait after epoch 1's start); nullopt without a second epoch
// or with too few steps after it.
std::optional<double> DataWaitAfterFirstEpoch(const Timeline& timeline,
                                              const std::vector<EpochSummary>& epochs);

}  // namespace stallscope
