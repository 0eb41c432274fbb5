// `plan memory`: how many bytes of GPU memory a transformer's training needs
// per GPU under tensor (tp), pipeline (pp) and data (dp) parallelism and the
// ZeRO stages, and which (tp, pp, dp) layouts fit in a given GPU's memory.
//
// Model states are counted as the ZeRO paper does (Rajbhandari et al. 2020,
// section 3.1): mixed-precision Adam keeps 2 bytes of fp16/bf16 weights,
// 2 of gradients and K = 12 of optimizer state (fp32 master copy, momentum,
// variance) per parameter, 16 in all. ZeRO stage 1 shards the optimizer
// state over dp, stage 2 also the gradients, stage 3 also the weights.
// Activations follow Korthikanti et al. 2022 ("Reducing Activation
// Recomputation in Large Transformer Models", eq. 1-5): s*b*h*(34 + 5*a*s/h)
// bytes per layer without parallelism; with tensor + sequence parallelism
// divided by tp; selective recompute drops the 5*a*s/h attention term; full
// recompute keeps only each layer's 2*s*b*h input. Under 1F1B pipelining the
// first stage holds p micro-batches of L/p layers: L layers' worth, whatever p.
//
// Pure arithmetic; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace stallscope {

enum class TrainDtype { kBf16, kFp16, kFp32 };
enum class Optimizer { kAdam, kSgd };
enum class Recompute { kNone, kSelective, kFull };

// GPU memory the plan leaves for the CUDA context, NCCL buffers, the caching
// allocator's fragmentation and temporaries. Our estimate: PyTorch's CUDA
// context alone takes 0.5-1 GiB and fragmentation commonly another 5-10%.
inline constexpr double kGpuMemoryReserveFraction = 0.10;
// Tensor parallelism beyond one node's NVLink domain costs more than it
// saves (Narayanan et al. 2021, "Efficient Large-Scale Language Model
// Training on GPU Clusters", takeaway 1): layouts keep tp <= GPUs per node.
inline constexpr int kDefaultGpusPerNode = 8;

struct ModelShape {
  double params = 0;  // total parameters
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int seq = 2048;
  int micro_batch = 1;
  bool shape_assumed = false;  // layers/hidden/heads derived from params
};

struct MemoryPlanInput {
  ModelShape model;
  int gpus = 1;
  uint64_t gpu_memory_bytes = 0;
  TrainDtype dtype = TrainDtype::kBf16;
  Optimizer optimizer = Optimizer::kAdam;
  Recompute recompute = Recompute::kSelective;
  int gpus_per_node = kDefaultGpusPerNode;
  // Fixed by the user, or nullopt: every value is tried.
  std::optional<int> tp, pp, zero;
};

// Bytes per parameter of each model state, as the ZeRO paper counts them.
struct StateBytes {
  double weights = 0, gradients = 0, optimizer = 0;
};
StateBytes BytesPerParameter(TrainDtype dtype, Optimizer optimizer);

struct GpuMemory {
  int tp = 1, pp = 1, dp = 1, zero = 0;
  double weights = 0, gradients = 0, optimizer = 0, activations = 0;
  double Total() const { return weights + gradients + optimizer + activations; }
  bool fits = false;
  // Where it does not fit: the first component at which the running total
  // (weights, + gradients, + optimizer, + activations) passes the usable
  // memory: "weights", "gradients", "optimizer" or "activations"; empty
  // when it fits.
  std::string over_budget;
};

// A layout's parts in the order they are added up.
inline constexpr const char* kParts[] = {"weights", "gradients", "optimizer", "activations"};

// The running total of m's parts in order (weights, gradients, optimizer,
// activations) up to and including `part`; the whole for an unknown part.
double TotalThrough(const GpuMemory& m, std::string_view part);

// Model-state bytes on one GPU: params/(tp*pp) per GPU, then ZeRO over dp.
GpuMemory ModelStates(double params, const StateBytes& per_param, int tp, int pp, int dp, int zero);

// Activation bytes of one transformer layer for one micro-batch on one GPU
// (16-bit activations; tp > 1 assumes sequence parallelism).
double LayerActivationBytes(const ModelShape& shape, int tp, Recompute recompute);
// All layers' worth, as the first pipeline stage holds under 1F1B.
double ActivationBytesPerGpu(const ModelShape& shape, int tp, Recompute recompute);

// Fills layers/hidden/heads from params where they are 0, with GPT-3's
// proportions: P = 12*L*h^2, h = 128*L, heads = h/128, h a multiple of 128.
ModelShape CompleteShape(ModelShape shape);

struct MemoryPlan {
  MemoryPlanInput input;          // with the shape completed
  double usable_bytes = 0;        // gpu memory minus the reserve
  double model_states_bytes = 0;  // bytes per parameter x parameters: data_parallel's states
  // Plain data parallelism (tp = pp = 1, ZeRO 0, every GPU a replica): the
  // layout the others are measured against, listed whether it fits or not.
  GpuMemory data_parallel;
  std::vector<GpuMemory> layouts;  // every layout tried, best first; fits first
  std::vector<std::string> assumptions;
};

// InvalidArgument naming the flag when the input cannot be planned.
Result<MemoryPlan> PlanMemory(const MemoryPlanInput& input);

// "70B", "7.5B", "350M", "1.3e9", "175000000000", "1T" -> parameters
// (decimal: K 1e3, M 1e6, B or G 1e9, T 1e12; case-insensitive).
std::optional<double> ParseParamCount(std::string_view text);
std::optional<TrainDtype> ParseDtype(std::string_view text);
std::optional<Optimizer> ParseOptimizer(std::string_view text);
std::optional<Recompute> ParseRecompute(std::string_view text);
std::string_view DtypeName(TrainDtype dtype);
std::string_view OptimizerName(Optimizer optimizer);
std::string_view RecomputeName(Recompute recompute);

}  // namespace stallscope
