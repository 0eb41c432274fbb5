/* A fake NVML: a shared library with the C ABI of src/probe/nvml_api.h whose
 * GPUs and values come from a script file named by FAKE_NVML_SCRIPT. The
 * tests load it through the same dlopen path as the real libnvidia-ml.so.1
 * (STALLSCOPE_NVML_LIBRARY=<this library>).
 *
 * Script: one "key value" per line, '#' starts a comment.
 *   init_error N          nvmlInit_v2 returns N (9: driver not loaded)
 *   gpus N                how many GPUs (at most 8)
 *   gpu.I.name TEXT       the rest of the line
 *   gpu.I.uuid TEXT / gpu.I.bus 00000000:3B:00.0
 *   gpu.I.numa N          answered by nvmlDeviceGetNumaNodeId (else NOT_SUPPORTED)
 *   gpu.I.KEY v0,v1,...   numbers per sample: sample k reads v[min(k, n-1)].
 *       KEY: mem_total mem_used util mem_util sm_clock sm_clock_max throttle
 *       temp power_mw power_limit_mw pcie_tx pcie_rx ecc_corrected
 *       ecc_uncorrected retired remapped gpm (1: supported) gpm.sm_util
 *       gpm.sm_occupancy gpm.tensor gpm.dram_bw gpm.pcie_tx gpm.pcie_rx
 *       gpm.nvlink_tx gpm.nvlink_rx ecc_agg_corrected ecc_agg_uncorrected
 *       remap_pending remap_failed (row counts) persistence (0/1) mig (0/1)
 *       mig_pending (0/1; mig's value when not given)
 *   gpu.I.procs PID:BYTES,PID:BYTES
 *   gpu.I.nvlinks BUS:N,BUS:N  N active NVLinks to the device at bus id BUS
 *                         (another GPU's or an NVSwitch's), links numbered in
 *                         order; the other links answer NOT_SUPPORTED
 *   gpu.I.nvlink_down L   link L (0-based) is there but inactive
 *   gpu.I.lost_after N    from sample N on (0-based), every call on the GPU
 *                         returns NVML_ERROR_GPU_IS_LOST
 * A key not given answers NVML_ERROR_NOT_SUPPORTED. A sample begins with
 * nvmlDeviceGetMemoryInfo (the probe's first call per GPU). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe/nvml_api.h"

#define EXPORT __attribute__((visibility("default")))
#define MAX_GPUS 8
#define MAX_VALUES 64
#define MAX_PROCS 16

enum {
  K_MEM_TOTAL, K_MEM_USED, K_UTIL, K_MEM_UTIL, K_SM_CLOCK, K_SM_CLOCK_MAX, K_THROTTLE, K_TEMP,
  K_POWER, K_POWER_LIMIT, K_PCIE_TX, K_PCIE_RX, K_ECC_CORR, K_ECC_UNC, K_RETIRED, K_REMAPPED,
  K_GPM, K_GPM_SM_UTIL, K_GPM_OCC, K_GPM_TENSOR, K_GPM_DRAM, K_GPM_PCIE_TX, K_GPM_PCIE_RX,
  K_GPM_NVL_TX, K_GPM_NVL_RX, K_ECC_AGG_CORR, K_ECC_AGG_UNC, K_REMAP_PENDING, K_REMAP_FAILED,
  K_PERSISTENCE, K_MIG, K_MIG_PENDING, K_COUNT
};
static const char* const kKeys[K_COUNT] = {
    "mem_total", "mem_used", "util", "mem_util", "sm_clock", "sm_clock_max", "throttle",
    "temp", "power_mw", "power_limit_mw", "pcie_tx", "pcie_rx", "ecc_corrected",
    "ecc_uncorrected", "retired", "remapped", "gpm", "gpm.sm_util", "gpm.sm_occupancy",
    "gpm.tensor", "gpm.dram_bw", "gpm.pcie_tx", "gpm.pcie_rx", "gpm.nvlink_tx",
    "gpm.nvlink_rx", "ecc_agg_corrected", "ecc_agg_uncorrected", "remap_pending",
    "remap_failed", "persistence", "mig", "mig_pending"};

struct Series {
  int n;
  double v[MAX_VALUES];
};

struct nvmlDevice_st {
  int index;
  char name[96];
  char uuid[96];
  char bus[32];
  int numa;  /* -1: not supported */
  struct Series series[K_COUNT];
  int nprocs;
  unsigned proc_pid[MAX_PROCS];
  unsigned long long proc_bytes[MAX_PROCS];
  int nlinks;                               /* NVLinks given */
  char link_remote[NVML_NVLINK_MAX_LINKS][32]; /* remote bus id per link */
  int link_down[NVML_NVLINK_MAX_LINKS];
  int lost_after; /* -1: never */
  int samples;    /* nvmlDeviceGetMemoryInfo calls */
};

struct nvmlGpmSample_st {
  int device;
  int sample;
};

static struct nvmlDevice_st g_devices[MAX_GPUS];
static int g_count = 0;
static int g_init_error = 0;
static int g_initialized = 0;

static void Load(void) {
  memset(g_devices, 0, sizeof g_devices);
  for (int i = 0; i < MAX_GPUS; ++i) {
    g_devices[i].index = i;
    g_devices[i].numa = -1;
    g_devices[i].lost_after = -1;
  }
  g_count = 0;
  g_init_error = 0;
  const char* path = getenv("FAKE_NVML_SCRIPT");
  FILE* f = path ? fopen(path, "r") : NULL;
  if (!f) {
    g_init_error = NVML_ERROR_DRIVER_NOT_LOADED;
    return;
  }
  char line[1024];
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\r\n")] = 0;
    char* p = line;
    while (*p == ' ' || *p == '\t') ++p;
    if (*p == 0 || *p == '#') continue;
    char* key = p;
    char* value = strpbrk(p, " \t");
    if (!value) continue;
    *value++ = 0;
    while (*value == ' ' || *value == '\t') ++value;
    if (strcmp(key, "gpus") == 0) {
      g_count = atoi(value);
      if (g_count < 0) g_count = 0;
      if (g_count > MAX_GPUS) g_count = MAX_GPUS;
      continue;
    }
    if (strcmp(key, "init_error") == 0) {
      g_init_error = atoi(value);
      continue;
    }
    int index = -1, used = 0;
    if (sscanf(key, "gpu.%d.%n", &index, &used) != 1 || used == 0 || index < 0 ||
        index >= MAX_GPUS)
      continue;
    struct nvmlDevice_st* d = &g_devices[index];
    const char* field = key + used;
    if (strcmp(field, "name") == 0) {
      snprintf(d->name, sizeof d->name, "%s", value);
    } else if (strcmp(field, "uuid") == 0) {
      snprintf(d->uuid, sizeof d->uuid, "%s", value);
    } else if (strcmp(field, "bus") == 0) {
      snprintf(d->bus, sizeof d->bus, "%s", value);
    } else if (strcmp(field, "numa") == 0) {
      d->numa = atoi(value);
    } else if (strcmp(field, "nvlinks") == 0) {
      char* save = NULL;
      for (char* tok = strtok_r(value, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char* last = strrchr(tok, ':');
        if (last == NULL) continue;
        *last = '\0';
        for (int n = atoi(last + 1); n > 0 && d->nlinks < NVML_NVLINK_MAX_LINKS; --n)
          snprintf(d->link_remote[d->nlinks++], sizeof d->link_remote[0], "%s", tok);
      }
    } else if (strcmp(field, "nvlink_down") == 0) {
      int link = atoi(value);
      if (link >= 0 && link < NVML_NVLINK_MAX_LINKS) d->link_down[link] = 1;
    } else if (strcmp(field, "lost_after") == 0) {
      d->lost_after = atoi(value);
    } else if (strcmp(field, "procs") == 0) {
      char* save = NULL;
      for (char* tok = strtok_r(value, ",", &save); tok && d->nprocs < MAX_PROCS;
           tok = strtok_r(NULL, ",", &save)) {
        unsigned pid = 0;
        unsigned long long bytes = 0;
        if (sscanf(tok, "%u:%llu", &pid, &bytes) == 2) {
          d->proc_pid[d->nprocs] = pid;
          d->proc_bytes[d->nprocs] = bytes;
          d->nprocs++;
        }
      }
    } else {
      for (int k = 0; k < K_COUNT; ++k) {
        if (strcmp(field, kKeys[k]) != 0) continue;
        struct Series* s = &d->series[k];
        s->n = 0;
        char* save = NULL;
        for (char* tok = strtok_r(value, ",", &save); tok && s->n < MAX_VALUES;
             tok = strtok_r(NULL, ",", &save)) {
          s->v[s->n++] = strtod(tok, NULL);
        }
      }
    }
  }
  fclose(f);
}

static int Valid(nvmlDevice_t d) { return d >= g_devices && d < g_devices + g_count; }
static int Lost(nvmlDevice_t d) {
  return d->lost_after >= 0 && d->samples > d->lost_after;
}
static int SampleIndex(nvmlDevice_t d) { return d->samples > 0 ? d->samples - 1 : 0; }
/* 1 and *out set when the key is scripted. */
static int Value(nvmlDevice_t d, int key, int sample, double* out) {
  const struct Series* s = &d->series[key];
  if (s->n == 0) return 0;
  *out = s->v[sample < s->n ? sample : s->n - 1];
  return 1;
}

#define CHECK_DEVICE(d)                                  \
  if (!g_initialized) return NVML_ERROR_UNINITIALIZED;   \
  if (!Valid(d)) return NVML_ERROR_INVALID_ARGUMENT;     \
  if (Lost(d)) return NVML_ERROR_GPU_IS_LOST

static nvmlReturn_t UnsignedValue(nvmlDevice_t d, int key, unsigned* out) {
  CHECK_DEVICE(d);
  double v;
  if (!out) return NVML_ERROR_INVALID_ARGUMENT;
  if (!Value(d, key, SampleIndex(d), &v)) return NVML_ERROR_NOT_SUPPORTED;
  *out = (unsigned)v;
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlInit_v2(void) {
  Load();
  if (g_init_error) return g_init_error;
  g_initialized = 1;
  return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlShutdown(void) {
  g_initialized = 0;
  return NVML_SUCCESS;
}
EXPORT const char* nvmlErrorString(nvmlReturn_t rc) {
  switch (rc) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    default: return "Unknown Error";
  }
}
EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned* count) {
  if (!g_initialized) return NVML_ERROR_UNINITIALIZED;
  *count = (unsigned)g_count;
  return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_t* device) {
  if (!g_initialized) return NVML_ERROR_UNINITIALIZED;
  if (index >= (unsigned)g_count) return NVML_ERROR_INVALID_ARGUMENT;
  *device = &g_devices[index];
  return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char* name, unsigned length) {
  CHECK_DEVICE(d);
  if (strlen(d->name) + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  memcpy(name, d->name, strlen(d->name) + 1);
  return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char* uuid, unsigned length) {
  CHECK_DEVICE(d);
  if (strlen(d->uuid) + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  memcpy(uuid, d->uuid, strlen(d->uuid) + 1);
  return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t* pci) {
  CHECK_DEVICE(d);
  memset(pci, 0, sizeof *pci);
  snprintf(pci->busId, sizeof pci->busId, "%s", d->bus);
  snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%s", d->bus + (strlen(d->bus) > 12 ? 4 : 0));
  return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t d, unsigned link,
                                             nvmlEnableState_t* active) {
  CHECK_DEVICE(d);
  if (link >= NVML_NVLINK_MAX_LINKS) return NVML_ERROR_INVALID_ARGUMENT;
  if ((int)link >= d->nlinks) return NVML_ERROR_NOT_SUPPORTED;
  *active = d->link_down[link] ? NVML_FEATURE_DISABLED : NVML_FEATURE_ENABLED;
  return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t d, unsigned link,
                                                        nvmlPciInfo_t* pci) {
  CHECK_DEVICE(d);
  if (link >= NVML_NVLINK_MAX_LINKS) return NVML_ERROR_INVALID_ARGUMENT;
  if ((int)link >= d->nlinks) return NVML_ERROR_NOT_SUPPORTED;
  memset(pci, 0, sizeof *pci);
  snprintf(pci->busId, sizeof pci->busId, "%s", d->link_remote[link]);
  return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t d, unsigned* node) {
  CHECK_DEVICE(d);
  if (d->numa < 0) return NVML_ERROR_NOT_SUPPORTED;
  *node = (unsigned)d->numa;
  return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t* memory) {
  if (!g_initialized) return NVML_ERROR_UNINITIALIZED;
  if (!Valid(d)) return NVML_ERROR_INVALID_ARGUMENT;
  d->samples++;  /* a new sample of this GPU */
  if (Lost(d)) return NVML_ERROR_GPU_IS_LOST;
  double total = 0, used = 0;
  Value(d, K_MEM_TOTAL, SampleIndex(d), &total);
  Value(d, K_MEM_USED, SampleIndex(d), &used);
  memory->total = (unsigned long long)total;
  memory->used = (unsigned long long)used;
  memory->free = memory->total > memory->used ? memory->total - memory->used : 0;
  return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t* u) {
  CHECK_DEVICE(d);
  double gpu = 0, mem = 0;
  Value(d, K_UTIL, SampleIndex(d), &gpu);
  Value(d, K_MEM_UTIL, SampleIndex(d), &mem);
  u->gpu = (unsigned)gpu;
  u->memory = (unsigned)mem;
  return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned* mhz) {
  if (type != NVML_CLOCK_SM) return NVML_ERROR_NOT_SUPPORTED;
  return UnsignedValue(d, K_SM_CLOCK, mhz);
}
EXPORT nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t d, int type, unsigned* mhz) {
  if (type != NVML_CLOCK_SM) return NVML_ERROR_NOT_SUPPORTED;
  return UnsignedValue(d, K_SM_CLOCK_MAX, mhz);
}
/* Only the pre-12.2 name: the loader must fall back to it. */
EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t d,
                                                               unsigned long long* reasons) {
  CHECK_DEVICE(d);
  double v;
  if (!Value(d, K_THROTTLE, SampleIndex(d), &v)) return NVML_ERROR_NOT_SUPPORTED;
  *reasons = (unsigned long long)v;
  return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned* celsius) {
  if (sensor != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
  return UnsignedValue(d, K_TEMP, celsius);
}
EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned* mw) {
  return UnsignedValue(d, K_POWER, mw);
}
EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d, unsigned* mw) {
  return UnsignedValue(d, K_POWER_LIMIT, mw);
}
EXPORT nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t d, int counter, unsigned* kbs) {
  return UnsignedValue(d, counter == NVML_PCIE_UTIL_TX_BYTES ? K_PCIE_TX : K_PCIE_RX, kbs);
}
EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t d, int type, int counter,
                                                unsigned long long* count) {
  CHECK_DEVICE(d);
  int key;
  if (counter == NVML_VOLATILE_ECC)
    key = type == NVML_MEMORY_ERROR_TYPE_CORRECTED ? K_ECC_CORR : K_ECC_UNC;
  else if (counter == NVML_AGGREGATE_ECC)
    key = type == NVML_MEMORY_ERROR_TYPE_CORRECTED ? K_ECC_AGG_CORR : K_ECC_AGG_UNC;
  else
    return NVML_ERROR_INVALID_ARGUMENT;
  double v;
  if (!Value(d, key, SampleIndex(d), &v))
    return NVML_ERROR_NOT_SUPPORTED;
  *count = (unsigned long long)v;
  return NVML_SUCCESS;
}
/* All retired pages are counted under the double-bit cause. */
EXPORT nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t d, int cause, unsigned* count,
                                              unsigned long long* addresses) {
  CHECK_DEVICE(d);
  double v;
  if (!Value(d, K_RETIRED, SampleIndex(d), &v)) return NVML_ERROR_NOT_SUPPORTED;
  unsigned n = cause == NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR ? (unsigned)v : 0;
  if (*count < n) {
    *count = n;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  for (unsigned i = 0; i < n && addresses; ++i) addresses[i] = 0x1000ull * (i + 1);
  *count = n;
  return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t d, unsigned* corr, unsigned* unc,
                                              unsigned* pending, unsigned* failed) {
  CHECK_DEVICE(d);
  double v;
  if (!Value(d, K_REMAPPED, SampleIndex(d), &v)) return NVML_ERROR_NOT_SUPPORTED;
  *corr = 0;
  *unc = (unsigned)v;
  double pending_rows = 0, failed_rows = 0;
  Value(d, K_REMAP_PENDING, SampleIndex(d), &pending_rows);
  Value(d, K_REMAP_FAILED, SampleIndex(d), &failed_rows);
  *pending = (unsigned)pending_rows;
  *failed = (unsigned)failed_rows;
  return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t d, int* mode) {
  CHECK_DEVICE(d);
  double v;
  if (!Value(d, K_PERSISTENCE, SampleIndex(d), &v)) return NVML_ERROR_NOT_SUPPORTED;
  *mode = v != 0 ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned* current, unsigned* pending) {
  CHECK_DEVICE(d);
  double now, next;
  if (!Value(d, K_MIG, SampleIndex(d), &now)) return NVML_ERROR_NOT_SUPPORTED;
  if (!Value(d, K_MIG_PENDING, SampleIndex(d), &next)) next = now;
  *current = now != 0 ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  *pending = next != 0 ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t d, unsigned* count,
                                                            nvmlProcessInfo_v2_t* infos) {
  CHECK_DEVICE(d);
  if (*count < (unsigned)d->nprocs || (d->nprocs > 0 && !infos)) {
    *count = (unsigned)d->nprocs;
    return d->nprocs ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
  }
  for (int i = 0; i < d->nprocs; ++i) {
    infos[i].pid = d->proc_pid[i];
    infos[i].usedGpuMemory = d->proc_bytes[i];
    infos[i].gpuInstanceId = 0xFFFFFFFFu;
    infos[i].computeInstanceId = 0xFFFFFFFFu;
  }
  *count = (unsigned)d->nprocs;
  return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t d, nvmlGpmSupport_t* support) {
  CHECK_DEVICE(d);
  if (support->version != NVML_GPM_SUPPORT_VERSION) return NVML_ERROR_INVALID_ARGUMENT;
  double v = 0;
  Value(d, K_GPM, 0, &v);
  support->isSupportedDevice = v != 0;
  return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t* sample) {
  *sample = (nvmlGpmSample_t)calloc(1, sizeof(struct nvmlGpmSample_st));
  return *sample ? NVML_SUCCESS : NVML_ERROR_UNKNOWN;
}
EXPORT nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t sample) {
  free(sample);
  return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t d, nvmlGpmSample_t sample) {
  CHECK_DEVICE(d);
  double v = 0;
  Value(d, K_GPM, 0, &v);
  if (v == 0) return NVML_ERROR_NOT_SUPPORTED;
  sample->device = d->index;
  sample->sample = SampleIndex(d);
  return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t* get) {
  if (!g_initialized) return NVML_ERROR_UNINITIALIZED;
  if (get->version != NVML_GPM_METRICS_GET_VERSION || !get->sample1 || !get->sample2 ||
      get->numMetrics > STALLSCOPE_GPM_METRICS)
    return NVML_ERROR_INVALID_ARGUMENT;
  struct nvmlDevice_st* d = &g_devices[get->sample2->device];
  if (Lost(d)) return NVML_ERROR_GPU_IS_LOST;
  for (unsigned i = 0; i < get->numMetrics; ++i) {
    nvmlGpmMetric_t* m = &get->metrics[i];
    int key = -1;
    switch (m->metricId) {
      case NVML_GPM_METRIC_SM_UTIL: key = K_GPM_SM_UTIL; break;
      case NVML_GPM_METRIC_SM_OCCUPANCY: key = K_GPM_OCC; break;
      case NVML_GPM_METRIC_ANY_TENSOR_UTIL: key = K_GPM_TENSOR; break;
      case NVML_GPM_METRIC_DRAM_BW_UTIL: key = K_GPM_DRAM; break;
      case NVML_GPM_METRIC_PCIE_TX_PER_SEC: key = K_GPM_PCIE_TX; break;
      case NVML_GPM_METRIC_PCIE_RX_PER_SEC: key = K_GPM_PCIE_RX; break;
      case NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC: key = K_GPM_NVL_TX; break;
      case NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC: key = K_GPM_NVL_RX; break;
      default: break;
    }
    double v;
    if (key < 0 || !Value(d, key, get->sample2->sample, &v)) {
      m->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
      continue;
    }
    m->nvmlReturn = NVML_SUCCESS;
    m->value = v;
    m->metricInfo.shortName = NULL;
    m->metricInfo.longName = NULL;
    m->metricInfo.unit = NULL;
  }
  return NVML_SUCCESS;
}
