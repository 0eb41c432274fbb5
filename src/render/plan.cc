// `plan memory` and `plan loader` text and JSON; see plan.h.
#include "render/plan.h"

#include <fmt/format.h>

#include "core/units.h"
#include "core/version.h"

namespace stallscope {
namespace {

std::string Bytes(double bytes) { return FormatBytes(static_cast<uint64_t>(bytes + 0.5)); }

std::string ParamsText(double params) {
  if (params >= 1e12) return fmt::format("{:g}T", params / 1e12);
  if (params >= 1e9) return fmt::format("{:g}B", params / 1e9);
  if (params >= 1e6) return fmt::format("{:g}M", params / 1e6);
  return fmt::format("{:g}", params);
}

// "the weights alone (130.4 GiB) pass the 72.0 GiB usable", "with the
// optimizer, the running total comes to 111.8 GiB of the 72.0 GiB usable".
std::string WhyNot(const GpuMemory& m, const MemoryPlan& plan) {
  if (m.over_budget == "weights") {
    return fmt::format("the weights alone ({}) pass the {} usable", Bytes(m.weights),
                       Bytes(plan.usable_bytes));
  }
  return fmt::format("with the {}, the running total comes to {} of the {} usable", m.over_budget,
                     Bytes(TotalThrough(m, m.over_budget)), Bytes(plan.usable_bytes));
}

nlohmann::ordered_json LayoutJson(const GpuMemory& m) {
  return {{"tp", m.tp},
          {"pp", m.pp},
          {"dp", m.dp},
          {"zero", m.zero},
          {"weights_bytes", m.weights},
          {"gradients_bytes", m.gradients},
          {"optimizer_bytes", m.optimizer},
          {"activations_bytes", m.activations},
          {"total_bytes", m.Total()},
          {"fits", m.fits},
          {"over_budget",
           m.fits ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(m.over_budget)}};
}

}  // namespace

std::string RenderMemoryPlanText(const MemoryPlan& plan, size_t rows) {
  const MemoryPlanInput& in = plan.input;
  std::string out = fmt::format(
      "plan memory: {} parameters on {} GPUs of {} ({} usable), {}, {}, recompute {}\n\n",
      ParamsText(in.model.params), in.gpus, FormatBytes(in.gpu_memory_bytes),
      Bytes(plan.usable_bytes), DtypeName(in.dtype), OptimizerName(in.optimizer),
      RecomputeName(in.recompute));
  // Plain data parallelism shards nothing: its states are the model's.
  const GpuMemory& dp = plan.data_parallel;
  out += fmt::format(
      "model states: {} parameters x {:g} bytes = {} in all, before any sharding (weights {}, "
      "gradients {}, optimizer {})\n",
      ParamsText(in.model.params), plan.model_states_bytes / in.model.params,
      Bytes(plan.model_states_bytes), Bytes(dp.weights), Bytes(dp.gradients), Bytes(dp.optimizer));
  out += fmt::format("plain data parallel (tp 1, pp 1, dp {}, ZeRO 0): {} per GPU, {}\n\n", dp.dp,
                     Bytes(dp.Total()),
                     dp.fits ? "fits" : fmt::format("does not fit: {}", WhyNot(dp, plan)));
  size_t fitting = 0;
  for (const GpuMemory& m : plan.layouts) fitting += m.fits ? 1 : 0;
  if (fitting == 0) {
    out +=
        "no layout fits: the nearest misses, least memory first. More GPUs, a higher ZeRO "
        "stage, --recompute full or a smaller --micro-batch would help.\n";
  } else {
    out += fmt::format("{} of {} layouts fit, best first:\n", fitting, plan.layouts.size());
  }
  out += fmt::format("  {:>3} {:>3} {:>4} {:>4} {:>11} {:>11} {:>11} {:>11} {:>11}  {:<11}  {}\n",
                     "tp", "pp", "dp", "zero", "weights", "gradients", "optimizer", "activations",
                     "total", "over at", "fits");
  size_t shown = 0;
  for (const GpuMemory& m : plan.layouts) {
    if (shown == rows) break;
    if (fitting > 0 && !m.fits) break;  // when some fit, list only those
    ++shown;
    out += fmt::format("  {:>3} {:>3} {:>4} {:>4} {:>11} {:>11} {:>11} {:>11} {:>11}  {:<11}  {}\n",
                       m.tp, m.pp, m.dp, m.zero, Bytes(m.weights), Bytes(m.gradients),
                       Bytes(m.optimizer), Bytes(m.activations), Bytes(m.Total()),
                       m.fits ? "-" : m.over_budget, m.fits ? "yes" : "no");
  }
  size_t listable = fitting > 0 ? fitting : plan.layouts.size();
  if (listable > shown)
    out += fmt::format("  ... {} more (--top {})\n", listable - shown, listable);
  out += "\nassumptions:\n";
  for (const std::string& a : plan.assumptions) out += "  - " + a + "\n";
  return out;
}

nlohmann::ordered_json MemoryPlanToJson(const MemoryPlan& plan) {
  using json = nlohmann::ordered_json;
  const MemoryPlanInput& in = plan.input;
  json out;
  out["schema"] = "stallscope.plan_memory/1";
  out["version"] = Version();
  out["input"] = {{"params", in.model.params},
                  {"layers", in.model.layers},
                  {"hidden", in.model.hidden},
                  {"heads", in.model.heads},
                  {"seq", in.model.seq},
                  {"micro_batch", in.model.micro_batch},
                  {"shape_assumed", in.model.shape_assumed},
                  {"gpus", in.gpus},
                  {"gpu_memory_bytes", in.gpu_memory_bytes},
                  {"dtype", DtypeName(in.dtype)},
                  {"optimizer", OptimizerName(in.optimizer)},
                  {"recompute", RecomputeName(in.recompute)},
                  {"gpus_per_node", in.gpus_per_node}};
  out["usable_bytes_per_gpu"] = plan.usable_bytes;
  out["model_states_bytes"] = plan.model_states_bytes;
  out["data_parallel"] = LayoutJson(plan.data_parallel);
  json layouts = json::array();
  for (const GpuMemory& m : plan.layouts) layouts.push_back(LayoutJson(m));
  out["layouts"] = layouts;
  out["assumptions"] = plan.assumptions;
  return out;
}

std::string RenderLoaderPlanText(const LoaderPlan& plan, const LoaderPlanInput& in,
                                 const std::string& available_source) {
  std::string out = fmt::format("plan loader: {} cores, {} available ({}), {} GPU process{}{}\n\n",
                                in.cores, FormatBytes(in.available_bytes), available_source,
                                in.gpus, in.gpus == 1 ? "" : "es",
                                in.batch_bytes ? ", batch " + FormatBytes(in.batch_bytes) : "");
  out += fmt::format("  {:<19} {}  (per GPU process)\n", "num_workers", plan.num_workers);
  out += fmt::format("  {:<19} {}\n", "prefetch_factor", plan.prefetch_factor);
  out += fmt::format("  {:<19} {}\n", "persistent_workers",
                     plan.persistent_workers ? "True" : "False");
  out += fmt::format("  {:<19} {}\n", "pin_memory", plan.pin_memory ? "True" : "False");
  if (in.batch_bytes) {
    out += fmt::format(
        "  {:<19} {} ({} worker{} x {} x {} x {} GPU process{}) against a budget of {}{}\n",
        "prefetch queue", FormatBytes(plan.queue_bytes), plan.num_workers,
        plan.num_workers == 1 ? "" : "s", plan.prefetch_factor, FormatBytes(in.batch_bytes),
        in.gpus, in.gpus == 1 ? "" : "es", FormatBytes(plan.queue_budget_bytes),
        plan.fits ? "" : "  DOES NOT FIT");
  }
  out += "\n" + DataLoaderLine(plan, in) + "\n";
  if (!plan.warnings.empty()) out += "\n";
  for (const std::string& w : plan.warnings) out += "warning: " + w + "\n";
  out += "\nassumptions:\n";
  for (const std::string& a : plan.assumptions) out += "  - " + a + "\n";
  return out;
}

nlohmann::ordered_json LoaderPlanToJson(const LoaderPlan& plan, const LoaderPlanInput& in,
                                        const std::string& available_source) {
  using json = nlohmann::ordered_json;
  json out;
  out["schema"] = "stallscope.plan_loader/1";
  out["version"] = Version();
  out["input"] = {{"batch_bytes", in.batch_bytes},
                  {"batch_size", in.batch_size ? json(*in.batch_size) : json(nullptr)},
                  {"cores", in.cores},
                  {"available_bytes", in.available_bytes},
                  {"available_source", available_source},
                  {"gpus", in.gpus}};
  out["num_workers"] = plan.num_workers;
  out["prefetch_factor"] = plan.prefetch_factor;
  out["persistent_workers"] = plan.persistent_workers;
  out["pin_memory"] = plan.pin_memory;
  out["queue_bytes"] = plan.queue_bytes;
  out["queue_budget_bytes"] = plan.queue_budget_bytes;
  out["fits"] = plan.fits;
  out["suggested_workers"] = plan.suggested_workers ? json(*plan.suggested_workers) : json(nullptr);
  out["suggested_queue_bytes"] =
      plan.suggested_queue_bytes ? json(*plan.suggested_queue_bytes) : json(nullptr);
  out["dataloader"] = DataLoaderLine(plan, in);
  out["warnings"] = plan.warnings;
  out["assumptions"] = plan.assumptions;
  return out;
}

}  // namespace stallscope
