// `plan loader`: a starting PyTorch DataLoader configuration for this host
// and what its prefetch queue will hold in memory.
//
// The usual steady start, tuned from there: num_workers = half the CPU cores,
// prefetch_factor = 4, persistent_workers = True (no worker rebuild and cold
// IO every epoch), pin_memory = True (DMA from page-locked memory). Each of
// the GPU processes on the host runs its own loader, so the workers are the
// half of the cores shared among them. num_workers x prefetch_factor batches
// wait in each process's queue: with batch bytes known, the queue's memory
// (x the GPU processes) is compared with what the host (or its memory
// cgroup) still has available, and a smaller prefetch_factor, then fewer
// workers, are proposed when it would not fit.
//
// Pure arithmetic; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace stallscope {

inline constexpr int kStartPrefetchFactor = 4;  // 4 batches ahead per worker
// Below this prefetch_factor a single slow read is no longer hidden (PyTorch's
// own default is 2): shrinking the queue stops here and drops workers instead.
inline constexpr int kMinPrefetchFactor = 2;
// The queue may take at most this share of the available memory: the rest
// is the workers' own RSS (each a copy of the dataset object and a Python
// interpreter), the model's host copies and the page cache the loader reads
// through. Ours: too long a queue ends in swap; no source gives the share.
inline constexpr double kQueueShareOfAvailable = 0.5;

struct LoaderPlanInput {
  uint64_t batch_bytes = 0;            // one batch as collated (0: unknown)
  std::optional<uint64_t> batch_size;  // samples per batch, for the printed line
  int cores = 1;                       // CPUs this process may run on
  uint64_t available_bytes = 0;        // memory the job can still allocate
  int gpus = 1;                        // GPU processes (one DataLoader each) on the host
};

struct LoaderPlan {
  int num_workers = 0;  // per process
  int prefetch_factor = kStartPrefetchFactor;
  bool persistent_workers = true;
  bool pin_memory = true;
  uint64_t queue_bytes = 0;         // all processes' queues together
  uint64_t queue_budget_bytes = 0;  // kQueueShareOfAvailable of available
  bool fits = true;
  // The usual start (half the cores, prefetch 4) when it was cut to fit.
  std::optional<int> suggested_workers;
  std::optional<uint64_t> suggested_queue_bytes;
  std::vector<std::string> warnings;
  std::vector<std::string> assumptions;
};

// num_workers x prefetch_factor x batch_bytes x gpus, saturating.
uint64_t QueueBytes(int workers, int prefetch_factor, uint64_t batch_bytes, int gpus);

// InvalidArgument naming the flag when the input makes no sense.
Result<LoaderPlan> PlanLoader(const LoaderPlanInput& input);

// The line to paste: "DataLoader(dataset, batch_size=64, num_workers=8, ...)".
std::string DataLoaderLine(const LoaderPlan& plan, const LoaderPlanInput& input);

}  // namespace stallscope
