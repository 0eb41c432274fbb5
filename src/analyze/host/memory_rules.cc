#include "analyze/host/memory_rules.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/units.h"

namespace stallscope {
namespace {

int64_t AsInt(uint64_t v) { return static_cast<int64_t>(v); }

double SwapPagesPerSecond(const MemoryObservation& m) {
  if (m.window_seconds <= 0) return 0;
  return static_cast<double>(m.swap_in_pages + m.swap_out_pages) / m.window_seconds;
}

// PSI "some" is the share of wall time at least one task waited for memory:
// the closest measured cost of memory pressure to the job.
std::optional<Impact> PressureImpact(const MemoryObservation& m) {
  if (!m.memory_pressure_some_pct || *m.memory_pressure_some_pct <= 0) return std::nullopt;
  return Impact{*m.memory_pressure_some_pct / 100.0, std::nullopt,
                "PSI memory 'some' avg10: share of time a task stalled on memory"};
}

std::optional<Finding> CheckAvailable(const MemoryObservation& m) {
  // Inside a memory-limited cgroup the limit, not the host, is what runs out.
  const bool limited = m.cgroup_limit_bytes && m.cgroup_available_bytes;
  uint64_t total = limited ? std::min(*m.cgroup_limit_bytes, m.total_bytes) : m.total_bytes;
  uint64_t available =
      limited ? std::min(*m.cgroup_available_bytes, m.available_bytes) : m.available_bytes;
  if (total == 0) return std::nullopt;
  double fraction = static_cast<double>(available) / static_cast<double>(total);
  if (fraction >= kAvailableLowWarningFraction) return std::nullopt;

  bool swapping = SwapPagesPerSecond(m) >= kSwapWarningPagesPerSecond;
  Finding f;
  f.id = "memory.available_low";
  f.layer = Layer::kMemory;
  f.severity = (fraction < kAvailableLowCriticalFraction || swapping) ? Severity::kCritical
                                                                      : Severity::kWarning;
  std::string of_what = limited ? fmt::format("the {} cgroup limit", FormatBytes(total))
                                : fmt::format("{} memory", FormatBytes(total));
  f.summary = fmt::format("only {} of {} is available ({}){}", FormatBytes(available), of_what,
                          FormatPercent(fraction), swapping ? " and the host is swapping" : "");
  f.evidence = {{"available_bytes", AsInt(available)},
                {"total_bytes", AsInt(total)},
                {"available_fraction", fraction},
                {"threshold_fraction", kAvailableLowWarningFraction},
                {"cgroup_limited", limited}};
  f.next =
      "find what holds the memory: `ps -eo pid,rss,comm --sort=-rss | head`; sample the job's "
      "RSS every 30 s (`ps -o pid,rss,cmd -p PID`): only rising means a leak; else lower "
      "num_workers * prefetch_factor";
  f.impact = PressureImpact(m);
  return f;
}

std::optional<Finding> CheckSwap(const MemoryObservation& m) {
  double rate = SwapPagesPerSecond(m);
  if (rate < kSwapWarningPagesPerSecond && m.swap_used_bytes == 0) return std::nullopt;
  Finding f;
  f.id = "memory.swap_active";
  f.layer = Layer::kMemory;
  double bytes_per_second = rate * static_cast<double>(m.page_size_bytes);
  if (rate >= kSwapWarningPagesPerSecond) {
    f.severity = rate >= kSwapCriticalPagesPerSecond ? Severity::kCritical : Severity::kWarning;
    f.summary =
        fmt::format("the host is swapping: {:.0f} pages/s ({}) over {:.1f} s, {} in swap", rate,
                    FormatRate(bytes_per_second), m.window_seconds, FormatBytes(m.swap_used_bytes));
  } else {
    f.severity = Severity::kInfo;
    f.summary = fmt::format("{} sits in swap, but no page moved in {:.1f} s",
                            FormatBytes(m.swap_used_bytes), m.window_seconds);
  }
  f.evidence = {
      {"swap_in_pages_per_s", m.window_seconds > 0 ? m.swap_in_pages / m.window_seconds : 0.0},
      {"swap_out_pages_per_s", m.window_seconds > 0 ? m.swap_out_pages / m.window_seconds : 0.0},
      {"swap_used_bytes", AsInt(m.swap_used_bytes)},
      {"swap_total_bytes", AsInt(m.swap_total_bytes)},
      {"window_seconds", m.window_seconds}};
  f.next =
      "watch it move: `vmstat 1` (si/so columns); then find the largest RSS and cut "
      "DataLoader workers or prefetch_factor (each worker holds prefetch_factor batches)";
  if (f.severity != Severity::kInfo) f.impact = PressureImpact(m);
  return f;
}

std::optional<Finding> CheckPinned(const MemoryObservation& m) {
  if (m.total_bytes == 0) return std::nullopt;
  uint64_t pinned = std::max(m.mlocked_bytes, m.process_pinned_bytes);
  double fraction = static_cast<double>(pinned) / static_cast<double>(m.total_bytes);
  if (fraction <= kPinnedWarningFraction) return std::nullopt;
  Finding f;
  f.id = "memory.pinned_excess";
  f.layer = Layer::kMemory;
  f.severity = fraction > kPinnedCriticalFraction ? Severity::kCritical : Severity::kWarning;
  f.summary =
      fmt::format("{} of memory is page-locked ({} of {}){}", FormatBytes(pinned),
                  FormatPercent(fraction), FormatBytes(m.total_bytes),
                  m.top_pinned_process.empty() ? std::string()
                                               : fmt::format(", most by {}", m.top_pinned_process));
  f.evidence = {{"pinned_bytes", AsInt(pinned)},
                {"mlocked_bytes", AsInt(m.mlocked_bytes)},
                {"process_pinned_bytes", AsInt(m.process_pinned_bytes)},
                {"total_bytes", AsInt(m.total_bytes)},
                {"pinned_fraction", fraction},
                {"top_process", m.top_pinned_process},
                {"top_process_pinned_bytes", AsInt(m.top_pinned_bytes)}};
  f.next =
      "see who holds it: `grep -E 'VmLck|VmPin' /proc/PID/status`; pin_memory=True pins "
      "num_workers * prefetch_factor batches per rank: lower prefetch_factor or num_workers";
  return f;
}

}  // namespace

MemoryObservation ObserveMemory(const Snapshot& s) {
  MemoryObservation m;
  const MemInfo& mem = s.after.memory;
  m.total_bytes = mem.total_bytes;
  // Kernels before 3.14 have no MemAvailable: free + buffers + cache is the
  // classic estimate (what free(1) printed then).
  m.available_bytes =
      mem.available_bytes.value_or(mem.free_bytes + mem.buffers_bytes + mem.cached_bytes);
  if (s.cgroup && s.cgroup->limit_bytes) {
    m.cgroup_limit_bytes = s.cgroup->limit_bytes;
    m.cgroup_available_bytes = *s.cgroup->limit_bytes > s.cgroup->working_set_bytes
                                   ? *s.cgroup->limit_bytes - s.cgroup->working_set_bytes
                                   : 0;
  }
  m.swap_total_bytes = mem.swap_total_bytes;
  m.swap_used_bytes = mem.swap_used_bytes();
  m.window_seconds = s.interval_seconds;
  auto delta = [](uint64_t before, uint64_t after) { return after > before ? after - before : 0; };
  m.swap_in_pages = delta(s.before.vmstat.pswpin_pages, s.after.vmstat.pswpin_pages);
  m.swap_out_pages = delta(s.before.vmstat.pswpout_pages, s.after.vmstat.pswpout_pages);
  m.page_size_bytes = s.page_size_bytes;
  m.mlocked_bytes = mem.mlocked_bytes;
  m.process_pinned_bytes = s.processes.pinned_bytes;
  if (s.top_pinned.pinned_bytes > 0) {
    m.top_pinned_process = fmt::format("{} (pid {})", s.top_pinned.comm, s.top_pinned.pid);
    m.top_pinned_bytes = s.top_pinned.pinned_bytes;
  }
  if (s.after.pressure && s.after.pressure->memory.present && s.after.pressure->memory.some) {
    m.memory_pressure_some_pct = s.after.pressure->memory.some->avg10_percent;
  }
  return m;
}

FindingsWithNotes CheckMemory(const MemoryObservation& observation) {
  std::vector<Finding> findings;
  for (auto check : {CheckAvailable, CheckSwap, CheckPinned}) {
    if (std::optional<Finding> f = check(observation)) findings.push_back(std::move(*f));
  }
  return FindingsWithNotes{std::move(findings), {}};
}

}  // namespace stallscope
