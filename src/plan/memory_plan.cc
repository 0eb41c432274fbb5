// `plan memory` arithmetic: see memory_plan.h for the sources of each formula.
#include "plan/memory_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <tuple>

#include "core/text.h"
#include "core/units.h"

namespace stallscope {
namespace {

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Highest ZeRO stage DeepSpeed runs with pipeline parallelism: stages 2 and 3
// shard what the pipeline's micro-batches still accumulate into, so only the
// optimizer-state sharding (stage 1, Megatron's distributed optimizer) combines.
constexpr int kMaxZeroWithPipeline = 1;

}  // namespace

StateBytes BytesPerParameter(TrainDtype dtype, Optimizer optimizer) {
  if (dtype == TrainDtype::kFp32) {
    // No master copy: Adam keeps momentum and variance, SGD momentum.
    return {4, 4, optimizer == Optimizer::kAdam ? 8.0 : 4.0};
  }
  // Mixed precision: 16-bit weights and gradients, an fp32 master copy plus
  // the optimizer's fp32 moments (ZeRO paper: K = 12 for Adam).
  return {2, 2, optimizer == Optimizer::kAdam ? 12.0 : 8.0};
}

GpuMemory ModelStates(double params, const StateBytes& per_param, int tp, int pp, int dp,
                      int zero) {
  GpuMemory m;
  m.tp = tp;
  m.pp = pp;
  m.dp = dp;
  m.zero = zero;
  double shard = params / (static_cast<double>(tp) * pp);
  double d = dp;
  m.weights = shard * per_param.weights / (zero >= 3 ? d : 1);
  m.gradients = shard * per_param.gradients / (zero >= 2 ? d : 1);
  m.optimizer = shard * per_param.optimizer / (zero >= 1 ? d : 1);
  return m;
}

double LayerActivationBytes(const ModelShape& shape, int tp, Recompute recompute) {
  double s = shape.seq, b = shape.micro_batch, h = shape.hidden, a = shape.heads, t = tp;
  double sbh = s * b * h;
  switch (recompute) {
    case Recompute::kNone:
      return sbh * (34 + 5 * a * s / h) / t;
    case Recompute::kSelective:
      return sbh * 34 / t;
    case Recompute::kFull:
      return sbh * 2 / t;
  }
  return 0;
}

double ActivationBytesPerGpu(const ModelShape& shape, int tp, Recompute recompute) {
  return LayerActivationBytes(shape, tp, recompute) * shape.layers;
}

ModelShape CompleteShape(ModelShape shape) {
  if (shape.params <= 0) return shape;
  auto round_hidden = [](double h) {
    return std::max(1024, static_cast<int>(std::lround(h / 1024)) * 1024);
  };
  if (shape.layers <= 0 && shape.hidden <= 0) {
    shape.shape_assumed = true;
    double layers = std::cbrt(shape.params / (12.0 * 128 * 128));
    shape.hidden = round_hidden(128 * layers);
  } else if (shape.hidden <= 0) {
    shape.shape_assumed = true;
    shape.hidden = round_hidden(std::sqrt(shape.params / (12.0 * shape.layers)));
  }
  if (shape.layers <= 0) {
    shape.shape_assumed = true;
    double h = shape.hidden;
    shape.layers = std::max(1, static_cast<int>(std::lround(shape.params / (12 * h * h))));
  }
  if (shape.heads <= 0) {
    shape.shape_assumed = true;
    shape.heads = std::max(1, shape.hidden / 128);
  }
  return shape;
}

Result<MemoryPlan> PlanMemory(const MemoryPlanInput& raw) {
  auto bad = [](std::string what) { return Status::InvalidArgument(std::move(what)); };
  if (!(raw.model.params > 0)) return bad("--params: must be > 0 (e.g. 70B)");
  if (raw.gpus < 1) return bad(fmt::format("--gpus {}: must be >= 1", raw.gpus));
  if (raw.gpu_memory_bytes == 0) return bad("--gpu-mem: must be > 0 (e.g. 80GiB)");
  if (raw.model.seq < 1) return bad(fmt::format("--seq {}: must be >= 1", raw.model.seq));
  if (raw.model.micro_batch < 1)
    return bad(fmt::format("--micro-batch {}: must be >= 1", raw.model.micro_batch));
  if (raw.model.layers < 0) return bad(fmt::format("--layers {}: must be >= 1", raw.model.layers));
  if (raw.model.hidden < 0) return bad(fmt::format("--hidden {}: must be >= 1", raw.model.hidden));
  if (raw.model.heads < 0) return bad(fmt::format("--heads {}: must be >= 1", raw.model.heads));
  if (raw.gpus_per_node < 1)
    return bad(fmt::format("--gpus-per-node {}: must be >= 1", raw.gpus_per_node));
  if (raw.tp && (*raw.tp < 1 || raw.gpus % *raw.tp != 0))
    return bad(fmt::format("--tp {}: must divide --gpus {}", *raw.tp, raw.gpus));
  if (raw.pp && (*raw.pp < 1 || raw.gpus % *raw.pp != 0))
    return bad(fmt::format("--pp {}: must divide --gpus {}", *raw.pp, raw.gpus));
  if (raw.tp && raw.pp && raw.gpus % (*raw.tp * *raw.pp) != 0)
    return bad(fmt::format("--tp {} x --pp {}: must divide --gpus {}", *raw.tp, *raw.pp, raw.gpus));
  if (raw.zero && (*raw.zero < 0 || *raw.zero > 3))
    return bad(fmt::format("--zero {}: must be 0, 1, 2 or 3", *raw.zero));

  MemoryPlan plan;
  plan.input = raw;
  ModelShape& shape = plan.input.model;
  shape = CompleteShape(shape);
  if (raw.tp && shape.heads % *raw.tp != 0)
    return bad(fmt::format("--tp {}: must divide the {} attention heads", *raw.tp, shape.heads));
  if (raw.pp && *raw.pp > shape.layers)
    return bad(fmt::format("--pp {}: more stages than the {} layers", *raw.pp, shape.layers));
  plan.usable_bytes = static_cast<double>(raw.gpu_memory_bytes) * (1 - kGpuMemoryReserveFraction);
  StateBytes per_param = BytesPerParameter(raw.dtype, raw.optimizer);

  // The first component at which the running total passes the budget.
  auto judge = [&](GpuMemory& m) {
    m.fits = m.Total() <= plan.usable_bytes;
    m.over_budget.clear();
    for (const char* part : kParts) {
      if (!m.fits && TotalThrough(m, part) > plan.usable_bytes) {
        m.over_budget = part;
        break;
      }
    }
  };
  // Unsharded, one replica per GPU: its states are the model's states.
  plan.data_parallel = ModelStates(shape.params, per_param, 1, 1, raw.gpus, 0);
  plan.data_parallel.activations = ActivationBytesPerGpu(shape, 1, raw.recompute);
  plan.model_states_bytes = TotalThrough(plan.data_parallel, "optimizer");
  judge(plan.data_parallel);

  for (int tp = 1; tp <= raw.gpus; ++tp) {
    if (raw.gpus % tp != 0 || (raw.tp && tp != *raw.tp)) continue;
    if (!raw.tp && (tp > raw.gpus_per_node || shape.heads % tp != 0)) continue;
    for (int pp = 1; tp * pp <= raw.gpus; ++pp) {
      if (raw.gpus % (tp * pp) != 0 || (raw.pp && pp != *raw.pp)) continue;
      if (!raw.pp && pp > shape.layers) continue;
      int dp = raw.gpus / (tp * pp);
      double activations = ActivationBytesPerGpu(shape, tp, raw.recompute);
      std::optional<GpuMemory> chosen;
      for (int zero = 0; zero <= 3; ++zero) {
        if (raw.zero && zero != *raw.zero) continue;
        if (!raw.zero && pp > 1 && zero > kMaxZeroWithPipeline) break;
        // Sharding over one replica changes nothing: plain data parallel.
        if (!raw.zero && dp == 1 && zero > 0) break;
        GpuMemory m = ModelStates(shape.params, per_param, tp, pp, dp, zero);
        m.activations = activations;
        judge(m);
        chosen = m;
        if (m.fits) break;  // the lowest stage that fits
      }
      if (chosen) plan.layouts.push_back(*chosen);
    }
  }
  std::stable_sort(
      plan.layouts.begin(), plan.layouts.end(), [](const GpuMemory& x, const GpuMemory& y) {
        auto key = [](const GpuMemory& m) {
          // Not fitting: least memory first, the nearest miss.
          return std::make_tuple(!m.fits, m.fits ? m.tp * m.pp : 0, m.fits ? m.zero : 0,
                                 m.fits ? m.pp : 0, m.fits ? 0.0 : m.Total());
        };
        return key(x) < key(y);
      });

  auto& notes = plan.assumptions;
  notes.push_back(
      fmt::format("model states per parameter: {} weights + {} gradients + {} optimizer = {} bytes "
                  "({} {}; ZeRO paper, K = {})",
                  per_param.weights, per_param.gradients, per_param.optimizer,
                  per_param.weights + per_param.gradients + per_param.optimizer,
                  DtypeName(raw.dtype), OptimizerName(raw.optimizer), per_param.optimizer));
  notes.push_back(fmt::format(
      "shape: {} layers, hidden {}, {} heads, seq {}, micro-batch {}{}", shape.layers, shape.hidden,
      shape.heads, shape.seq, shape.micro_batch,
      shape.shape_assumed ? " (assumed from --params with GPT-3's proportions P = 12*L*h^2, "
                            "h ~ 128*L; give --layers --hidden --heads for your model)"
                          : ""));
  notes.push_back(fmt::format(
      "activations: s*b*h*(34 + 5*a*s/h) bytes per layer (Korthikanti et al. 2022), /tp with "
      "sequence parallelism, recompute {}: {} per layer at tp=1 (none {}, selective {}, full "
      "{}); 1F1B: the first stage holds all layers' worth",
      RecomputeName(raw.recompute), FormatBytes(LayerActivationBytes(shape, 1, raw.recompute)),
      FormatBytes(LayerActivationBytes(shape, 1, Recompute::kNone)),
      FormatBytes(LayerActivationBytes(shape, 1, Recompute::kSelective)),
      FormatBytes(LayerActivationBytes(shape, 1, Recompute::kFull))));
  notes.push_back(fmt::format(
      "usable per GPU: {} of {} ({:.0f}% kept for CUDA context, NCCL buffers, fragmentation)",
      FormatBytes(plan.usable_bytes), FormatBytes(raw.gpu_memory_bytes),
      kGpuMemoryReserveFraction * 100));
  notes.push_back(fmt::format(
      "layouts: tp <= {} GPUs per node and divides the heads; pp <= layers; ZeRO 2/3 only "
      "without pipeline parallelism; embeddings, buffers and pipeline imbalance not counted",
      raw.gpus_per_node));
  notes.push_back(
      "best first: fewest GPUs per model replica (tp x pp), then the lowest ZeRO stage, then "
      "tensor before pipeline parallelism (Narayanan et al. 2021)");
  return plan;
}

double TotalThrough(const GpuMemory& m, std::string_view part) {
  const double parts[] = {m.weights, m.gradients, m.optimizer, m.activations};
  double sum = 0;
  for (size_t i = 0; i < std::size(parts); ++i) {
    sum += parts[i];
    if (part == kParts[i]) return sum;
  }
  return sum;
}

std::optional<double> ParseParamCount(std::string_view text) {
  text = Trim(text);
  if (text.empty()) return std::nullopt;
  double scale = 1;
  switch (std::tolower(static_cast<unsigned char>(text.back()))) {
    case 'k':
      scale = 1e3;
      break;
    case 'm':
      scale = 1e6;
      break;
    case 'b':
    case 'g':
      scale = 1e9;
      break;
    case 't':
      scale = 1e12;
      break;
    default:
      break;
  }
  if (scale != 1) text.remove_suffix(1);
  if (text.empty() ||
      !(std::isdigit(static_cast<unsigned char>(text.front())) || text.front() == '.'))
    return std::nullopt;
  std::optional<double> value = ParseDouble(text);
  if (!value || !std::isfinite(*value) || *value <= 0) return std::nullopt;
  double params = *value * scale;
  if (!std::isfinite(params) || params > 1e16) return std::nullopt;
  return params;
}

std::optional<TrainDtype> ParseDtype(std::string_view text) {
  std::string t = Lower(text);
  if (t == "bf16" || t == "bfloat16") return TrainDtype::kBf16;
  if (t == "fp16" || t == "float16" || t == "half") return TrainDtype::kFp16;
  if (t == "fp32" || t == "float32" || t == "float") return TrainDtype::kFp32;
  return std::nullopt;
}

std::optional<Optimizer> ParseOptimizer(std::string_view text) {
  std::string t = Lower(text);
  if (t == "adam" || t == "adamw") return Optimizer::kAdam;
  if (t == "sgd") return Optimizer::kSgd;
  return std::nullopt;
}

std::optional<Recompute> ParseRecompute(std::string_view text) {
  std::string t = Lower(text);
  if (t == "none") return Recompute::kNone;
  if (t == "selective") return Recompute::kSelective;
  if (t == "full") return Recompute::kFull;
  return std::nullopt;
}

std::string_view DtypeName(TrainDtype dtype) {
  switch (dtype) {
    case TrainDtype::kBf16:
      return "bf16";
    case TrainDtype::kFp16:
      return "fp16";
    case TrainDtype::kFp32:
      return "fp32";
  }
  return "?";
}

std::string_view OptimizerName(Optimizer optimizer) {
  return optimizer == Optimizer::kAdam ? "adam" : "sgd";
}

std::string_view RecomputeName(Recompute recompute) {
  switch (recompute) {
    case Recompute::kNone:
      return "none";
    case Recompute::kSelective:
      return "selective";
    case Recompute::kFull:
      return "full";
  }
  return "?";
}

}  // namespace stallscope
