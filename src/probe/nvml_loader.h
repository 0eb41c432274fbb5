// NvmlLibrary: libnvidia-ml.so.1 opened with dlopen, its entry points looked
// up by name against the declarations of gpu/nvml_api.h. One binary runs on
// hosts with and without a GPU: a missing library, a missing driver or zero
// GPUs is a Status (NotFound / Unavailable), never a link failure or crash.
//
// The library is the one named by the environment variable
// STALLSCOPE_NVML_LIBRARY when set (the tests point it at a fake NVML built
// from tests/fake_nvml/), else libnvidia-ml.so.1 as the driver installs it.
// Required symbols (init, count, handle, name, memory, utilization) missing
// make Load fail; every other one may be absent (older drivers lack GPM and
// NUMA ids) and its pointer stays null. Load calls nvmlInit_v2; the
// destructor calls nvmlShutdown and dlclose. Not thread-safe: one owner.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "probe/nvml_api.h"

namespace stallscope {

inline constexpr const char* kNvmlLibraryEnv = "STALLSCOPE_NVML_LIBRARY";
inline constexpr const char* kNvmlDefaultLibrary = "libnvidia-ml.so.1";

class NvmlLibrary {
 public:
  // Opens `path` (empty: the environment variable, then the default),
  // resolves the symbols and initializes NVML.
  static Result<std::unique_ptr<NvmlLibrary>> Load(const std::string& path = "");
  ~NvmlLibrary();
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  const std::string& path() const { return path_; }
  // "NVML_ERROR_GPU_IS_LOST (GPU is lost)": the code's name and the library's text.
  std::string ErrorText(nvmlReturn_t code) const;

  // Required.
  nvmlDeviceGetCount_v2_fn DeviceGetCount = nullptr;
  nvmlDeviceGetHandleByIndex_v2_fn DeviceGetHandleByIndex = nullptr;
  nvmlDeviceGetName_fn DeviceGetName = nullptr;
  nvmlDeviceGetMemoryInfo_fn DeviceGetMemoryInfo = nullptr;
  nvmlDeviceGetUtilizationRates_fn DeviceGetUtilizationRates = nullptr;
  // Optional: null when the library lacks them.
  nvmlErrorString_fn ErrorString = nullptr;
  nvmlDeviceGetUUID_fn DeviceGetUUID = nullptr;
  nvmlDeviceGetPciInfo_v3_fn DeviceGetPciInfo = nullptr;
  nvmlDeviceGetNumaNodeId_fn DeviceGetNumaNodeId = nullptr;
  nvmlDeviceGetClockInfo_fn DeviceGetClockInfo = nullptr;
  nvmlDeviceGetMaxClockInfo_fn DeviceGetMaxClockInfo = nullptr;
  nvmlDeviceGetCurrentClocksThrottleReasons_fn DeviceGetThrottleReasons = nullptr;
  nvmlDeviceGetTemperature_fn DeviceGetTemperature = nullptr;
  nvmlDeviceGetPowerUsage_fn DeviceGetPowerUsage = nullptr;
  nvmlDeviceGetEnforcedPowerLimit_fn DeviceGetEnforcedPowerLimit = nullptr;
  nvmlDeviceGetPcieThroughput_fn DeviceGetPcieThroughput = nullptr;
  nvmlDeviceGetTotalEccErrors_fn DeviceGetTotalEccErrors = nullptr;
  nvmlDeviceGetRetiredPages_fn DeviceGetRetiredPages = nullptr;
  nvmlDeviceGetRemappedRows_fn DeviceGetRemappedRows = nullptr;
  nvmlDeviceGetPersistenceMode_fn DeviceGetPersistenceMode = nullptr;
  nvmlDeviceGetMigMode_fn DeviceGetMigMode = nullptr;
  nvmlDeviceGetNvLinkState_fn DeviceGetNvLinkState = nullptr;
  nvmlDeviceGetNvLinkRemotePciInfo_v2_fn DeviceGetNvLinkRemotePciInfo = nullptr;
  nvmlDeviceGetComputeRunningProcesses_v2_fn DeviceGetComputeProcessesV2 = nullptr;
  nvmlDeviceGetComputeRunningProcesses_fn DeviceGetComputeProcessesV1 = nullptr;
  nvmlGpmQueryDeviceSupport_fn GpmQueryDeviceSupport = nullptr;
  nvmlGpmSampleAlloc_fn GpmSampleAlloc = nullptr;
  nvmlGpmSampleFree_fn GpmSampleFree = nullptr;
  nvmlGpmSampleGet_fn GpmSampleGet = nullptr;
  nvmlGpmMetricsGet_fn GpmMetricsGet = nullptr;

  // All five GPM entry points are present.
  bool HasGpm() const {
    return GpmQueryDeviceSupport && GpmSampleAlloc && GpmSampleFree && GpmSampleGet &&
           GpmMetricsGet;
  }

 private:
  NvmlLibrary() = default;
  void* handle_ = nullptr;
  nvmlShutdown_fn shutdown_ = nullptr;
  bool initialized_ = false;
  std::string path_;
};

// The symbolic name of an NVML return code ("NVML_ERROR_NOT_SUPPORTED").
const char* NvmlReturnName(nvmlReturn_t code);

}  // namespace stallscope
