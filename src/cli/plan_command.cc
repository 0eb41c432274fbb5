// `stallscope plan memory ...` and `stallscope plan loader ...`: the planners
// of DESIGN.md. The group adds its two planners as CLI11 subcommands; each
// wires flags to the pure library in plan/ and prints with render/plan.h.
// `plan loader` reads this host's cores (sched_getaffinity) and available
// memory (MemAvailable capped by the memory cgroup) unless flags give them.
#include <fmt/format.h>
#include <sched.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "cli/commands.h"
#include "core/byte_size.h"
#include "core/file.h"
#include "core/json_text.h"
#include "core/threads.h"
#include "probe/cgroup.h"
#include "probe/meminfo.h"
#include "render/plan.h"
#include "sample/memory.h"

namespace stallscope {
namespace {

// "stallscope plan COMMAND: MESSAGE" on stderr; kExitUsage.
int Usage(const char* command, const std::string& message) {
  return Fail(fmt::format("plan {}", command), message, kExitUsage);
}

CommandRunner SetupPlanMemory(CLI::App& app) {
  struct Flags {
    std::string params, gpu_mem, dtype = "bf16", optimizer = "adam", recompute = "selective";
    int gpus = 0;
    MemoryPlanInput input;
    std::optional<int> tp, pp, zero;
    size_t top = 10;
    bool json = false;
  };
  auto f = std::make_shared<Flags>();
  ModelShape& m = f->input.model;
  app.add_option("--params", f->params, "parameters: 70B, 7.5B, 350M, 1.3e9")->required();
  app.add_option("--gpus", f->gpus, "GPUs in the job")->required();
  app.add_option("--gpu-mem", f->gpu_mem, "memory of one GPU: 80GiB, 40G (binary units)")
      ->required();
  app.add_option("--dtype", f->dtype, "bf16, fp16 (mixed precision) or fp32")
      ->capture_default_str();
  app.add_option("--optimizer", f->optimizer, "adam (adamw) or sgd (with momentum)")
      ->capture_default_str();
  app.add_option("--seq", m.seq, "sequence length")->capture_default_str();
  app.add_option("--micro-batch", m.micro_batch, "micro-batch size per GPU")->capture_default_str();
  app.add_option("--layers", m.layers, "transformer layers (default: from --params)");
  app.add_option("--hidden", m.hidden, "hidden size (default: from --params)");
  app.add_option("--heads", m.heads, "attention heads (default: hidden / 128)");
  app.add_option("--tp", f->tp, "tensor-parallel size (default: every one that fits a node)");
  app.add_option("--pp", f->pp, "pipeline-parallel size (default: every one)");
  app.add_option("--zero", f->zero, "ZeRO stage 0-3 (default: the lowest that fits)");
  app.add_option("--recompute", f->recompute, "activation recompute: none, selective or full")
      ->capture_default_str();
  app.add_option("--gpus-per-node", f->input.gpus_per_node, "GPUs per node: tp stays within one")
      ->capture_default_str();
  app.add_option("--top", f->top, "layouts to list")->capture_default_str();
  app.add_flag("--json", f->json, "machine output (stallscope.plan_memory/1)");
  return [f]() {
    MemoryPlanInput input = f->input;
    std::optional<double> params = ParseParamCount(f->params);
    if (!params)
      return Usage(
          "memory",
          fmt::format("--params {}: not a parameter count (examples: 70B, 7.5B, 350M)", f->params));
    input.model.params = *params;
    std::optional<uint64_t> mem = ParseByteSize(f->gpu_mem);
    if (!mem || *mem == 0)
      return Usage("memory",
                   fmt::format("--gpu-mem {}: not a size (examples: 80GiB, 40G)", f->gpu_mem));
    input.gpu_memory_bytes = *mem;
    std::optional<TrainDtype> dtype = ParseDtype(f->dtype);
    if (!dtype)
      return Usage("memory", fmt::format("--dtype {}: one of bf16, fp16, fp32", f->dtype));
    input.dtype = *dtype;
    std::optional<Optimizer> optimizer = ParseOptimizer(f->optimizer);
    if (!optimizer)
      return Usage("memory", fmt::format("--optimizer {}: one of adam, adamw, sgd", f->optimizer));
    input.optimizer = *optimizer;
    std::optional<Recompute> recompute = ParseRecompute(f->recompute);
    if (!recompute)
      return Usage("memory",
                   fmt::format("--recompute {}: one of none, selective, full", f->recompute));
    input.recompute = *recompute;
    input.gpus = f->gpus;
    input.tp = f->tp;
    input.pp = f->pp;
    input.zero = f->zero;
    if (f->top == 0) return Usage("memory", "--top 0: must be >= 1");
    Result<MemoryPlan> plan = PlanMemory(input);
    if (!plan.ok()) return Usage("memory", plan.status().message());
    std::string out =
        f->json ? JsonText(MemoryPlanToJson(*plan)) + "\n" : RenderMemoryPlanText(*plan, f->top);
    std::fputs(out.c_str(), stdout);
    return kExitOk;
  };
}

CommandRunner SetupPlanLoader(CLI::App& app) {
  struct Flags {
    std::string batch_bytes, sample_bytes, available;
    std::optional<uint64_t> batch_size;
    std::optional<int> cores;
    int gpus = 1;
    bool json = false;
  };
  auto f = std::make_shared<Flags>();
  app.add_option("--batch-bytes", f->batch_bytes, "bytes of one collated batch: 96MiB, 1G");
  app.add_option("--batch-size", f->batch_size, "samples per batch (with --sample-bytes)");
  app.add_option("--sample-bytes", f->sample_bytes, "bytes of one sample as a tensor: 600KiB");
  app.add_option("--cores", f->cores, "CPU cores for the job (default: this process's affinity)");
  app.add_option(
      "--available", f->available,
      "memory the job may still use (default: MemAvailable, capped by the memory cgroup)");
  app.add_option("--gpus", f->gpus, "GPU processes on this host, one DataLoader each")
      ->capture_default_str();
  app.add_flag("--json", f->json, "machine output (stallscope.plan_loader/1)");
  return [f]() {
    LoaderPlanInput input;
    input.gpus = f->gpus;
    input.batch_size = f->batch_size;
    auto size_flag = [](const char* flag, const std::string& text) -> std::optional<uint64_t> {
      std::optional<uint64_t> v = ParseByteSize(text);
      if (!v || *v == 0) {
        Usage("loader",
              fmt::format("{} {}: not a size > 0 (examples: 96MiB, 600KiB, 1G)", flag, text));
        return std::nullopt;
      }
      return v;
    };
    if (!f->batch_bytes.empty()) {
      if (!f->sample_bytes.empty())
        return Usage("loader", "--batch-bytes and --sample-bytes: give one");
      std::optional<uint64_t> v = size_flag("--batch-bytes", f->batch_bytes);
      if (!v) return kExitUsage;
      input.batch_bytes = *v;
    } else if (!f->sample_bytes.empty()) {
      if (!f->batch_size) return Usage("loader", "--sample-bytes needs --batch-size");
      std::optional<uint64_t> v = size_flag("--sample-bytes", f->sample_bytes);
      if (!v) return kExitUsage;
      if (*f->batch_size == 0) return Usage("loader", "--batch-size 0: must be >= 1");
      if (*v > UINT64_MAX / *f->batch_size)
        return Usage("loader", "--batch-size x --sample-bytes: too large");
      input.batch_bytes = *v * *f->batch_size;
    }
    if (f->batch_size && *f->batch_size == 0)
      return Usage("loader", "--batch-size 0: must be >= 1");
    if (f->cores) {
      input.cores = *f->cores;
    } else {
      input.cores = static_cast<int>(UsableCpus());
    }
    std::string source;
    if (!f->available.empty()) {
      std::optional<uint64_t> v = size_flag("--available", f->available);
      if (!v) return kExitUsage;
      input.available_bytes = *v;
      source = "--available";
    } else {
      Root root("/");
      Result<MemInfo> host = ReadMemInfo(root);
      if (!host.ok()) {
        std::fprintf(stderr, "stallscope plan loader: %s (give --available)\n",
                     host.status().message().c_str());
        return kExitCouldNotRun;
      }
      Result<CgroupMemory> cgroup = ReadCgroupMemory(root);
      CgroupMemory limits = cgroup.ok() ? *cgroup : CgroupMemory{};
      input.available_bytes = EffectiveAvailableBytes(*host, limits);
      source = limits.limit_bytes ? "MemAvailable capped by the memory cgroup" : "MemAvailable";
    }
    Result<LoaderPlan> plan = PlanLoader(input);
    if (!plan.ok()) return Usage("loader", plan.status().message());
    std::string out = f->json ? JsonText(LoaderPlanToJson(*plan, input, source)) + "\n"
                              : RenderLoaderPlanText(*plan, input, source);
    std::fputs(out.c_str(), stdout);
    return kExitOk;
  };
}

constexpr Command kPlanCommands[] = {
    {"memory", "GPU memory per GPU for a model under tp/pp/dp and ZeRO; the layouts that fit",
     SetupPlanMemory},
    {"loader", "DataLoader num_workers, prefetch_factor, pin_memory and the queue's memory",
     SetupPlanLoader},
};

}  // namespace

CommandRunner SetupPlan(CLI::App& app) {
  app.require_subcommand(0, 1);
  auto runners = std::make_shared<std::map<CLI::App*, CommandRunner>>();
  for (const Command& c : kPlanCommands) {
    CLI::App* sub = app.add_subcommand(std::string(c.name), std::string(c.summary));
    (*runners)[sub] = c.setup(*sub);
  }
  return [runners]() {
    for (auto& [sub, run] : *runners) {
      if (sub->parsed()) return run();
    }
    std::fprintf(stderr,
                 "stallscope plan: which plan? one of: memory, loader (stallscope plan --help)\n");
    return kExitUsage;
  };
}

}  // namespace stallscope
