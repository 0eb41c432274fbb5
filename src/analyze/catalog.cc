#include "analyze/catalog.h"

namespace stallscope {
namespace {

constexpr Rule kRules[] = {
    {"memory.available_low", Layer::kMemory,
     "MemAvailable (or, in a memory-limited cgroup, limit minus working set) against MemTotal "
     "(or the limit)",
     "warning below 20%; critical below 10%, or below 20% while swap is active",
     "seed 1.3: available under 20% of total with swap activity always slows training; "
     "under 10% the page cache that feeds the data loader is already gone"},
    {"memory.swap_active", Layer::kMemory,
     "pages swapped in+out per second (/proc/vmstat pswpin, pswpout) over the sampling window; "
     "swap in use (SwapTotal - SwapFree)",
     "warning at >= 1 page/s; critical at >= 256 pages/s (1 MiB/s with 4 KiB pages); "
     "info when swap holds pages but none moved",
     "seed 1.3: any swap traffic means memory is short, and it delays the host allocations "
     "that host-to-GPU copies wait on"},
    {"memory.pinned_excess", Layer::kMemory,
     "page-locked memory: the larger of meminfo Mlocked and the sum of VmLck+VmPin of every "
     "process, against MemTotal",
     "warning above 25% of MemTotal; critical above 50%",
     "pinned pages can be neither swapped nor reclaimed: pin_memory buffers of num_workers x "
     "prefetch_factor batches (seed 2.2) squeeze the page cache the loader reads through; "
     "our threshold, the seed gives none"},
};

}  // namespace

std::span<const Rule> RuleCatalog() { return kRules; }

const Rule* FindRule(std::string_view id) {
  for (const Rule& rule : kRules) {
    if (rule.id == id) return &rule;
  }
  return nullptr;
}

}  // namespace stallscope
