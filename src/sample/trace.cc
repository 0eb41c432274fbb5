#include "sample/trace.h"

#include "core/text.h"

namespace stallscope {

TraceCategory TraceCategoryOf(std::string_view cat) {
  if (cat == "kernel" || cat == "Kernel") return TraceCategory::kKernel;
  if (cat == "gpu_memcpy" || cat == "Memcpy") return TraceCategory::kMemcpy;
  if (cat == "gpu_memset" || cat == "Memset") return TraceCategory::kMemset;
  if (cat == "cuda_sync") return TraceCategory::kCudaSync;
  if (cat == "cuda_runtime" || cat == "cuda_driver" || cat == "Runtime") {
    return TraceCategory::kRuntime;
  }
  if (cat == "cpu_op" || cat == "operator" || cat == "Operator") return TraceCategory::kCpuOp;
  if (cat == "user_annotation") return TraceCategory::kUserAnnotation;
  if (cat == "gpu_user_annotation") return TraceCategory::kGpuAnnotation;
  return TraceCategory::kOther;
}

TraceCpuRole TraceCpuRoleOf(std::string_view name) {
  static constexpr std::string_view kSyncs[] = {"cudaDeviceSynchronize",
                                                "cudaStreamSynchronize",
                                                "cudaEventSynchronize",
                                                "cudaMemcpy",
                                                "cuCtxSynchronize",
                                                "cuStreamSynchronize",
                                                "cuEventSynchronize",
                                                "cuMemcpyDtoH_v2",
                                                "hipDeviceSynchronize",
                                                "hipStreamSynchronize",
                                                "hipEventSynchronize",
                                                "hipMemcpy",
                                                "aten::item",
                                                "aten::_local_scalar_dense"};
  for (std::string_view s : kSyncs) {
    if (name == s) return TraceCpuRole::kSync;
  }
  if (StartsWith(name, "enumerate(DataLoader)") && EndsWith(name, "__next__")) {
    return TraceCpuRole::kDataLoader;
  }
  return TraceCpuRole::kNone;
}

std::optional<int64_t> ProfilerStepNumber(std::string_view name) {
  if (!StartsWith(name, "ProfilerStep")) return std::nullopt;
  name.remove_prefix(12);
  while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
  if (name.empty() || name.front() != '#') return std::nullopt;
  name.remove_prefix(1);
  while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
  while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
  return ParseInt(name);
}

std::string TraceGpuName(const TraceFile& trace) {
  for (const TraceEvent& e : trace.events) {
    if (e.device < 0) continue;
    for (const auto& [id, name] : trace.devices) {
      if (id == e.device) return name;
    }
    break;
  }
  return trace.devices.empty() ? "" : trace.devices.front().second;
}

}  // namespace stallscope
