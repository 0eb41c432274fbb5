// NCCL through dlopen: see nccl_backend.h.
#include "bench/nccl_backend.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstring>

#include "dist/mpi_world.h"

namespace stallscope {
namespace {

// From cuda_runtime_api.h / driver_types.h.
constexpr int kCudaSuccess = 0;
constexpr int kCudaMemcpyHostToDevice = 1;
constexpr int kCudaMemcpyDeviceToHost = 2;
// From nccl.h.
constexpr int kNcclSuccess = 0;
constexpr int kNcclFloat32 = 7;
constexpr int kNcclSum = 0;
struct NcclUniqueId {
  char internal[128];
};

// The runtime's soname changes with each CUDA major version; the toolkit's
// directory is tried when the dynamic loader's path does not have it.
constexpr const char* kCudartNames[] = {
    "libcudart.so",
    "libcudart.so.13",
    "libcudart.so.12",
    "libcudart.so.11.0",
    "/usr/local/cuda/lib64/libcudart.so",
};
constexpr const char* kNcclNames[] = {"libnccl.so.2", "libnccl.so",
                                      "/usr/local/cuda/lib64/libnccl.so.2",
                                      "/usr/lib/x86_64-linux-gnu/libnccl.so.2"};

void* OpenFirst(std::span<const char* const> names, std::string* tried) {
  for (const char* name : names) {
    if (void* handle = ::dlopen(name, RTLD_NOW | RTLD_LOCAL)) return handle;
    *tried += fmt::format("\n  {}: {}", name, ::dlerror());
  }
  return nullptr;
}

}  // namespace

struct NcclAllreduceBackend::Api {
  void* cudart = nullptr;
  void* nccl = nullptr;
  int (*cudaGetDeviceCount)(int*) = nullptr;
  int (*cudaSetDevice)(int) = nullptr;
  int (*cudaMalloc)(void**, size_t) = nullptr;
  int (*cudaFree)(void*) = nullptr;
  int (*cudaMemcpy)(void*, const void*, size_t, int) = nullptr;
  int (*cudaMemset)(void*, int, size_t) = nullptr;
  int (*cudaStreamCreate)(void**) = nullptr;
  int (*cudaStreamSynchronize)(void*) = nullptr;
  int (*cudaStreamDestroy)(void*) = nullptr;
  int (*cudaDeviceGetPCIBusId)(char*, int, int) = nullptr;
  const char* (*cudaGetErrorString)(int) = nullptr;
  int (*ncclGetVersion)(int*) = nullptr;
  int (*ncclGetUniqueId)(NcclUniqueId*) = nullptr;
  int (*ncclCommInitRank)(void**, int, NcclUniqueId, int) = nullptr;
  int (*ncclAllReduce)(const void*, void*, size_t, int, int, void*, void*) = nullptr;
  int (*ncclCommDestroy)(void*) = nullptr;
  const char* (*ncclGetErrorString)(int) = nullptr;
};

namespace {

template <typename F>
bool Bind(void* handle, const char* name, F* out, std::string* missing) {
  *out = reinterpret_cast<F>(::dlsym(handle, name));
  if (*out == nullptr) *missing += std::string(missing->empty() ? "" : ", ") + name;
  return *out != nullptr;
}

}  // namespace

Result<std::unique_ptr<NcclAllreduceBackend>> NcclAllreduceBackend::Open(int local_rank,
                                                                         int local_ranks) {
  std::unique_ptr<NcclAllreduceBackend> b(new NcclAllreduceBackend());
  b->api_ = std::make_unique<Api>();
  Api& a = *b->api_;
  std::string tried;
  a.cudart = OpenFirst(kCudartNames, &tried);
  if (a.cudart == nullptr)
    return Status::Unavailable("--backend nccl: no CUDA runtime (libcudart) could be loaded:" +
                               tried);
  tried.clear();
  a.nccl = OpenFirst(kNcclNames, &tried);
  if (a.nccl == nullptr)
    return Status::Unavailable("--backend nccl: libnccl.so.2 could not be loaded:" + tried);
  std::string missing;
  Bind(a.cudart, "cudaGetDeviceCount", &a.cudaGetDeviceCount, &missing);
  Bind(a.cudart, "cudaSetDevice", &a.cudaSetDevice, &missing);
  Bind(a.cudart, "cudaMalloc", &a.cudaMalloc, &missing);
  Bind(a.cudart, "cudaFree", &a.cudaFree, &missing);
  Bind(a.cudart, "cudaMemcpy", &a.cudaMemcpy, &missing);
  Bind(a.cudart, "cudaMemset", &a.cudaMemset, &missing);
  Bind(a.cudart, "cudaStreamCreate", &a.cudaStreamCreate, &missing);
  Bind(a.cudart, "cudaStreamSynchronize", &a.cudaStreamSynchronize, &missing);
  Bind(a.cudart, "cudaStreamDestroy", &a.cudaStreamDestroy, &missing);
  Bind(a.cudart, "cudaDeviceGetPCIBusId", &a.cudaDeviceGetPCIBusId, &missing);
  Bind(a.cudart, "cudaGetErrorString", &a.cudaGetErrorString, &missing);
  Bind(a.nccl, "ncclGetVersion", &a.ncclGetVersion, &missing);
  Bind(a.nccl, "ncclGetUniqueId", &a.ncclGetUniqueId, &missing);
  Bind(a.nccl, "ncclCommInitRank", &a.ncclCommInitRank, &missing);
  Bind(a.nccl, "ncclAllReduce", &a.ncclAllReduce, &missing);
  Bind(a.nccl, "ncclCommDestroy", &a.ncclCommDestroy, &missing);
  Bind(a.nccl, "ncclGetErrorString", &a.ncclGetErrorString, &missing);
  if (!missing.empty())
    return Status::Unavailable("--backend nccl: the CUDA runtime or NCCL lacks " + missing);

  int count = 0;
  int rc = a.cudaGetDeviceCount(&count);
  if (rc != kCudaSuccess || count == 0) {
    std::string why = rc != kCudaSuccess ? fmt::format("cudaGetDeviceCount: {} (error {})",
                                                       a.cudaGetErrorString(rc), rc)
                                         : std::string("cudaGetDeviceCount found 0 devices");
    return Status::Unavailable(
        fmt::format("--backend nccl: no GPU found ({}); it needs one GPU per rank on the node. "
                    "Use --backend mpi to measure the CPU path, or run on GPU nodes "
                    "(check: nvidia-smi -L)",
                    why));
  }
  if (local_ranks > count) {
    return Status::Unavailable(fmt::format(
        "--backend nccl: {} ranks on this node but {} GPU(s): one GPU per rank; start at most "
        "{} ranks per node (mpirun --npernode {}, srun --ntasks-per-node={})",
        local_ranks, count, count, count, count));
  }
  b->device_ = local_rank;
  if (Status s = b->Cuda(a.cudaSetDevice(b->device_), "cudaSetDevice"); !s.ok()) return s;
  char bus[64] = "";
  if (a.cudaDeviceGetPCIBusId(bus, sizeof(bus), b->device_) == kCudaSuccess) b->pci_bus_id_ = bus;
  (void)a.ncclGetVersion(&b->nccl_version_);
  if (Status s = b->Cuda(a.cudaStreamCreate(&b->stream_), "cudaStreamCreate"); !s.ok()) return s;
  return b;
}

NcclAllreduceBackend::~NcclAllreduceBackend() {
  if (!api_) return;
  if (comm_) api_->ncclCommDestroy(comm_);
  if (send_) api_->cudaFree(send_);
  if (recv_) api_->cudaFree(recv_);
  if (stream_) api_->cudaStreamDestroy(stream_);
}

Status NcclAllreduceBackend::Cuda(int rc, const char* call) const {
  if (rc == kCudaSuccess) return Status::Ok();
  return Status::Unavailable(
      fmt::format("{} on GPU {}: {} (error {})", call, device_, api_->cudaGetErrorString(rc), rc));
}

Status NcclAllreduceBackend::Nccl(int rc, const char* call) const {
  if (rc == kNcclSuccess) return Status::Ok();
  return Status::Unavailable(
      fmt::format("{} on GPU {}: {} (error {})", call, device_, api_->ncclGetErrorString(rc), rc));
}

Status NcclAllreduceBackend::Connect(MpiWorld& world) {
  NcclUniqueId id{};
  if (world.rank() == 0) {
    if (Status s = Nccl(api_->ncclGetUniqueId(&id), "ncclGetUniqueId"); !s.ok()) return s;
  }
  if (Status s = world.Broadcast(&id, sizeof(id), 0); !s.ok()) return s;
  return Nccl(api_->ncclCommInitRank(&comm_, world.size(), id, world.rank()), "ncclCommInitRank");
}

std::string NcclAllreduceBackend::Description() const {
  int v = nccl_version_;
  // NCCL_VERSION_CODE: major*10000 + minor*100 + patch from 2.9 on.
  return fmt::format("NCCL {}.{}.{} on GPU {} ({})", v / 10000, (v / 100) % 100, v % 100, device_,
                     pci_bus_id_);
}

Status NcclAllreduceBackend::Allocate(uint64_t max_count) {
  size_t bytes = max_count * sizeof(float);
  void* s = nullptr;
  void* r = nullptr;
  if (Status st = Cuda(api_->cudaMalloc(&s, bytes), "cudaMalloc"); !st.ok()) return st;
  send_ = static_cast<float*>(s);
  if (Status st = Cuda(api_->cudaMalloc(&r, bytes), "cudaMalloc"); !st.ok()) return st;
  recv_ = static_cast<float*>(r);
  return Status::Ok();
}

Status NcclAllreduceBackend::Upload(std::span<const float> input) {
  return Cuda(api_->cudaMemcpy(send_, input.data(), input.size_bytes(), kCudaMemcpyHostToDevice),
              "cudaMemcpy");
}

Status NcclAllreduceBackend::ClearOutput(uint64_t count) {
  // All-ones bytes are a NaN: never equal to an expected sum.
  return Cuda(api_->cudaMemset(recv_, 0xff, count * sizeof(float)), "cudaMemset");
}

Status NcclAllreduceBackend::Launch(uint64_t count) {
  return Nccl(api_->ncclAllReduce(send_, recv_, count, kNcclFloat32, kNcclSum, comm_, stream_),
              "ncclAllReduce");
}

Status NcclAllreduceBackend::Wait() {
  return Cuda(api_->cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
}

Status NcclAllreduceBackend::Download(std::span<float> output) {
  return Cuda(api_->cudaMemcpy(output.data(), recv_, output.size_bytes(), kCudaMemcpyDeviceToHost),
              "cudaMemcpy");
}

}  // namespace stallscope
