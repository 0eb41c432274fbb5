#include "probe/nvml_loader.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>

namespace stallscope {
namespace {

template <typename Fn>
void Resolve(void* handle, const char* name, Fn& into) {
  // POSIX guarantees that a data pointer from dlsym converts to a function pointer.
  into = reinterpret_cast<Fn>(dlsym(handle, name));
}

}  // namespace

const char* NvmlReturnName(nvmlReturn_t code) {
  switch (code) {
    case NVML_SUCCESS:
      return "NVML_SUCCESS";
    case NVML_ERROR_UNINITIALIZED:
      return "NVML_ERROR_UNINITIALIZED";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "NVML_ERROR_INVALID_ARGUMENT";
    case NVML_ERROR_NOT_SUPPORTED:
      return "NVML_ERROR_NOT_SUPPORTED";
    case NVML_ERROR_NO_PERMISSION:
      return "NVML_ERROR_NO_PERMISSION";
    case NVML_ERROR_NOT_FOUND:
      return "NVML_ERROR_NOT_FOUND";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "NVML_ERROR_INSUFFICIENT_SIZE";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "NVML_ERROR_DRIVER_NOT_LOADED";
    case NVML_ERROR_FUNCTION_NOT_FOUND:
      return "NVML_ERROR_FUNCTION_NOT_FOUND";
    case NVML_ERROR_GPU_IS_LOST:
      return "NVML_ERROR_GPU_IS_LOST";
    default:
      return "NVML_ERROR";
  }
}

std::string NvmlLibrary::ErrorText(nvmlReturn_t code) const {
  const char* text = ErrorString ? ErrorString(code) : nullptr;
  if (text && *text) return fmt::format("{} ({})", NvmlReturnName(code), text);
  return fmt::format("{} ({})", NvmlReturnName(code), code);
}

Result<std::unique_ptr<NvmlLibrary>> NvmlLibrary::Load(const std::string& path) {
  std::string name = path;
  if (name.empty()) {
    const char* env = std::getenv(kNvmlLibraryEnv);
    name = env && *env ? env : kNvmlDefaultLibrary;
  }
  std::unique_ptr<NvmlLibrary> lib(new NvmlLibrary());
  lib->path_ = name;
  lib->handle_ = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib->handle_) {
    const char* why = dlerror();
    return Status::NotFound(fmt::format("NVML library {}: {}", name, why ? why : "not loadable"));
  }
  void* h = lib->handle_;
  nvmlInit_v2_fn init = nullptr;
  Resolve(h, "nvmlInit_v2", init);
  Resolve(h, "nvmlShutdown", lib->shutdown_);
  Resolve(h, "nvmlDeviceGetCount_v2", lib->DeviceGetCount);
  Resolve(h, "nvmlDeviceGetHandleByIndex_v2", lib->DeviceGetHandleByIndex);
  Resolve(h, "nvmlDeviceGetName", lib->DeviceGetName);
  Resolve(h, "nvmlDeviceGetMemoryInfo", lib->DeviceGetMemoryInfo);
  Resolve(h, "nvmlDeviceGetUtilizationRates", lib->DeviceGetUtilizationRates);
  const char* missing = !init                             ? "nvmlInit_v2"
                        : !lib->shutdown_                 ? "nvmlShutdown"
                        : !lib->DeviceGetCount            ? "nvmlDeviceGetCount_v2"
                        : !lib->DeviceGetHandleByIndex    ? "nvmlDeviceGetHandleByIndex_v2"
                        : !lib->DeviceGetName             ? "nvmlDeviceGetName"
                        : !lib->DeviceGetMemoryInfo       ? "nvmlDeviceGetMemoryInfo"
                        : !lib->DeviceGetUtilizationRates ? "nvmlDeviceGetUtilizationRates"
                                                          : nullptr;
  if (missing) {
    return Status::Unavailable(fmt::format("NVML library {}: no symbol {}", name, missing));
  }
  Resolve(h, "nvmlErrorString", lib->ErrorString);
  Resolve(h, "nvmlDeviceGetUUID", lib->DeviceGetUUID);
  Resolve(h, "nvmlDeviceGetPciInfo_v3", lib->DeviceGetPciInfo);
  Resolve(h, "nvmlDeviceGetNumaNodeId", lib->DeviceGetNumaNodeId);
  Resolve(h, "nvmlDeviceGetClockInfo", lib->DeviceGetClockInfo);
  Resolve(h, "nvmlDeviceGetMaxClockInfo", lib->DeviceGetMaxClockInfo);
  // Renamed "clocks event reasons" in CUDA 12.2; the old name stays exported.
  Resolve(h, "nvmlDeviceGetCurrentClocksEventReasons", lib->DeviceGetThrottleReasons);
  if (!lib->DeviceGetThrottleReasons) {
    Resolve(h, "nvmlDeviceGetCurrentClocksThrottleReasons", lib->DeviceGetThrottleReasons);
  }
  Resolve(h, "nvmlDeviceGetTemperature", lib->DeviceGetTemperature);
  Resolve(h, "nvmlDeviceGetPowerUsage", lib->DeviceGetPowerUsage);
  Resolve(h, "nvmlDeviceGetEnforcedPowerLimit", lib->DeviceGetEnforcedPowerLimit);
  Resolve(h, "nvmlDeviceGetPcieThroughput", lib->DeviceGetPcieThroughput);
  Resolve(h, "nvmlDeviceGetTotalEccErrors", lib->DeviceGetTotalEccErrors);
  Resolve(h, "nvmlDeviceGetRetiredPages", lib->DeviceGetRetiredPages);
  Resolve(h, "nvmlDeviceGetRemappedRows", lib->DeviceGetRemappedRows);
  Resolve(h, "nvmlDeviceGetPersistenceMode", lib->DeviceGetPersistenceMode);
  Resolve(h, "nvmlDeviceGetMigMode", lib->DeviceGetMigMode);
  Resolve(h, "nvmlDeviceGetNvLinkState", lib->DeviceGetNvLinkState);
  Resolve(h, "nvmlDeviceGetNvLinkRemotePciInfo_v2", lib->DeviceGetNvLinkRemotePciInfo);
  Resolve(h, "nvmlDeviceGetComputeRunningProcesses_v2", lib->DeviceGetComputeProcessesV2);
  Resolve(h, "nvmlDeviceGetComputeRunningProcesses", lib->DeviceGetComputeProcessesV1);
  Resolve(h, "nvmlGpmQueryDeviceSupport", lib->GpmQueryDeviceSupport);
  Resolve(h, "nvmlGpmSampleAlloc", lib->GpmSampleAlloc);
  Resolve(h, "nvmlGpmSampleFree", lib->GpmSampleFree);
  Resolve(h, "nvmlGpmSampleGet", lib->GpmSampleGet);
  Resolve(h, "nvmlGpmMetricsGet", lib->GpmMetricsGet);

  nvmlReturn_t rc = init();
  if (rc != NVML_SUCCESS) {
    return Status::Unavailable(fmt::format("NVML ({}): nvmlInit_v2: {}", name, lib->ErrorText(rc)));
  }
  lib->initialized_ = true;
  return lib;
}

NvmlLibrary::~NvmlLibrary() {
  if (initialized_ && shutdown_) shutdown_();
  if (handle_) dlclose(handle_);
}

}  // namespace stallscope
