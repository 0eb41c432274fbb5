#include "sample/memory.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>

#include "sample/counter_delta.h"

namespace stallscope {
namespace {

// A counter that went backwards (reboot between samples, 32-bit wrap on an
// old kernel) tells nothing about the interval: count it as no events.
uint64_t Delta(uint64_t before, uint64_t after) { return GrewOrZero(before, after); }

}  // namespace

Result<VmStatRates> ComputeVmStatRates(const VmStat& before, const VmStat& after, double interval_s,
                                       uint64_t page_size_bytes) {
  if (!(interval_s > 0) || !std::isfinite(interval_s)) {
    return Status::InvalidArgument("vmstat interval must be a positive number of seconds");
  }
  if (page_size_bytes == 0) return Status::InvalidArgument("page size must be positive");
  auto per_s = [&](uint64_t b, uint64_t a) {
    return static_cast<double>(Delta(b, a)) / interval_s;
  };
  double page = static_cast<double>(page_size_bytes);
  VmStatRates rates;
  rates.interval_s = interval_s;
  rates.page_in_bytes_per_s = per_s(before.pgpgin_kib, after.pgpgin_kib) * 1024;
  rates.page_out_bytes_per_s = per_s(before.pgpgout_kib, after.pgpgout_kib) * 1024;
  rates.swap_in_bytes_per_s = per_s(before.pswpin_pages, after.pswpin_pages) * page;
  rates.swap_out_bytes_per_s = per_s(before.pswpout_pages, after.pswpout_pages) * page;
  rates.major_faults_per_s = per_s(before.pgmajfault, after.pgmajfault);
  rates.direct_scan_pages_per_s = per_s(before.pgscan_direct_pages, after.pgscan_direct_pages);
  rates.alloc_stalls_per_s = per_s(before.allocstall, after.allocstall);
  rates.refaults_per_s = per_s(before.workingset_refault, after.workingset_refault);
  if (before.oom_kill && after.oom_kill) rates.oom_kills = Delta(*before.oom_kill, *after.oom_kill);
  return rates;
}

uint64_t EffectiveAvailableBytes(const MemInfo& host, const CgroupMemory& cgroup) {
  uint64_t available = 0;
  if (host.available_bytes) {
    available = *host.available_bytes;
  } else {
    // Saturating: a corrupt sample must not wrap into "almost nothing free".
    for (uint64_t part : {host.free_bytes, host.buffers_bytes, host.cached_bytes}) {
      available = part > UINT64_MAX - available ? UINT64_MAX : available + part;
    }
  }
  if (!cgroup.limit_bytes) return available;
  uint64_t headroom = *cgroup.limit_bytes > cgroup.working_set_bytes
                          ? *cgroup.limit_bytes - cgroup.working_set_bytes
                          : 0;
  return std::min(available, headroom);
}

}  // namespace stallscope
