// The memory layer of the triage: pure rules over what the probes saw.
//
// MemoryObservation is assembled by the caller (doctor, run) from the probes
// and holds only numbers, so every rule is tested on synthetic values. The
// thresholds are named constants; their reasoning is in analyze/catalog.cc.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sample/finding.h"
#include "sample/snapshot.h"

namespace stallscope {

inline constexpr double kAvailableLowWarningFraction = 0.20;
inline constexpr double kAvailableLowCriticalFraction = 0.10;
inline constexpr double kSwapWarningPagesPerSecond = 1.0;
inline constexpr double kSwapCriticalPagesPerSecond = 256.0;
inline constexpr double kPinnedWarningFraction = 0.25;
inline constexpr double kPinnedCriticalFraction = 0.50;

struct MemoryObservation {
  uint64_t total_bytes = 0;      // MemTotal
  uint64_t available_bytes = 0;  // MemAvailable
  // A memory-limited cgroup: what the job can use is the limit, not the host.
  std::optional<uint64_t> cgroup_limit_bytes;
  std::optional<uint64_t> cgroup_available_bytes;  // limit minus working set
  uint64_t swap_total_bytes = 0;
  uint64_t swap_used_bytes = 0;
  // Over the sampling window: pages moved to and from swap.
  double window_seconds = 0;
  uint64_t swap_in_pages = 0;
  uint64_t swap_out_pages = 0;
  uint64_t page_size_bytes = 4096;
  // Page-locked memory.
  uint64_t mlocked_bytes = 0;         // meminfo Mlocked
  uint64_t process_pinned_bytes = 0;  // sum over processes of VmLck + VmPin
  std::string top_pinned_process;     // "python3 (pid 4242)"
  uint64_t top_pinned_bytes = 0;
  // PSI: share of time some task stalled on memory (avg10, percent), if present.
  std::optional<double> memory_pressure_some_pct;
};

// The numbers the memory rules need, taken from a host snapshot.
MemoryObservation ObserveMemory(const Snapshot& snapshot);

FindingsWithNotes CheckMemory(const MemoryObservation& observation);

}  // namespace stallscope
