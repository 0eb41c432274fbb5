/* A fake CUDA runtime for the tests of `bench h2d`: the C ABI of the subset
 * src/bench/cuda_runtime.h declares, on the host. "Device" memory is malloc'd;
 * a copy is a memcpy, and a copy from or to pageable memory (not from
 * cudaHostAlloc) goes through a staging buffer first, as the real driver's
 * does. Time is virtual, so results do not depend on the load of the test
 * machine: each copy advances a clock by size / rate, the rate
 * FAKE_CUDART_PINNED_GBPS (default 25) or FAKE_CUDART_PAGEABLE_GBPS (default
 * 10) GB/s; events read that clock.
 *
 * Environment: FAKE_CUDART_DEVICES (default 1; 0 makes cudaGetDeviceCount
 * fail with cudaErrorNoDevice, as on a host without a GPU),
 * FAKE_CUDART_BUS_ID (default "00000000:3B:00.0"),
 * FAKE_CUDART_FAIL_MALLOC=1 (cudaMalloc fails: cudaErrorMemoryAllocation). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

enum { kSuccess = 0, kInvalidValue = 1, kMemoryAllocation = 2, kNoDevice = 100 };

typedef struct {
  char* base;
  size_t size;
} Range;

static Range g_pinned[64];
static double g_clock_ms = 0;

static double Rate(const char* name, double fallback) {
  const char* text = getenv(name);
  double v = text ? atof(text) : 0;
  return v > 0 ? v : fallback;
}

static void Advance(size_t bytes, int pinned) {
  double gbps = pinned ? Rate("FAKE_CUDART_PINNED_GBPS", 25) : Rate("FAKE_CUDART_PAGEABLE_GBPS", 10);
  g_clock_ms += (double)bytes / (gbps * 1e9) * 1e3;
}
static int g_current = 0;

static int Devices(void) {
  const char* text = getenv("FAKE_CUDART_DEVICES");
  return text ? atoi(text) : 1;
}

static int IsPinned(const void* p) {
  for (int i = 0; i < 64; ++i) {
    const char* c = (const char*)p;
    if (g_pinned[i].base && c >= g_pinned[i].base && c < g_pinned[i].base + g_pinned[i].size)
      return 1;
  }
  return 0;
}

EXPORT int cudaGetDeviceCount(int* count) {
  int n = Devices();
  if (n <= 0) {
    *count = 0;
    return kNoDevice;
  }
  *count = n;
  return kSuccess;
}

EXPORT int cudaSetDevice(int device) {
  if (device < 0 || device >= Devices()) return kInvalidValue;
  g_current = device;
  return kSuccess;
}

EXPORT int cudaGetDeviceProperties(void* prop, int device) {
  if (device < 0 || device >= Devices()) return kInvalidValue;
  strcpy((char*)prop, "stallscope fake GPU");
  return kSuccess;
}

EXPORT int cudaDeviceGetPCIBusId(char* bus_id, int len, int device) {
  const char* id = getenv("FAKE_CUDART_BUS_ID");
  if (!id) id = "00000000:3B:00.0";
  if (device < 0 || device >= Devices() || len < 1) return kInvalidValue;
  strncpy(bus_id, id, (size_t)len - 1);
  bus_id[len - 1] = 0;
  return kSuccess;
}

EXPORT int cudaMalloc(void** ptr, size_t size) {
  const char* fail = getenv("FAKE_CUDART_FAIL_MALLOC");
  if (fail && fail[0] == '1') return kMemoryAllocation;
  *ptr = malloc(size);
  if (!*ptr) return kMemoryAllocation;
  memset(*ptr, 0, size);
  return kSuccess;
}

EXPORT int cudaFree(void* ptr) {
  free(ptr);
  return kSuccess;
}

EXPORT int cudaHostAlloc(void** ptr, size_t size, unsigned int flags) {
  (void)flags;
  for (int i = 0; i < 64; ++i) {
    if (g_pinned[i].base == NULL) {
      g_pinned[i].base = malloc(size);
      if (!g_pinned[i].base) return kMemoryAllocation;
      memset(g_pinned[i].base, 0, size);
      g_pinned[i].size = size;
      *ptr = g_pinned[i].base;
      return kSuccess;
    }
  }
  return kMemoryAllocation;
}

EXPORT int cudaFreeHost(void* ptr) {
  for (int i = 0; i < 64; ++i) {
    if (g_pinned[i].base == ptr) {
      free(ptr);
      g_pinned[i].base = NULL;
      g_pinned[i].size = 0;
      return kSuccess;
    }
  }
  return kInvalidValue;
}

EXPORT int cudaMemcpyAsync(void* dst, const void* src, size_t count, int kind, void* stream) {
  (void)stream;
  const void* host = kind == 1 ? src : dst;
  if (kind != 1 && kind != 2) return kInvalidValue;
  if (IsPinned(host)) {
    memcpy(dst, src, count);
    Advance(count, 1);
    return kSuccess;
  }
  void* staging = malloc(count);
  if (!staging) return kMemoryAllocation;
  memcpy(staging, src, count);
  memcpy(dst, staging, count);
  free(staging);
  Advance(count, 0);
  return kSuccess;
}

EXPORT int cudaStreamCreate(void** stream) {
  *stream = malloc(1);
  return kSuccess;
}

EXPORT int cudaStreamDestroy(void* stream) {
  free(stream);
  return kSuccess;
}

EXPORT int cudaEventCreate(void** event) {
  *event = calloc(1, sizeof(double));
  return *event ? kSuccess : kMemoryAllocation;
}

EXPORT int cudaEventRecord(void* event, void* stream) {
  (void)stream;
  *(double*)event = g_clock_ms;
  return kSuccess;
}

EXPORT int cudaEventSynchronize(void* event) {
  (void)event;
  return kSuccess;
}

EXPORT int cudaEventElapsedTime(float* ms, void* start, void* end) {
  *ms = (float)(*(const double*)end - *(const double*)start);
  return kSuccess;
}

EXPORT int cudaEventDestroy(void* event) {
  free(event);
  return kSuccess;
}

EXPORT const char* cudaGetErrorString(int error) {
  switch (error) {
    case kSuccess: return "no error";
    case kInvalidValue: return "invalid argument";
    case kMemoryAllocation: return "out of memory";
    case kNoDevice: return "no CUDA-capable device is detected";
    default: return "unrecognized error code";
  }
}

EXPORT int cudaRuntimeGetVersion(int* version) {
  *version = 12040;
  return kSuccess;
}

EXPORT int cudaDriverGetVersion(int* version) {
  *version = 12040;
  return kSuccess;
}
