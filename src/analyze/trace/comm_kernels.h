// One rank's communication kernels as stallscope sees them, for the
// collectives matched across ranks (collectives.h): NCCL's and RCCL's,
// and the kernels that move data between GPUs without NCCL (NVSHMEM,
// DeepEP, PyTorch's symmetric memory, vLLM's and TensorRT-LLM's custom
// all-reduce, MSCCL++). HTA's kernel-type columns stay HTA's
// (breakdown.h's KernelTypeOf); this is stallscope's own view beside
// them. docs/commands/trace.md lists each family with the source file that
// defines its kernel names.
//
// For each kernel: its times, its step, its collective (from the kernel's
// args where the trace has them, else from the name), its message size, and
// its lead-in: what the rank did between its previous collective and this
// one (GPU compute, the data loader, a blocking sync, the host otherwise),
// which names the cause when this rank is the one the others wait for. Pure;
// thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sample/trace.h"

namespace stallscope {

// Who wrote a communication kernel; nullopt: not one.
enum class CommFamily : uint8_t {
  kNccl,             // ncclKernel_*, ncclDevKernel_*; RCCL's too (mscclKernel_*)
  kSymmetricMemory,  // PyTorch's symmetric-memory collectives
  kNvshmem,          // NVSHMEM's own kernels
  kDeepEp,           // DeepEP's expert-parallel dispatch and combine
  kVllm,             // vLLM's custom all-reduce (and quick reduce, aiter's copy)
  kTensorRtLlm,      // TensorRT-LLM's custom all-reduce and MoE all-to-all, FlashInfer's ports
  kMscclpp,          // MSCCL++
};
std::optional<CommFamily> CommFamilyOf(std::string_view kernel_name);
std::string_view CommFamilyName(CommFamily family);  // "nccl", "symmetric_memory", ...

// A collective's name in one spelling: "allreduce", "allgather",
// "reducescatter", "alltoall", "broadcast", "reduce", "sendrecv", "barrier";
// from the args' "Collective name" or from an NCCL kernel's name
// (ncclKernel_AllReduce_...); "" when neither says (ncclDevKernel_Generic).
// "p2p" for the args' send and recv: two ranks, never matched across all.
std::string CollectiveOf(std::string_view args_name, std::string_view kernel_name);

// Bytes of one element of the args' dtype ("Float", "BFloat16", ...) or,
// without one, of the type an NCCL kernel's name ends in (_float, _f32,
// _bf16, _int8_t, ...); 0 unknown.
int DtypeBytes(std::string_view args_dtype, std::string_view kernel_name);

// nccl-tests' bus-bandwidth factor of a collective over n ranks (allreduce
// 2(n-1)/n; allgather, reducescatter, alltoall (n-1)/n; others 1).
double BusBandwidthFactor(std::string_view collective, int n);

// What a rank did from its previous collective's end (or its step's start)
// to this collective's start, on its own clock.
struct CommLeadIn {
  double from_us = 0;     // the window's start
  double compute_us = 0;  // compute kernels running
  double loader_us = 0;   // the data loader's __next__ running
  double sync_us = 0;     // a blocking sync running
  double host_us = 0;     // the GPU idle with neither: the host had not launched it
  std::string longest_kernel;
  double longest_kernel_us = 0;
  std::string longest_cpu_op;  // the longest CPU op inside the window
  double longest_cpu_op_us = 0;
  std::string sync_op;  // the longest sync in the window
};

struct CommKernelUse {
  double start = 0, end = 0;  // HTA's rounded times, the rank's clock
  int stream = 0;
  int64_t step = -1;  // the ProfilerStep its launch is in; -1: none
  std::string name;
  CommFamily family = CommFamily::kNccl;
  std::string group;        // the process group's name; "" where the args give none
  std::string group_ranks;  // its ranks as written ("[0, 1]")
  int group_size = -1;
  std::string collective;  // CollectiveOf
  int64_t bytes = -1;      // the message: max(in, out) elements x dtype; -1 unknown
  CommLeadIn lead_in;
  std::vector<std::pair<double, double>> compute_within;  // compute kernels over it, clipped
};

// What the breakdown hands over: its kept rows and steps, and the merged
// spans of GPU rows, the loader and syncs.
struct TimeSpan {
  double start = 0;
  double end = 0;
};
struct KeptGpuRow {
  double start = 0;
  double end = 0;
  const TraceEvent* event = nullptr;
  double launch = std::numeric_limits<double>::quiet_NaN();  // the CPU launch's start
};
struct KeptStep {
  int64_t number = 0;
  double start = 0, end = 0;
};
struct CommKernelInputs {
  const std::vector<KeptGpuRow>* rows = nullptr;
  const std::vector<KeptStep>* steps = nullptr;  // by start
  const std::vector<TimeSpan>* busy = nullptr;
  const std::vector<TimeSpan>* loader = nullptr;
  const std::vector<TimeSpan>* sync = nullptr;
  std::function<bool(double)> cpu_kept;  // a CPU row's start kept
  bool round = false;                    // HTA's rounding of fractional times
};

// Spans merged as HTA merges rows: sorted by start, one joins the span
// before while it starts at or before its end (touching spans merge).
std::vector<TimeSpan> MergedSpans(std::vector<TimeSpan> spans);
// Their summed length (merged spans).
double Length(const std::vector<TimeSpan>& merged);
// The length both cover (each merged and sorted).
double IntersectionLength(const std::vector<TimeSpan>& a, const std::vector<TimeSpan>& b);
// The part of [lo, hi) that `merged` (merged and sorted spans) covers.
double CoveredIn(const std::vector<TimeSpan>& merged, double lo, double hi);

// The rank's communication kernels among the kept rows, by start.
std::vector<CommKernelUse> CollectCommKernels(const TraceFile& trace, const CommKernelInputs& in);

// Per kernel name: how many and how long, stallscope's view.
struct CommKernelTotal {
  std::string name;
  CommFamily family = CommFamily::kNccl;
  uint64_t count = 0;
  double sum_us = 0;
};
std::vector<CommKernelTotal> CommKernelTotals(const std::vector<CommKernelUse>& kernels);

}  // namespace stallscope
