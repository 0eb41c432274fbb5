// The CUDA runtime (libcudart), loaded at run time with dlopen against
// declarations we own for the subset `bench h2d` uses. No CUDA header is
// included: the types below are the C ABI of cuda_runtime_api.h (opaque
// pointers, int error codes, size_t sizes), stable across CUDA 11-13.
//
// Load order: $STALLSCOPE_CUDART_LIBRARY when set (tests point it at a fake),
// else libcudart.so.12, libcudart.so.13, libcudart.so, then the same names
// under /usr/local/cuda/lib64. A missing library or symbol is a Status, never
// a link failure. One CudaRuntime per process is enough; its calls are as
// thread-safe as libcudart's own.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "core/status.h"

namespace stallscope {

// cudaError_t values we name; any other is printed with cudaGetErrorString.
inline constexpr int kCudaSuccess = 0;
inline constexpr int kCudaErrorInsufficientDriver = 35;
inline constexpr int kCudaErrorNoDevice = 100;

// cudaMemcpyKind
inline constexpr int kCudaMemcpyHostToDevice = 1;
inline constexpr int kCudaMemcpyDeviceToHost = 2;

using CudaStream = void*;  // cudaStream_t
using CudaEvent = void*;   // cudaEvent_t

// The function pointers, resolved by name. Signatures as cuda_runtime_api.h.
struct CudaApi {
  int (*GetDeviceCount)(int* count) = nullptr;
  int (*SetDevice)(int device) = nullptr;
  int (*GetDeviceProperties)(void* prop, int device) = nullptr;  // only name[256] is read
  int (*DeviceGetPCIBusId)(char* bus_id, int len, int device) = nullptr;
  int (*Malloc)(void** ptr, size_t size) = nullptr;
  int (*Free)(void* ptr) = nullptr;
  int (*HostAlloc)(void** ptr, size_t size, unsigned int flags) = nullptr;
  int (*FreeHost)(void* ptr) = nullptr;
  int (*MemcpyAsync)(void* dst, const void* src, size_t count, int kind,
                     CudaStream stream) = nullptr;
  int (*StreamCreate)(CudaStream* stream) = nullptr;
  int (*StreamDestroy)(CudaStream stream) = nullptr;
  int (*EventCreate)(CudaEvent* event) = nullptr;
  int (*EventRecord)(CudaEvent event, CudaStream stream) = nullptr;
  int (*EventSynchronize)(CudaEvent event) = nullptr;
  int (*EventElapsedTime)(float* ms, CudaEvent start, CudaEvent end) = nullptr;
  int (*EventDestroy)(CudaEvent event) = nullptr;
  const char* (*GetErrorString)(int error) = nullptr;
  int (*RuntimeGetVersion)(int* version) = nullptr;
  int (*DriverGetVersion)(int* version) = nullptr;
};

class CudaRuntime {
 public:
  // Unavailable when no library loads or a symbol is missing; the message
  // names the library and what dlopen/dlsym said.
  static Result<std::unique_ptr<CudaRuntime>> Load();
  // The same, from one path only (tests).
  static Result<std::unique_ptr<CudaRuntime>> LoadFrom(const std::string& path);
  ~CudaRuntime();
  CudaRuntime(const CudaRuntime&) = delete;
  CudaRuntime& operator=(const CudaRuntime&) = delete;

  const CudaApi& api() const { return api_; }
  const std::string& path() const { return path_; }
  // "cudaGetDeviceCount: no CUDA-capable device is detected (100)".
  std::string ErrorText(const char* call, int error) const;
  // CUDA versions as 12040 -> "12.4"; "" when unknown.
  std::string RuntimeVersion() const;
  std::string DriverVersion() const;

 private:
  CudaRuntime() = default;
  void* handle_ = nullptr;
  std::string path_;
  CudaApi api_;
};

}  // namespace stallscope
