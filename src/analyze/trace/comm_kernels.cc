// One rank's communication kernels: see comm_kernels.h.
#include "analyze/trace/comm_kernels.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <unordered_map>

#include "core/text.h"

namespace stallscope {
namespace {

bool Contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// The kernel names of each family, as the source that defines them spells
// them (docs/commands/trace.md names the files).
struct FamilyPattern {
  CommFamily family;
  std::string_view part;  // found anywhere in the (demangled) name
};
constexpr std::array kFamilyPatterns = {
    // PyTorch: torch/csrc/distributed/c10d/symm_mem/CUDASymmetricMemoryOps.cu,
    // CUDASymmetricMemory.cu, nvshmem_extension.cu, nccl_extension.cu
    FamilyPattern{CommFamily::kSymmetricMemory, "(anonymous namespace)::multimem_"},
    FamilyPattern{CommFamily::kSymmetricMemory,
                  "(anonymous namespace)::one_shot_all_reduce_kernel<"},
    FamilyPattern{CommFamily::kSymmetricMemory,
                  "(anonymous namespace)::two_shot_all_reduce_kernel"},
    FamilyPattern{CommFamily::kSymmetricMemory,
                  "(anonymous namespace)::tile_reduce_scatter_kernel<"},
    FamilyPattern{CommFamily::kSymmetricMemory, "(anonymous namespace)::mark_tile_signals_kernel<"},
    FamilyPattern{CommFamily::kSymmetricMemory, "c10d::symmetric_memory::"},
    FamilyPattern{CommFamily::kSymmetricMemory, "c10d::nvshmem_extension::"},
    FamilyPattern{CommFamily::kSymmetricMemory, "c10d::nccl_extension::"},
    // NVSHMEM: src/include/internal/non_abi/nvshmemi_h_to_d_{coll,rma,sync}_defs.cuh
    FamilyPattern{CommFamily::kNvshmem, "_on_stream_kernel"},
    FamilyPattern{CommFamily::kNvshmem, "nvshmemi_proxy_"},
    FamilyPattern{CommFamily::kNvshmem, "nvshmemi_signal_op_kernel"},
    // DeepEP: csrc/kernels/{intranode,internode,internode_ll}.cu (legacy/ at HEAD)
    FamilyPattern{CommFamily::kDeepEp, "deep_ep::"},
    // vLLM: csrc/custom_all_reduce.cuh, custom_all_gather_reduce_scatter.cuh,
    // quickreduce/quick_reduce.h; ROCm aiter's copy
    FamilyPattern{CommFamily::kVllm, "vllm::cross_device_"},
    FamilyPattern{CommFamily::kVllm, "vllm::mnnvl_lamport_"},
    FamilyPattern{CommFamily::kVllm, "quickreduce::allreduce_prototype_"},
    FamilyPattern{CommFamily::kVllm, "aiter::cross_device_reduce_"},
    // TensorRT-LLM: cpp/tensorrt_llm/kernels/customAllReduceKernels.cu,
    // communicationKernels/; FlashInfer's ports: include/flashinfer/comm/
    FamilyPattern{CommFamily::kTensorRtLlm, "oneShotAllReduceKernel<"},
    FamilyPattern{CommFamily::kTensorRtLlm, "twoShotAllReduceKernel<"},
    FamilyPattern{CommFamily::kTensorRtLlm, "all_reduce_norm_kernel<"},
    FamilyPattern{CommFamily::kTensorRtLlm, "allreduce_fusion_kernel_"},
    FamilyPattern{CommFamily::kTensorRtLlm, "mnnvl::twoshot_allreduce_kernel"},
    FamilyPattern{CommFamily::kTensorRtLlm, "moeA2ADispatchKernel"},
    FamilyPattern{CommFamily::kTensorRtLlm, "moeA2ACombineKernel"},
    FamilyPattern{CommFamily::kTensorRtLlm, "flashinfer::trtllm_allreduce_fusion::"},
    FamilyPattern{CommFamily::kTensorRtLlm, "flashinfer::trtllm_mnnvl_allreduce::"},
    FamilyPattern{CommFamily::kTensorRtLlm, "flashinfer::trtllm_moe_allreduce_fusion::"},
    FamilyPattern{CommFamily::kTensorRtLlm, "flashinfer::trtllm_alltoall::"},
    FamilyPattern{CommFamily::kTensorRtLlm, "flashinfer::mixed_comm::"},
    FamilyPattern{CommFamily::kTensorRtLlm, "flashinfer::comm::"},
    // MSCCL++: src/core/include/execution_kernel.hpp, src/ext/collectives/
    FamilyPattern{CommFamily::kMscclpp, "mscclpp::"},
};

// Kernels in those namespaces that move nothing between GPUs.
constexpr std::array<std::string_view, 9> kNotComm = {"::layout::",
                                                      "SupportProbe",
                                                      "rms_norm_kernel",
                                                      "rms_pre_post_norm_kernel",
                                                      "lamport_initialize_kernel",
                                                      "nvfp4_repack_swizzled_scale_kernel",
                                                      "get_dispatch_layout",
                                                      "nvshmemi_init_array_kernel",
                                                      "nvshmemi_team_"};

std::string Lower(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '_' || c == ' ') continue;
    out += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  }
  return out;
}

// A collective's lead-in window, [from, to).
struct Window {
  double from = 0, to = 0;
};

// The longest row offered so far: its length and name.
struct Longest {
  double us = 0;
  uint32_t name = 0;
  void Offer(double len, uint32_t n) {
    if (len > us) {
      us = len;
      name = n;
    }
  }
};

// Calls fn(i) for each window that holds [start, end] whole. The windows'
// `from` and `to` never go back, so they are a run: those with to >= end,
// up to the last with from <= start.
template <typename Fn>
void ForWindowsHolding(const std::vector<Window>& windows, double start, double end, Fn fn) {
  auto it = std::lower_bound(windows.begin(), windows.end(), end,
                             [](const Window& w, double t) { return w.to < t; });
  for (; it != windows.end() && it->from <= start; ++it) {
    if (it->to > it->from) fn(static_cast<size_t>(it - windows.begin()));
  }
}

// Calls fn(i) for each window that [start, end) meets.
template <typename Fn>
void ForWindowsMeeting(const std::vector<Window>& windows, double start, double end, Fn fn) {
  auto it = std::upper_bound(windows.begin(), windows.end(), start,
                             [](double t, const Window& w) { return t < w.to; });
  for (; it != windows.end() && it->from < end; ++it) {
    if (it->to > it->from) fn(static_cast<size_t>(it - windows.begin()));
  }
}

}  // namespace

// The part of [lo, hi) that `v` (merged, sorted) covers.
std::vector<TimeSpan> MergedSpans(std::vector<TimeSpan> v) {
  std::sort(v.begin(), v.end(),
            [](const TimeSpan& a, const TimeSpan& b) { return a.start < b.start; });
  std::vector<TimeSpan> out;
  for (const TimeSpan& i : v) {
    if (!out.empty() && i.start <= out.back().end) {
      out.back().end = std::max(out.back().end, i.end);
    } else {
      out.push_back(i);
    }
  }
  return out;
}

double Length(const std::vector<TimeSpan>& merged) {
  double sum = 0;
  for (const TimeSpan& i : merged) sum += i.end - i.start;
  return sum;
}

double IntersectionLength(const std::vector<TimeSpan>& a, const std::vector<TimeSpan>& b) {
  double sum = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    double lo = std::max(a[i].start, b[j].start);
    double hi = std::min(a[i].end, b[j].end);
    if (hi > lo) sum += hi - lo;
    (a[i].end < b[j].end) ? ++i : ++j;
  }
  return sum;
}

double CoveredIn(const std::vector<TimeSpan>& v, double lo, double hi) {
  auto it = std::upper_bound(v.begin(), v.end(), lo,
                             [](double t, const TimeSpan& i) { return t < i.end; });
  double sum = 0;
  for (; it != v.end() && it->start < hi; ++it) {
    sum += std::max(0.0, std::min(hi, it->end) - std::max(lo, it->start));
  }
  return sum;
}

std::optional<CommFamily> CommFamilyOf(std::string_view name) {
  // NCCL's and RCCL's (RCCL's MSCCL kernels too: src/include/msccl/msccl_kernel.h)
  if (StartsWith(name, "nccl") || StartsWith(name, "rccl") || StartsWith(name, "mscclKernel_") ||
      Contains(name, "ncclKernel") || Contains(name, "ncclDevKernel")) {
    return CommFamily::kNccl;
  }
  for (std::string_view part : kNotComm) {
    if (Contains(name, part)) return std::nullopt;
  }
  for (const FamilyPattern& p : kFamilyPatterns) {
    if (Contains(name, p.part)) return p.family;
  }
  return std::nullopt;
}

std::string_view CommFamilyName(CommFamily family) {
  switch (family) {
    case CommFamily::kNccl:
      return "nccl";
    case CommFamily::kSymmetricMemory:
      return "symmetric_memory";
    case CommFamily::kNvshmem:
      return "nvshmem";
    case CommFamily::kDeepEp:
      return "deepep";
    case CommFamily::kVllm:
      return "vllm_custom_allreduce";
    case CommFamily::kTensorRtLlm:
      return "tensorrt_llm_allreduce";
    case CommFamily::kMscclpp:
      return "mscclpp";
  }
  return "nccl";
}

std::string CollectiveOf(std::string_view args_name, std::string_view kernel_name) {
  std::string text = Lower(args_name);
  if (text.empty()) {
    // ncclKernel_AllReduce_RING_LL_Sum_float, ncclDevKernel_AllGather_RING_LL:
    // the word after the first '_'.
    if (!StartsWith(kernel_name, "nccl") && !StartsWith(kernel_name, "rccl")) {
      text = Lower(kernel_name);
    } else {
      size_t at = kernel_name.find('_');
      if (at == std::string_view::npos) return "";
      std::string_view rest = kernel_name.substr(at + 1);
      text = Lower(rest.substr(0, rest.find_first_of("_(<")));
    }
  }
  static constexpr std::pair<std::string_view, std::string_view> kWords[] = {
      {"allreduce", "allreduce"}, {"allgather", "allgather"}, {"reducescatter", "reducescatter"},
      {"alltoall", "alltoall"},   {"broadcast", "broadcast"}, {"sendrecv", "sendrecv"},
      {"barrier", "barrier"},     {"reduce", "reduce"},
  };
  for (const auto& [word, name] : kWords) {
    if (Contains(text, word)) return std::string(name);
  }
  // PyTorch's send and recv (isend, irecv, batch_isend_irecv's): two ranks
  // of the group; an NCCL SendRecv kernel without args may be all-to-all's
  if (Contains(text, "send") || Contains(text, "recv")) {
    return args_name.empty() ? "sendrecv" : "p2p";
  }
  return "";
}

int DtypeBytes(std::string_view args_dtype, std::string_view kernel_name) {
  static const std::unordered_map<std::string, int> kArgs = {
      {"float", 4},   {"float32", 4},  {"double", 8}, {"float64", 8},      {"half", 2},
      {"float16", 2}, {"bfloat16", 2}, {"int", 4},    {"int32", 4},        {"long", 8},
      {"int64", 8},   {"short", 2},    {"int16", 2},  {"char", 1},         {"byte", 1},
      {"int8", 1},    {"uint8", 1},    {"bool", 1},   {"float8e4m3fn", 1}, {"float8e5m2", 1}};
  if (!args_dtype.empty()) {
    auto it = kArgs.find(Lower(args_dtype));
    return it == kArgs.end() ? 0 : it->second;
  }
  std::string_view name = kernel_name.substr(0, kernel_name.find('('));
  static constexpr std::pair<std::string_view, int> kSuffixes[] = {
      {"_float", 4},  {"_f32", 4},     {"_double", 8},   {"_f64", 8},      {"_half", 2},
      {"_f16", 2},    {"_bf16", 2},    {"_bfloat16", 2}, {"_int8_t", 1},   {"_uint8_t", 1},
      {"_i8", 1},     {"_u8", 1},      {"_int32_t", 4},  {"_uint32_t", 4}, {"_i32", 4},
      {"_u32", 4},    {"_int64_t", 8}, {"_uint64_t", 8}, {"_i64", 8},      {"_u64", 8},
      {"_f8e4m3", 1}, {"_f8e5m2", 1}};
  if (!StartsWith(name, "nccl")) return 0;
  for (const auto& [suffix, bytes] : kSuffixes) {
    // at the end, or followed by the algorithm (ncclDevKernel_AllReduce_Sum_f32_RING_LL)
    size_t at = name.find(suffix);
    if (at == std::string_view::npos) continue;
    size_t after = at + suffix.size();
    if (after == name.size() || name[after] == '_') return bytes;
  }
  return 0;
}

double BusBandwidthFactor(std::string_view collective, int n) {
  if (n <= 1) return 1;
  const double nd = n;
  if (collective == "allreduce") return 2 * (nd - 1) / nd;
  if (collective == "allgather" || collective == "reducescatter" || collective == "alltoall")
    return (nd - 1) / nd;
  return 1;
}

namespace {

// The ProfilerStep a time falls in, or null.
const KeptStep* StepOf(const std::vector<KeptStep>& steps, double t) {
  auto it = std::upper_bound(steps.begin(), steps.end(), t,
                             [](double v, const KeptStep& s) { return v < s.start; });
  if (it == steps.begin() || !(t < std::prev(it)->end)) return nullptr;
  return &*std::prev(it);
}

// One communication kernel row as stallscope keeps it: its step, and what
// its args (where the trace has them) say of its collective and message.
CommKernelUse KernelUse(const TraceFile& trace, const KeptGpuRow& r, CommFamily family,
                        const std::vector<KeptStep>& steps, const TraceCommArgs* args) {
  CommKernelUse k;
  k.start = r.start;
  k.end = r.end;
  k.stream = r.event->stream;
  k.name = trace.names[r.event->name];
  k.family = family;
  if (const KeptStep* step = StepOf(steps, std::isnan(r.launch) ? r.start : r.launch)) {
    k.step = step->number;
  }
  std::string_view args_collective, args_dtype;
  int64_t nelems = -1;
  if (args != nullptr) {
    k.group = args->group;
    k.group_ranks = args->group_ranks;
    k.group_size = args->group_size;
    args_collective = args->collective;
    args_dtype = args->dtype;
    nelems = std::max(args->in_nelems, args->out_nelems);
  }
  k.collective = CollectiveOf(args_collective, k.name);
  int size = DtypeBytes(args_dtype, k.name);
  if (nelems >= 0 && size > 0) k.bytes = nelems * size;
  return k;
}

// Each kernel's lead-in window, from the previous collective's end (or its
// step's start) to its start, and what the GPU and the host did in it; the
// compute that overlaps each kernel. Both ends of the windows never go
// back, so the windows holding or meeting a row are one run of them.
std::vector<Window> LeadIns(std::vector<CommKernelUse>& out, const std::vector<TimeSpan>& compute,
                            const CommKernelInputs& in) {
  double previous_end = -INFINITY;
  std::vector<Window> windows;
  for (CommKernelUse& k : out) {
    double from = std::min(previous_end, k.start);
    if (!std::isfinite(from)) {
      const KeptStep* step = StepOf(*in.steps, k.start);
      from =
          step != nullptr ? step->start : (in.steps->empty() ? k.start : in.steps->front().start);
      from = std::min(from, k.start);
    }
    previous_end = std::max(previous_end, k.end);
    windows.push_back({from, k.start});
    auto c = std::upper_bound(compute.begin(), compute.end(), k.start,
                              [](double t, const TimeSpan& i) { return t < i.end; });
    for (; c != compute.end() && c->start < k.end; ++c) {
      k.compute_within.emplace_back(std::max(c->start, k.start), std::min(c->end, k.end));
    }
    CommLeadIn& l = k.lead_in;
    l.from_us = from;
    const double window = k.start - from;
    if (window <= 0) continue;
    l.compute_us = CoveredIn(compute, from, k.start);
    l.loader_us = CoveredIn(*in.loader, from, k.start);
    const double idle = window - CoveredIn(*in.busy, from, k.start);
    l.sync_us = std::min(std::max(0.0, idle - l.loader_us), CoveredIn(*in.sync, from, k.start));
    l.host_us = std::max(0.0, idle - l.loader_us - l.sync_us);
  }
  return windows;
}

// The longest CPU op and sync inside each window, and the compute kernel
// with the most time in it, named in the lead-ins.
void NameLongest(const TraceFile& trace, const CommKernelInputs& in,
                 const std::vector<Window>& windows,
                 const std::vector<const KeptGpuRow*>& compute_rows,
                 std::vector<CommKernelUse>& out) {
  std::vector<Longest> cpu(out.size()), sync(out.size()), kernel(out.size());
  std::vector<int8_t> step_name(trace.names.size(), -1);
  auto add_op = [&](const TraceEvent& e) {
    if (e.stream >= 0 || e.dur <= 0 || e.role == TraceCpuRole::kDataLoader) return;
    if (e.cat == TraceCategory::kGpuAnnotation) return;
    int8_t& is_step = step_name[e.name];
    if (is_step < 0) is_step = ProfilerStepNumber(trace.names[e.name]).has_value() ? 1 : 0;
    if (is_step == 1) return;
    const double start = in.round ? std::ceil(e.ts) : e.ts;
    const double end = in.round ? std::floor(e.ts + e.dur) : e.ts + e.dur;
    if (!in.cpu_kept(start)) return;
    std::vector<Longest>& best = e.role == TraceCpuRole::kSync ? sync : cpu;
    ForWindowsHolding(windows, start, end, [&](size_t w) { best[w].Offer(end - start, e.name); });
  };
  for (const TraceEvent& e : trace.events) add_op(e);
  for (const TraceEvent& e : trace.cpu_rows) add_op(e);
  for (const KeptGpuRow* r : compute_rows) {
    ForWindowsMeeting(windows, r->start, r->end, [&](size_t w) {
      const double len = std::min(windows[w].to, r->end) - std::max(windows[w].from, r->start);
      kernel[w].Offer(len, r->event->name);
    });
  }
  for (size_t i = 0; i < out.size(); ++i) {
    CommLeadIn& l = out[i].lead_in;
    if (kernel[i].us > 0) {
      l.longest_kernel = trace.names[kernel[i].name];
      l.longest_kernel_us = kernel[i].us;
    }
    if (cpu[i].us > 0) {
      l.longest_cpu_op = trace.names[cpu[i].name];
      l.longest_cpu_op_us = cpu[i].us;
    }
    if (sync[i].us > 0) l.sync_op = trace.names[sync[i].name];
  }
}

}  // namespace

std::vector<CommKernelUse> CollectCommKernels(const TraceFile& trace, const CommKernelInputs& in) {
  std::unordered_map<uint32_t, std::optional<CommFamily>> family_of;
  auto family = [&](uint32_t name) -> std::optional<CommFamily> {
    auto it = family_of.find(name);
    if (it == family_of.end()) it = family_of.emplace(name, CommFamilyOf(trace.names[name])).first;
    return it->second;
  };
  std::unordered_map<uint32_t, const TraceCommArgs*> args_of;  // by event index
  for (const TraceCommArgs& a : trace.comm_args) args_of.emplace(a.index, &a);
  // The communication kernels; the compute ones in this view: every kernel
  // that moves nothing between GPUs (HTA's compute holds vLLM's all-reduce,
  // DeepEP's, ...), merged.
  std::vector<CommKernelUse> out;
  std::vector<const KeptGpuRow*> compute_rows;
  std::vector<TimeSpan> compute;
  for (const KeptGpuRow& r : *in.rows) {
    if (r.event->cat != TraceCategory::kKernel) continue;
    if (std::optional<CommFamily> f = family(r.event->name)) {
      auto a = args_of.find(r.event->index);
      out.push_back(KernelUse(trace, r, *f, *in.steps, a == args_of.end() ? nullptr : a->second));
    } else {
      compute_rows.push_back(&r);
      compute.push_back({r.start, r.end});
    }
  }
  compute = MergedSpans(std::move(compute));
  std::stable_sort(out.begin(), out.end(), [](const CommKernelUse& a, const CommKernelUse& b) {
    return a.start < b.start;
  });
  std::vector<Window> windows = LeadIns(out, compute, in);
  NameLongest(trace, in, windows, compute_rows, out);
  return out;
}

std::vector<CommKernelTotal> CommKernelTotals(const std::vector<CommKernelUse>& kernels) {
  std::map<std::string, CommKernelTotal> by_name;
  for (const CommKernelUse& k : kernels) {
    CommKernelTotal& t = by_name[k.name];
    t.name = k.name;
    t.family = k.family;
    ++t.count;
    t.sum_us += k.end - k.start;
  }
  std::vector<CommKernelTotal> out;
  for (auto& [name, t] : by_name) out.push_back(std::move(t));
  std::sort(out.begin(), out.end(), [](const CommKernelTotal& a, const CommKernelTotal& b) {
    return a.sum_us != b.sum_us ? a.sum_us > b.sum_us : a.name < b.name;
  });
  return out;
}

}  // namespace stallscope
