// How much a counter grew between two readings, and what a fall means. A
// kernel counter only grows, so a fall is a reset (a reboot, a device that
// went and came back, a pid reused by another process) or a wrap, and each
// caller says which answer it wants:
//   kZero     nothing happened in the interval (host counters: vmstat, CPU
//             ticks, diskstats' request and sector counts, as iostat and
//             vmstat count them);
//   kUnknown  no figure (a process's or the job tree's counters: a fall
//             means another process, whose counts say nothing of this one);
//   kWrap32   a field the kernel prints with %u (diskstats' milliseconds)
//             wrapped at 2^32; a value above 32 bits cannot be such a
//             field, so a fall there is a reset, counted as zero.
// Pure, header-only; the one place this is decided.
#pragma once

#include <cstdint>
#include <optional>

namespace stallscope {

enum class OnReset { kZero, kUnknown, kWrap32 };

constexpr std::optional<uint64_t> CounterDelta(uint64_t before, uint64_t after, OnReset reset) {
  if (after >= before) return after - before;
  switch (reset) {
    case OnReset::kZero:
      return 0;
    case OnReset::kUnknown:
      return std::nullopt;
    case OnReset::kWrap32: {
      constexpr uint64_t kWrap = uint64_t{1} << 32;
      if (before >= kWrap || after >= kWrap) return 0;
      return kWrap - before + after;
    }
  }
  return std::nullopt;
}

// kZero's answer, never empty.
constexpr uint64_t GrewOrZero(uint64_t before, uint64_t after) {
  return after >= before ? after - before : 0;
}

}  // namespace stallscope
