// CPU samples: /proc/stat's time counters, and the percentages between two
// samples as mpstat prints them.
//
// Plain data filled by src/probe/cpu_stat; ComputeCpuUsage is pure. Times are
// clock ticks (USER_HZ): convert with sysconf(_SC_CLK_TCK) (see
// ClockTicksPerSecond in probe/cpu_stat.h), never by assuming 100.
// Values are thread-compatible.
#pragma once

#include <cstdint>
#include <vector>

namespace stallscope {

// One "cpu" or "cpuN" line. Kernels before 2.6.11 print no steal, before
// 2.6.24 no guest, before 2.6.33 no guest_nice: those stay 0.
struct CpuTimes {
  int cpu = -1;             // N of "cpuN"; -1 for the "cpu" line that sums all CPUs
  uint64_t user_ticks = 0;  // includes guest_ticks
  uint64_t nice_ticks = 0;  // includes guest_nice_ticks
  uint64_t system_ticks = 0;
  uint64_t idle_ticks = 0;
  uint64_t iowait_ticks = 0;
  uint64_t irq_ticks = 0;
  uint64_t softirq_ticks = 0;
  uint64_t steal_ticks = 0;  // taken by the hypervisor for other guests
  uint64_t guest_ticks = 0;
  uint64_t guest_nice_ticks = 0;

  // All time this CPU accounted for. guest and guest_nice are already inside
  // user and nice, so they are not added again.
  uint64_t total_ticks() const {
    return user_ticks + nice_ticks + system_ticks + idle_ticks + iowait_ticks + irq_ticks +
           softirq_ticks + steal_ticks;
  }
};

// /proc/stat. per_cpu lists online CPUs only (offline ones have no line), in
// file order; match CPUs between samples by `cpu`, not by position.
struct CpuStat {
  CpuTimes total;
  std::vector<CpuTimes> per_cpu;
  uint64_t context_switches = 0;   // ctxt, since boot
  uint64_t processes_created = 0;  // processes (forks since boot)
  uint64_t procs_running = 0;      // runnable tasks now
  uint64_t procs_blocked = 0;      // tasks in uninterruptible (usually IO) wait now
  uint64_t boot_time_s = 0;        // btime, seconds since the epoch
};

// Shares of one CPU's (or all CPUs') time over an interval, in percent,
// with mpstat's columns: user excludes guest, nice excludes guest_nice, and
// the ten shares add up to 100.
struct CpuPercent {
  int cpu = -1;
  uint64_t interval_ticks = 0;  // 0: no time passed (or the CPU went offline); all shares 0
  double user_percent = 0;
  double nice_percent = 0;
  double system_percent = 0;
  double iowait_percent = 0;
  double irq_percent = 0;
  double softirq_percent = 0;
  double steal_percent = 0;
  double guest_percent = 0;
  double guest_nice_percent = 0;
  double idle_percent = 0;

  double busy_percent() const {
    return interval_ticks == 0 ? 0 : 100.0 - idle_percent - iowait_percent;
  }
};

struct CpuUsage {
  CpuPercent total;
  std::vector<CpuPercent> per_cpu;  // CPUs present in both samples, in `after`'s order
};

// Counters that went backwards (iowait does on some NO_HZ kernels) count as 0
// for the interval.
CpuUsage ComputeCpuUsage(const CpuStat& before, const CpuStat& after);

}  // namespace stallscope
