// The memory rules over a recorded run: the worst interval judged as doctor
// judges a moment (CheckMemory), a leak's slope (memory.rss_growth), an OOM
// kill and its peak (memory.oom_killed), and the notes of the hook's
// allocation tracing. Pure; thread-safe. Part of the run's rules
// (rules.h: CheckRun).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sample/finding.h"
#include "sample/timeline.h"

namespace stallscope {

// memory.rss_growth: judged on the run after its first third (warm-up:
// loading the model, filling the page cache, workers starting).
inline constexpr double kLeakWarmupFraction = 1.0 / 3;
inline constexpr size_t kLeakMinSamples = 12;  // at least 4 a third
// Judged while the job trains: from the hook's first step to its last, when
// it reported steps. At exit a job frees what it held and its workers go, in
// one or two samples; a fast run has few samples a third, and two such
// samples at the end were enough to read a leak as a plateau. So, with or
// without steps, trailing samples below 90% of the median of the 5 before
// each are that teardown and are not judged.
inline constexpr double kLeakTeardownFraction = 0.9;
inline constexpr size_t kLeakTeardownWindow = 5;
// Steady: the last third still grows at least 0.7x as fast as the middle
// third. A leak keeps its pace (a linear leak gives 1.0, one that grows as
// sqrt(t) 0.77); a warm-up that settles exponentially passes 0.7 only when
// its time constant is about as long as the run. With the hook's steps the
// pace is bytes per step (the thirds are still cut by time), so steps that
// slow down (load, the hook's tracing) do not read as a plateau.
inline constexpr double kLeakSteadyRatio = 0.7;
// Significant: growth over the judged part beyond 3 sigma of the noise, and
// either > 10% of the RSS it started from and > 64 MiB, or the memory left
// runs out within 24 h at this slope.
inline constexpr double kLeakNoiseSigmas = 3.0;
inline constexpr double kLeakMinGrowthFraction = 0.10;
inline constexpr uint64_t kLeakMinGrowthBytes = 64ull << 20;
inline constexpr double kLeakOomHorizonSeconds = 24 * 3600.0;
inline constexpr double kLeakCriticalOomSeconds = 3600.0;  // critical: OOM within the hour
// The hook's growth sites shown in memory.rss_growth's evidence.
inline constexpr size_t kLeakSitesShown = 3;
// A process is named as the grower only if it lived through half the judged part.
inline constexpr double kLeakProcessMinCoverage = 0.5;

// memory.available_low, memory.swap_active (via CheckMemory), memory.rss_growth,
// memory.oom_killed.
FindingsWithNotes CheckRunMemory(const Timeline& timeline);
// What the hook's allocation tracing said it did (started, stopped, failed),
// one line per note: "allocation tracing, rank 0: tracing started: ...".
std::vector<std::string> AllocationTraceNotes(const Timeline& timeline);

}  // namespace stallscope
