// Pressure stall information (PSI): the share of time tasks waited for CPU,
// memory or IO, from /proc/pressure/* or a cgroup v2 <resource>.pressure file.
//
// Plain data filled by src/probe/pressure (and reused by probe/cgroup for
// memory.pressure). Values are thread-compatible.
#pragma once

#include <cstdint>
#include <optional>

namespace stallscope {

// One "some" or "full" line. "some": at least one task waited; "full": all
// non-idle tasks waited at once, so no work was done at all.
struct PressureLine {
  double avg10_percent = 0;  // averaged over the last 10 s
  double avg60_percent = 0;
  double avg300_percent = 0;
  uint64_t total_us = 0;  // stalled time since boot, microseconds
};

// One resource. present=false when the kernel has no PSI (before 4.20, or
// booted with psi=0): a fact about the host, not an error. `full` is absent
// for cpu before 5.13 (and at the system level it is always 0 even after).
struct Pressure {
  bool present = false;
  std::optional<PressureLine> some;
  std::optional<PressureLine> full;
};

// /proc/pressure/{cpu,memory,io,irq}. irq appeared in 6.1.
struct HostPressure {
  Pressure cpu;
  Pressure memory;
  Pressure io;
  Pressure irq;
};

}  // namespace stallscope
