#include "sample/cpu.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>

#include "sample/counter_delta.h"

namespace stallscope {
namespace {

// A tick counter that fell (a CPU taken offline and back) counts no ticks.
uint64_t Delta(uint64_t before, uint64_t after) { return GrewOrZero(before, after); }

CpuPercent Percentages(const CpuTimes& before, const CpuTimes& after) {
  CpuPercent out;
  out.cpu = after.cpu;
  uint64_t user = Delta(before.user_ticks, after.user_ticks);
  uint64_t nice = Delta(before.nice_ticks, after.nice_ticks);
  uint64_t guest = Delta(before.guest_ticks, after.guest_ticks);
  uint64_t guest_nice = Delta(before.guest_nice_ticks, after.guest_nice_ticks);
  // guest is accounted inside user (guest_nice inside nice); the two are
  // updated separately, so within one interval guest can exceed user by a
  // tick. Cap it, as mpstat does, so that no share goes negative.
  guest = std::min(guest, user);
  guest_nice = std::min(guest_nice, nice);
  uint64_t system = Delta(before.system_ticks, after.system_ticks);
  uint64_t idle = Delta(before.idle_ticks, after.idle_ticks);
  uint64_t iowait = Delta(before.iowait_ticks, after.iowait_ticks);
  uint64_t irq = Delta(before.irq_ticks, after.irq_ticks);
  uint64_t softirq = Delta(before.softirq_ticks, after.softirq_ticks);
  uint64_t steal = Delta(before.steal_ticks, after.steal_ticks);
  // Summed from the per-field deltas, not total_ticks(after) - total_ticks(before),
  // so that a field that went backwards cannot make the shares exceed 100.
  // Summed in double: absurd counters (a corrupt file) must not wrap into a
  // small total and shares over 100.
  double total = 0;
  for (uint64_t ticks : {user, nice, system, idle, iowait, irq, softirq, steal}) total += ticks;
  out.interval_ticks = total >= 1.8e19 ? UINT64_MAX : static_cast<uint64_t>(total);
  if (total == 0) return out;
  auto percent = [total](uint64_t ticks) { return 100.0 * static_cast<double>(ticks) / total; };
  out.user_percent = percent(user - guest);
  out.nice_percent = percent(nice - guest_nice);
  out.guest_percent = percent(guest);
  out.guest_nice_percent = percent(guest_nice);
  out.system_percent = percent(system);
  out.idle_percent = percent(idle);
  out.iowait_percent = percent(iowait);
  out.irq_percent = percent(irq);
  out.softirq_percent = percent(softirq);
  out.steal_percent = percent(steal);
  return out;
}

}  // namespace

CpuUsage ComputeCpuUsage(const CpuStat& before, const CpuStat& after) {
  CpuUsage usage;
  usage.total = Percentages(before.total, after.total);
  for (size_t i = 0; i < after.per_cpu.size(); ++i) {
    const CpuTimes& now = after.per_cpu[i];
    // Usually the same CPUs in the same order; search only after a hotplug.
    if (i < before.per_cpu.size() && before.per_cpu[i].cpu == now.cpu) {
      usage.per_cpu.push_back(Percentages(before.per_cpu[i], now));
      continue;
    }
    for (const CpuTimes& then : before.per_cpu) {
      if (then.cpu == now.cpu) {
        usage.per_cpu.push_back(Percentages(then, now));
        break;
      }
    }
  }
  return usage;
}

}  // namespace stallscope
