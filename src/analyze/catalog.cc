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
    {"memory.rss_growth", Layer::kMemory,
     "a recorded run: the Theil-Sen slope (median of pairwise slopes, robust to ~29% outliers) "
     "of the process tree's RSS after the first third of the run; the middle and last thirds "
     "fitted apart; each process's own slope to name the one that grows; the memory still "
     "available at the end",
     "fires when the last two thirds grow, the last third at >= 0.7x the middle third's pace, "
     "the growth exceeds 3 sigma of the noise, and either exceeds 10% of the RSS it started "
     "from and 64 MiB or the memory left runs out within 24 h at this slope; critical when it "
     "runs out within 1 h, else warning",
     "seed 1.2: a leak is RSS that 'only rises' when sampled every 30 s (tensors appended to a "
     "list grew to 100+ GB in 15 h before the OOM kill). Loading a model, filling caches and "
     "starting workers also raise RSS, then plateau: so the first third is left out and a "
     "slowing last third is not a leak. 10% / 64 MiB / 24 h are ours: below them a rise is "
     "allocator noise or harmless"},
    {"memory.oom_killed", Layer::kMemory,
     "a recorded run: whether the kernel's OOM killer ended the job (vmstat / cgroup oom_kill "
     "counted a kill of the job's tree); the tree's peak RSS and the limit",
     "critical whenever it happened",
     "seed 1.2: a slow leak ends in an OOM kill, and in distributed training one killed rank "
     "hangs all the others; nothing else the run shows matters more"},
    {"io.device_saturated", Layer::kIo,
     "a recorded run: iostat -x figures of the disk behind the data, per interval: %util, await "
     "(ms), read kB/s",
     "an interval is saturated at %util >= 90 and await >= 20 ms; critical when >= 30% of the "
     "intervals are (at least 3), warning when 3 in a row are; one level lower when the hook "
     "measured that the steps do not wait for data (< 10% of step time)",
     "seed 2.1: '%util near 100 for long, await over tens of ms: the bottleneck is most likely "
     "the storage'. 90 / 20 ms put numbers on 'near 100' and 'tens of ms'; 3 intervals in a row "
     "separate sustained from a blip; 30% of the run makes it the job's condition, not a "
     "burst (a checkpoint write, an epoch start)"},
    {"io.cpu_bound_loader", Layer::kIo,
     "a recorded run: CPU of the loader workers (the tree minus the ranks) against the CPUs the "
     "ranks leave them, and the host's CPU busy share, per interval; the data wait share",
     "fires when the workers use >= 90% of those CPUs in >= 50% of the intervals, or the host "
     "is >= 95% busy in >= 50% of them while steps wait >= 10% for data; critical when the steps "
     "wait >= 30% (io.input_bound's critical level), info when they were measured and do not, else "
     "warning",
     "seed 2.4: decompressing a zip on every read made 'the CPU the new bottleneck'; decoding "
     "and augmentation in the workers do the same. Workers that already have every CPU cannot "
     "be helped by more workers (seed 2.2: num_workers=32 only blew up memory). 90% / 95% / "
     "half the run are ours"},
    {"io.loader_config", Layer::kIo,
     "a recorded run: the DataLoader settings the hook reported per rank (num_workers, "
     "pin_memory, prefetch_factor, persistent_workers), epoch lengths and the first step's "
     "wait of each epoch. One finding per problem, named in the 'problem' evidence",
     "num_workers_zero: critical when steps wait >= 30% for data, info when measured below, "
     "else warning; pin_memory_off (GPU job): warning; workers_not_persistent: warning when "
     "epochs average < 30 s or the measured restart wait is >= 5% of an epoch; "
     "prefetch_queue_large: warning when num_workers x prefetch_factor > 64; "
     "workers_exceed_cpus: warning when the ranks' workers outnumber the CPUs",
     "seed 2.2: num_workers, prefetch_factor, pin_memory and persistent_workers decide the "
     "pipeline; num_workers x prefetch_factor is the prefetch queue, too long eats memory and "
     "swaps; start at half the CPUs, prefetch_factor=4, persistent_workers=True (rebuilding "
     "workers each epoch adds minutes); seed 1.1: pin_memory=True lets the DMA copy directly. "
     "30 s, 5% and 64 are ours"},
    {"io.input_bound", Layer::kIo,
     "a recorded run: the hook's steps: time next(loader) took over the whole step, per rank "
     "and overall, each rank's first step (worker start-up) left out; the worst rank decides, "
     "since in synchronous training every rank waits for it",
     "warning at >= 10% of step time; critical at >= 30%; at least 5 steps",
     "seed 1.1: data movement that outgrows the forward pass is the first thing to fix; a GPU "
     "that waits 30% of every step would run 1.4x faster without the wait. Below 10% the loader "
     "overlaps well and the rest is hand-off noise. 30% matches network.comm_ratio_high; the "
     "design's example (48%) is critical"},
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
