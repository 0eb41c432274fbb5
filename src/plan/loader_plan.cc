// `plan loader` arithmetic: see loader_plan.h for where each number comes from.
#include "plan/loader_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "core/units.h"

namespace stallscope {

uint64_t QueueBytes(int workers, int prefetch_factor, uint64_t batch_bytes, int gpus) {
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  uint64_t n = static_cast<uint64_t>(std::max(workers, 0)) *
               static_cast<uint64_t>(std::max(prefetch_factor, 0)) *
               static_cast<uint64_t>(std::max(gpus, 0));
  if (n != 0 && batch_bytes > kMax / n) return kMax;
  return n * batch_bytes;
}

Result<LoaderPlan> PlanLoader(const LoaderPlanInput& in) {
  if (in.cores < 1)
    return Status::InvalidArgument(fmt::format("--cores {}: must be >= 1", in.cores));
  if (in.gpus < 1) return Status::InvalidArgument(fmt::format("--gpus {}: must be >= 1", in.gpus));
  LoaderPlan plan;
  // Half the cores, shared by the GPU processes; at least one worker each so
  // loading never runs in the training loop (num_workers=0).
  plan.num_workers = std::max(1, in.cores / 2 / in.gpus);
  auto& a = plan.assumptions;
  a.push_back(fmt::format("num_workers: half of {} cores shared by {} GPU process{}", in.cores,
                          in.gpus, in.gpus == 1 ? "" : "es"));
  a.push_back("prefetch_factor=4, persistent_workers=True, pin_memory=True: the usual start");
  if (in.batch_bytes == 0) {
    plan.warnings.push_back(
        "batch bytes unknown (give --batch-bytes or --batch-size with --sample-bytes): the "
        "prefetch queue's memory was not checked");
    return plan;
  }
  plan.queue_budget_bytes =
      static_cast<uint64_t>(static_cast<double>(in.available_bytes) * kQueueShareOfAvailable);
  auto queue = [&](int workers, int prefetch) {
    return QueueBytes(workers, prefetch, in.batch_bytes, in.gpus);
  };
  plan.queue_bytes = queue(plan.num_workers, plan.prefetch_factor);
  a.push_back(fmt::format(
      "queue: num_workers x prefetch_factor x batch ({}) x {} GPU process{}, against {:.0f}% of "
      "the {} available (the rest: workers' own RSS, page cache)",
      FormatBytes(in.batch_bytes), in.gpus, in.gpus == 1 ? "" : "es", kQueueShareOfAvailable * 100,
      FormatBytes(in.available_bytes)));
  if (plan.queue_bytes <= plan.queue_budget_bytes) return plan;

  plan.suggested_workers = plan.num_workers;
  plan.suggested_queue_bytes = plan.queue_bytes;
  // Shrink the queue depth first (down to 2), then the workers.
  while (plan.prefetch_factor > kMinPrefetchFactor &&
         queue(plan.num_workers, plan.prefetch_factor) > plan.queue_budget_bytes)
    --plan.prefetch_factor;
  while (plan.num_workers > 1 &&
         queue(plan.num_workers, plan.prefetch_factor) > plan.queue_budget_bytes)
    --plan.num_workers;
  plan.queue_bytes = queue(plan.num_workers, plan.prefetch_factor);
  plan.fits = plan.queue_bytes <= plan.queue_budget_bytes;
  plan.warnings.push_back(fmt::format(
      "the usual start ({} workers x prefetch 4) would queue {} against {} available: cut to "
      "{} workers x prefetch {} = {}",
      *plan.suggested_workers, FormatBytes(*plan.suggested_queue_bytes),
      FormatBytes(in.available_bytes), plan.num_workers, plan.prefetch_factor,
      FormatBytes(plan.queue_bytes)));
  if (!plan.fits) {
    plan.warnings.push_back(fmt::format(
        "even 1 worker x prefetch {} queues {}, over the budget of {}: batches this large need "
        "more memory or a smaller batch per GPU (gradient accumulation keeps the effective batch)",
        plan.prefetch_factor, FormatBytes(plan.queue_bytes), FormatBytes(plan.queue_budget_bytes)));
  }
  return plan;
}

std::string DataLoaderLine(const LoaderPlan& plan, const LoaderPlanInput& input) {
  std::string batch = input.batch_size ? fmt::format("batch_size={}, ", *input.batch_size) : "";
  return fmt::format(
      "DataLoader(dataset, {}num_workers={}, prefetch_factor={}, persistent_workers={}, "
      "pin_memory={})",
      batch, plan.num_workers, plan.prefetch_factor, plan.persistent_workers ? "True" : "False",
      plan.pin_memory ? "True" : "False");
}

}  // namespace stallscope
