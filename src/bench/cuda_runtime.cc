// Loading libcudart with dlopen; see cuda_runtime.h.
#include "bench/cuda_runtime.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <vector>

namespace stallscope {
namespace {

constexpr const char* kLibraryNames[] = {
    "libcudart.so.12",
    "libcudart.so.13",
    "libcudart.so",
    "/usr/local/cuda/lib64/libcudart.so.12",
    "/usr/local/cuda/lib64/libcudart.so.13",
    "/usr/local/cuda/lib64/libcudart.so",
};

std::string VersionText(int version) {
  if (version <= 0) return "";
  return fmt::format("{}.{}", version / 1000, (version % 1000) / 10);
}

}  // namespace

Result<std::unique_ptr<CudaRuntime>> CudaRuntime::Load() {
  if (const char* path = std::getenv("STALLSCOPE_CUDART_LIBRARY"); path && *path)
    return LoadFrom(path);
  std::string tried;
  for (const char* name : kLibraryNames) {
    Result<std::unique_ptr<CudaRuntime>> runtime = LoadFrom(name);
    if (runtime.ok()) return runtime;
    // A library that loads but lacks a symbol is worth reporting as is.
    if (runtime.status().message().find("dlsym") != std::string::npos) return runtime;
    tried += (tried.empty() ? "" : ", ") + std::string(name);
  }
  return Status::Unavailable(fmt::format(
      "CUDA runtime not found (tried {}; set STALLSCOPE_CUDART_LIBRARY to its path)", tried));
}

Result<std::unique_ptr<CudaRuntime>> CudaRuntime::LoadFrom(const std::string& path) {
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    return Status::Unavailable(
        fmt::format("CUDA runtime {}: dlopen: {}", path, why ? why : "failed"));
  }
  std::unique_ptr<CudaRuntime> runtime(new CudaRuntime());
  runtime->handle_ = handle;
  runtime->path_ = path;
  CudaApi& api = runtime->api_;
  std::vector<std::string> missing;
  auto bind = [&](auto& fn, const char* name, const char* alternative = nullptr) {
    void* symbol = ::dlsym(handle, name);
    if (symbol == nullptr && alternative != nullptr) symbol = ::dlsym(handle, alternative);
    if (symbol == nullptr) {
      missing.push_back(name);
      return;
    }
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(symbol);
  };
  bind(api.GetDeviceCount, "cudaGetDeviceCount");
  bind(api.SetDevice, "cudaSetDevice");
  // CUDA 12 headers map the name to the _v2 entry point (a larger struct).
  bind(api.GetDeviceProperties, "cudaGetDeviceProperties_v2", "cudaGetDeviceProperties");
  bind(api.DeviceGetPCIBusId, "cudaDeviceGetPCIBusId");
  bind(api.Malloc, "cudaMalloc");
  bind(api.Free, "cudaFree");
  bind(api.HostAlloc, "cudaHostAlloc");
  bind(api.FreeHost, "cudaFreeHost");
  bind(api.MemcpyAsync, "cudaMemcpyAsync");
  bind(api.StreamCreate, "cudaStreamCreate");
  bind(api.StreamDestroy, "cudaStreamDestroy");
  bind(api.EventCreate, "cudaEventCreate");
  bind(api.EventRecord, "cudaEventRecord");
  bind(api.EventSynchronize, "cudaEventSynchronize");
  bind(api.EventElapsedTime, "cudaEventElapsedTime");
  bind(api.EventDestroy, "cudaEventDestroy");
  bind(api.GetErrorString, "cudaGetErrorString");
  bind(api.RuntimeGetVersion, "cudaRuntimeGetVersion");
  bind(api.DriverGetVersion, "cudaDriverGetVersion");
  if (!missing.empty()) {
    std::string names;
    for (const std::string& m : missing) names += (names.empty() ? "" : ", ") + m;
    return Status::Unavailable(fmt::format("CUDA runtime {}: dlsym: missing {}", path, names));
  }
  return runtime;
}

CudaRuntime::~CudaRuntime() {
  // libcudart registers exit-time teardown; unloading it before exit would
  // leave those handlers pointing at unmapped code. The handle lives on.
}

std::string CudaRuntime::ErrorText(const char* call, int error) const {
  const char* text = api_.GetErrorString ? api_.GetErrorString(error) : nullptr;
  return fmt::format("{}: {} ({})", call, text ? text : "unknown CUDA error", error);
}

std::string CudaRuntime::RuntimeVersion() const {
  int version = 0;
  if (api_.RuntimeGetVersion(&version) != kCudaSuccess) return "";
  return VersionText(version);
}

std::string CudaRuntime::DriverVersion() const {
  int version = 0;
  if (api_.DriverGetVersion(&version) != kCudaSuccess) return "";
  return VersionText(version);
}

}  // namespace stallscope
