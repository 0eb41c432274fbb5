// Memory samples: the host's /proc/meminfo and /proc/vmstat, a process's
// memory cgroup (v1 or v2), and the arithmetic between them.
//
// Plain data filled by src/probe/meminfo, vmstat and cgroup; the functions at
// the bottom are pure (no file system) and are what the memory rules call.
// Sizes are bytes (meminfo's kB already multiplied by 1024), counters are
// events since boot. Values are thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/status.h"

namespace stallscope {

// /proc/meminfo. Fields a kernel does not print stay 0, except MemAvailable
// (added in 3.14) which is optional because "0 available" would be a lie.
struct MemInfo {
  uint64_t total_bytes = 0;                 // MemTotal
  uint64_t free_bytes = 0;                  // MemFree
  std::optional<uint64_t> available_bytes;  // MemAvailable
  uint64_t buffers_bytes = 0;               // Buffers
  uint64_t cached_bytes = 0;                // Cached (page cache, includes Shmem)
  uint64_t swap_cached_bytes = 0;           // SwapCached
  uint64_t active_file_bytes = 0;           // Active(file)
  uint64_t inactive_file_bytes = 0;         // Inactive(file)
  uint64_t active_anon_bytes = 0;           // Active(anon)
  uint64_t inactive_anon_bytes = 0;         // Inactive(anon)
  uint64_t unevictable_bytes = 0;           // Unevictable
  uint64_t mlocked_bytes = 0;               // Mlocked (pinned host memory shows here)
  uint64_t swap_total_bytes = 0;            // SwapTotal
  uint64_t swap_free_bytes = 0;             // SwapFree
  uint64_t dirty_bytes = 0;                 // Dirty
  uint64_t writeback_bytes = 0;             // Writeback
  uint64_t anon_pages_bytes = 0;            // AnonPages
  uint64_t mapped_bytes = 0;                // Mapped
  uint64_t shmem_bytes = 0;                 // Shmem (/dev/shm, DataLoader workers)
  uint64_t slab_reclaimable_bytes = 0;      // SReclaimable
  uint64_t slab_unreclaimable_bytes = 0;    // SUnreclaim
  uint64_t page_tables_bytes = 0;           // PageTables
  uint64_t commit_limit_bytes = 0;          // CommitLimit
  uint64_t committed_as_bytes = 0;          // Committed_AS
  uint64_t anon_huge_pages_bytes = 0;       // AnonHugePages (transparent huge pages)
  uint64_t huge_pages_total = 0;            // HugePages_Total (a count, not kB)
  uint64_t huge_pages_free = 0;             // HugePages_Free (a count)
  uint64_t huge_pages_reserved = 0;         // HugePages_Rsvd (a count)
  uint64_t huge_page_size_bytes = 0;        // Hugepagesize
  uint64_t hugetlb_bytes = 0;               // Hugetlb (all huge page pools)

  uint64_t swap_used_bytes() const {
    return swap_total_bytes > swap_free_bytes ? swap_total_bytes - swap_free_bytes : 0;
  }
};

// /proc/vmstat counters (events since boot) and the two gauges memory triage
// reads. Counters a kernel does not print stay 0, except oom_kill (4.13+).
struct VmStat {
  uint64_t pgpgin_kib = 0;     // pgpgin: KiB read from block devices
  uint64_t pgpgout_kib = 0;    // pgpgout: KiB written to block devices
  uint64_t pswpin_pages = 0;   // pswpin: pages swapped in
  uint64_t pswpout_pages = 0;  // pswpout: pages swapped out
  uint64_t pgfault = 0;        // all page faults
  uint64_t pgmajfault = 0;     // faults that waited for the disk
  uint64_t pgscan_kswapd_pages = 0;
  uint64_t pgscan_direct_pages = 0;  // scanned by allocating tasks themselves: a stall
  uint64_t pgsteal_kswapd_pages = 0;
  uint64_t pgsteal_direct_pages = 0;
  uint64_t allocstall = 0;           // sum of allocstall_* (per zone since 4.8)
  uint64_t workingset_refault = 0;   // refaults of recently evicted pages (file + anon)
  std::optional<uint64_t> oom_kill;  // oom_kill, absent before 4.13
  uint64_t nr_dirty_pages = 0;       // gauge
  uint64_t nr_writeback_pages = 0;   // gauge
};

// Per-second rates between two VmStat samples, in bytes where a size is meant.
// A counter that went backwards (reboot, wrap) counts as 0 for that interval.
struct VmStatRates {
  double interval_s = 0;
  double page_in_bytes_per_s = 0;   // pgpgin
  double page_out_bytes_per_s = 0;  // pgpgout
  double swap_in_bytes_per_s = 0;   // pswpin * page size
  double swap_out_bytes_per_s = 0;  // pswpout * page size
  double major_faults_per_s = 0;
  double direct_scan_pages_per_s = 0;
  double alloc_stalls_per_s = 0;
  double refaults_per_s = 0;
  std::optional<uint64_t> oom_kills;  // new OOM kills in the interval (a count, not a rate)
};

// `page_size_bytes` is sysconf(_SC_PAGESIZE) of the sampled host;
// `interval_s` the wall time between the samples (must be > 0).
Result<VmStatRates> ComputeVmStatRates(const VmStat& before, const VmStat& after, double interval_s,
                                       uint64_t page_size_bytes);

enum class CgroupVersion { kV1, kV2 };

// The memory cgroup a process lives in, as the kernel enforces it. A
// default-constructed value means "no limit known": EffectiveAvailableBytes
// then falls back to the host.
struct CgroupMemory {
  CgroupVersion version = CgroupVersion::kV2;
  std::string cgroup_path;  // from /proc/<pid>/cgroup, e.g. "/kubepods/burstable/pod1/abc"
  std::string directory;    // the directory read, e.g. "/sys/fs/cgroup/memory" (not under Root)
  // The tightest limit on this cgroup and its ancestors; nullopt = unlimited
  // ("max" in v2, a PAGE_COUNTER_MAX value like 9223372036854771712 in v1).
  std::optional<uint64_t> limit_bytes;
  std::optional<uint64_t> high_bytes;  // v2 memory.high: reclaim throttling starts here
  uint64_t usage_bytes = 0;            // memory.current / memory.usage_in_bytes
  std::optional<uint64_t> peak_bytes;  // memory.peak (5.19+) / memory.max_usage_in_bytes
  // usage minus inactive file cache, floored at 0: what the kubelet compares
  // to the limit before evicting, and what an OOM kill cannot reclaim.
  uint64_t working_set_bytes = 0;
  uint64_t anon_bytes = 0;           // v2 anon / v1 total_rss
  uint64_t file_bytes = 0;           // v2 file / v1 total_cache
  uint64_t inactive_file_bytes = 0;  // v2 inactive_file / v1 total_inactive_file
  uint64_t active_file_bytes = 0;    // v2 active_file / v1 total_active_file
  uint64_t shmem_bytes = 0;          // v2 shmem / v1 total_shmem
  uint64_t dirty_bytes = 0;          // v2 file_dirty / v1 total_dirty
  uint64_t writeback_bytes = 0;      // v2 file_writeback / v1 total_writeback
  // Swap: nullopt when the kernel does not account it (no memory.swap.current
  // in v2, no memory.memsw.* in v1 without swapaccount=1).
  std::optional<uint64_t> swap_usage_bytes;  // v1: total_swap of memory.stat
  std::optional<uint64_t> swap_limit_bytes;  // nullopt also when unlimited; v1: memsw.limit - limit
  // OOM: v2 memory.events; v1 memory.oom_control (oom_kill since 4.13).
  std::optional<uint64_t> oom_events;      // v2 "oom": times the limit was hit and reclaim failed
  std::optional<uint64_t> oom_kill_count;  // processes killed by this cgroup's OOM killer
  std::optional<uint64_t> max_events;      // v2 "max": times usage reached the limit
  bool under_oom = false;                  // v1: tasks are frozen waiting for memory now
};

// What the job can really still allocate before reclaim turns into OOM:
// the host's MemAvailable, capped by the cgroup's headroom (limit minus
// working set) when the cgroup is limited. Without MemAvailable (kernels
// before 3.14) the host side is estimated as MemFree + Buffers + Cached.
uint64_t EffectiveAvailableBytes(const MemInfo& host, const CgroupMemory& cgroup);

}  // namespace stallscope
