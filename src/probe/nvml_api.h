/* The subset of NVML's C API that stallscope calls, declared by us: no nvml.h
 * is needed to build, and the library (libnvidia-ml.so.1) is opened with
 * dlopen at run time (gpu/nvml_loader.h). Plain C so that the fake library of
 * the tests (tests/fake_nvml/fake_nvml.c) compiles against the very same
 * declarations: one ABI, checked by both sides.
 *
 * Where each piece comes from (NVIDIA's NVML API reference,
 * docs.nvidia.com/deploy/nvml-api/, and the nvml.h that ships with CUDA 12,
 * whose layouts are mirrored in public trees such as pynvml and the
 * Iluvatar go-ixml copy of nvml.h that the search tool showed):
 *  - nvmlReturn_t values: "nvmlReturn_t" in the Device Enums group.
 *  - nvmlPciInfo_t: busIdLegacy[16], domain, bus, device, pciDeviceId,
 *    pciSubSystemId, busId[32] (NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE 32), the
 *    layout nvmlDeviceGetPciInfo_v3 fills.
 *  - nvmlMemory_t (v1): total, free, used, unsigned long long bytes.
 *  - nvmlUtilization_t: gpu, memory, unsigned int percent.
 *  - nvmlProcessInfo_v1_t {pid; usedGpuMemory} (16 bytes with padding) and
 *    nvmlProcessInfo_v2_t {pid; usedGpuMemory; gpuInstanceId;
 *    computeInstanceId} (24 bytes). We call the _v2 entry point, never _v3:
 *    R535 drivers changed the struct behind _v3 without a version bump
 *    (nvitop PR #79, go-nvml issue #75), while _v2 kept its 24-byte stride.
 *  - Clock-throttle ("clocks event") reason bits: nvmlClocksThrottleReasons
 *    (0x1 GpuIdle ... 0x100 DisplayClockSetting).
 *  - GPM (Hopper and newer, NVML 12): nvmlGpmSample_t is an opaque handle;
 *    nvmlGpmMetric_t {metricId; nvmlReturn; double value; metricInfo
 *    {shortName, longName, unit}}; nvmlGpmMetricsGet_t {version (1),
 *    numMetrics, sample1, sample2, metrics[NVML_GPM_METRIC_MAX]};
 *    nvmlGpmSupport_t {version (1), isSupportedDevice}. The library reads
 *    numMetrics entries only, so our array may be shorter than NVIDIA's
 *    NVML_GPM_METRIC_MAX (98 in CUDA 12.0, larger later); we ask for 8.
 *  - GPM metric ids from nvmlGpmMetricId_t (CUDA 12 nvml.h).
 *  - nvmlDeviceGetPersistenceMode(device, nvmlEnableState_t*) and
 *    nvmlDeviceGetMigMode(device, unsigned* current, unsigned* pending):
 *    nvmlEnableState_t is an int-sized enum, 0 disabled, 1 enabled.
 *    nvmlDeviceGetTotalEccErrors' counter type 1 is the aggregate (lifetime)
 *    count, 0 the volatile one (since the driver loaded).
 */
#ifndef STALLSCOPE_GPU_NVML_API_H_
#define STALLSCOPE_GPU_NVML_API_H_

#ifdef __cplusplus
extern "C" {
#endif

typedef int nvmlReturn_t; /* an enum in nvml.h: int-sized on every Linux ABI */
#define NVML_SUCCESS 0
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_NO_PERMISSION 4
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_DRIVER_NOT_LOADED 9
#define NVML_ERROR_FUNCTION_NOT_FOUND 13
#define NVML_ERROR_GPU_IS_LOST 15
#define NVML_ERROR_UNKNOWN 999

typedef struct nvmlDevice_st* nvmlDevice_t;

#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE 32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE 16

typedef struct nvmlPciInfo_st {
  char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
} nvmlPciInfo_t;

typedef struct nvmlMemory_st {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;

typedef struct nvmlUtilization_st {
  unsigned int gpu;
  unsigned int memory;
} nvmlUtilization_t;

typedef struct nvmlProcessInfo_v1_st {
  unsigned int pid;
  unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

typedef struct nvmlProcessInfo_v2_st {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlProcessInfo_v2_t;

/* nvmlClockType_t */
#define NVML_CLOCK_GRAPHICS 0
#define NVML_CLOCK_SM 1
#define NVML_CLOCK_MEM 2
/* nvmlTemperatureSensors_t */
#define NVML_TEMPERATURE_GPU 0
/* nvmlPcieUtilCounter_t: KB/s over the last 20 ms */
#define NVML_PCIE_UTIL_TX_BYTES 0
#define NVML_PCIE_UTIL_RX_BYTES 1
/* nvmlMemoryErrorType_t, nvmlEccCounterType_t */
#define NVML_MEMORY_ERROR_TYPE_CORRECTED 0
#define NVML_MEMORY_ERROR_TYPE_UNCORRECTED 1
#define NVML_VOLATILE_ECC 0
#define NVML_AGGREGATE_ECC 1
/* nvmlEnableState_t */
#define NVML_FEATURE_DISABLED 0
#define NVML_FEATURE_ENABLED 1
/* nvmlPageRetirementCause_t */
#define NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS 0
#define NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR 1

/* nvmlClocksThrottleReasons (renamed "clocks event reasons" in CUDA 12.2). */
#define nvmlClocksThrottleReasonGpuIdle 0x0000000000000001ULL
#define nvmlClocksThrottleReasonApplicationsClocksSetting 0x0000000000000002ULL
#define nvmlClocksThrottleReasonSwPowerCap 0x0000000000000004ULL
#define nvmlClocksThrottleReasonHwSlowdown 0x0000000000000008ULL
#define nvmlClocksThrottleReasonSyncBoost 0x0000000000000010ULL
#define nvmlClocksThrottleReasonSwThermalSlowdown 0x0000000000000020ULL
#define nvmlClocksThrottleReasonHwThermalSlowdown 0x0000000000000040ULL
#define nvmlClocksThrottleReasonHwPowerBrakeSlowdown 0x0000000000000080ULL
#define nvmlClocksThrottleReasonDisplayClockSetting 0x0000000000000100ULL

/* GPM */
typedef struct nvmlGpmSample_st* nvmlGpmSample_t;

#define NVML_GPM_METRIC_GRAPHICS_UTIL 1
#define NVML_GPM_METRIC_SM_UTIL 2
#define NVML_GPM_METRIC_SM_OCCUPANCY 3
#define NVML_GPM_METRIC_ANY_TENSOR_UTIL 5
#define NVML_GPM_METRIC_DRAM_BW_UTIL 10
#define NVML_GPM_METRIC_PCIE_TX_PER_SEC 20
#define NVML_GPM_METRIC_PCIE_RX_PER_SEC 21
#define NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC 60
#define NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC 61

typedef struct {
  unsigned int metricId;
  nvmlReturn_t nvmlReturn;
  double value;
  struct {
    char* shortName;
    char* longName;
    char* unit;
  } metricInfo;
} nvmlGpmMetric_t;

#define STALLSCOPE_GPM_METRICS 8 /* how many we ask for; <= NVML_GPM_METRIC_MAX */
#define NVML_GPM_METRICS_GET_VERSION 1
typedef struct {
  unsigned int version;
  unsigned int numMetrics;
  nvmlGpmSample_t sample1;
  nvmlGpmSample_t sample2;
  nvmlGpmMetric_t metrics[STALLSCOPE_GPM_METRICS];
} nvmlGpmMetricsGet_t;

#define NVML_GPM_SUPPORT_VERSION 1
typedef struct {
  unsigned int version;
  unsigned int isSupportedDevice;
} nvmlGpmSupport_t;

/* The entry points, as function types: the loader dlsyms each by name. */
typedef nvmlReturn_t (*nvmlInit_v2_fn)(void);
typedef nvmlReturn_t (*nvmlShutdown_fn)(void);
typedef const char* (*nvmlErrorString_fn)(nvmlReturn_t);
typedef nvmlReturn_t (*nvmlDeviceGetCount_v2_fn)(unsigned int*);
typedef nvmlReturn_t (*nvmlDeviceGetHandleByIndex_v2_fn)(unsigned int, nvmlDevice_t*);
typedef nvmlReturn_t (*nvmlDeviceGetName_fn)(nvmlDevice_t, char*, unsigned int);
typedef nvmlReturn_t (*nvmlDeviceGetUUID_fn)(nvmlDevice_t, char*, unsigned int);
typedef nvmlReturn_t (*nvmlDeviceGetPciInfo_v3_fn)(nvmlDevice_t, nvmlPciInfo_t*);
typedef nvmlReturn_t (*nvmlDeviceGetNumaNodeId_fn)(nvmlDevice_t, unsigned int*);
typedef nvmlReturn_t (*nvmlDeviceGetMemoryInfo_fn)(nvmlDevice_t, nvmlMemory_t*);
typedef nvmlReturn_t (*nvmlDeviceGetUtilizationRates_fn)(nvmlDevice_t, nvmlUtilization_t*);
typedef nvmlReturn_t (*nvmlDeviceGetClockInfo_fn)(nvmlDevice_t, int, unsigned int*);
typedef nvmlReturn_t (*nvmlDeviceGetMaxClockInfo_fn)(nvmlDevice_t, int, unsigned int*);
typedef nvmlReturn_t (*nvmlDeviceGetCurrentClocksThrottleReasons_fn)(nvmlDevice_t,
                                                                     unsigned long long*);
typedef nvmlReturn_t (*nvmlDeviceGetTemperature_fn)(nvmlDevice_t, int, unsigned int*);
typedef nvmlReturn_t (*nvmlDeviceGetPowerUsage_fn)(nvmlDevice_t, unsigned int*);
typedef nvmlReturn_t (*nvmlDeviceGetEnforcedPowerLimit_fn)(nvmlDevice_t, unsigned int*);
typedef nvmlReturn_t (*nvmlDeviceGetPcieThroughput_fn)(nvmlDevice_t, int, unsigned int*);
typedef nvmlReturn_t (*nvmlDeviceGetTotalEccErrors_fn)(nvmlDevice_t, int, int, unsigned long long*);
typedef nvmlReturn_t (*nvmlDeviceGetRetiredPages_fn)(nvmlDevice_t, int, unsigned int*,
                                                     unsigned long long*);
typedef nvmlReturn_t (*nvmlDeviceGetRemappedRows_fn)(nvmlDevice_t, unsigned int*, unsigned int*,
                                                     unsigned int*, unsigned int*);
typedef nvmlReturn_t (*nvmlDeviceGetPersistenceMode_fn)(nvmlDevice_t, int*);
typedef nvmlReturn_t (*nvmlDeviceGetMigMode_fn)(nvmlDevice_t, unsigned int*, unsigned int*);
typedef nvmlReturn_t (*nvmlDeviceGetComputeRunningProcesses_v2_fn)(nvmlDevice_t, unsigned int*,
                                                                   nvmlProcessInfo_v2_t*);
typedef nvmlReturn_t (*nvmlDeviceGetComputeRunningProcesses_fn)(nvmlDevice_t, unsigned int*,
                                                                nvmlProcessInfo_v1_t*);
/* NVLink (nvml.h: NVML_NVLINK_MAX_LINKS is 18 since Hopper). */
#define NVML_NVLINK_MAX_LINKS 18
typedef unsigned int nvmlEnableState_t; /* an enum in nvml.h: NVML_FEATURE_* */
typedef nvmlReturn_t (*nvmlDeviceGetNvLinkState_fn)(nvmlDevice_t, unsigned int, nvmlEnableState_t*);
typedef nvmlReturn_t (*nvmlDeviceGetNvLinkRemotePciInfo_v2_fn)(nvmlDevice_t, unsigned int,
                                                               nvmlPciInfo_t*);
typedef nvmlReturn_t (*nvmlGpmQueryDeviceSupport_fn)(nvmlDevice_t, nvmlGpmSupport_t*);
typedef nvmlReturn_t (*nvmlGpmSampleAlloc_fn)(nvmlGpmSample_t*);
typedef nvmlReturn_t (*nvmlGpmSampleFree_fn)(nvmlGpmSample_t);
typedef nvmlReturn_t (*nvmlGpmSampleGet_fn)(nvmlDevice_t, nvmlGpmSample_t);
typedef nvmlReturn_t (*nvmlGpmMetricsGet_fn)(nvmlGpmMetricsGet_t*);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* STALLSCOPE_GPU_NVML_API_H_ */
