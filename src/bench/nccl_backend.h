// The NCCL backend of `bench allreduce`: libnccl.so.2 and the CUDA runtime
// loaded with dlopen against declarations we own (the few functions and
// constants used here, as NCCL's nccl.h and CUDA's cuda_runtime_api.h
// define them), so the binary builds and runs where neither is installed.
// One GPU per local rank: local rank k drives GPU k. The communicator is
// bootstrapped over MPI: rank 0's ncclUniqueId is broadcast to every rank.
// Buffers live on the GPU; the check copies the result back to the host.
// Not thread-safe.
#pragma once

#include <memory>
#include <string>

#include "bench/allreduce.h"
#include "core/status.h"

namespace stallscope {

class NcclAllreduceBackend : public AllreduceBackend {
 public:
  // Loads the libraries and selects GPU `local_rank`; no MPI call, so every
  // rank can fail here on its own and the ranks agree afterwards. Fails
  // with a message naming what is missing: the library, or the GPU
  // (cudaGetDeviceCount's error, or fewer GPUs than local ranks).
  static Result<std::unique_ptr<NcclAllreduceBackend>> Open(int local_rank, int local_ranks);
  ~NcclAllreduceBackend() override;

  // Collective over `world`: rank 0 makes the unique id, every rank joins.
  Status Connect(MpiWorld& world);

  std::string Name() const override { return "nccl"; }
  std::string Description() const override;
  Status Allocate(uint64_t max_count) override;
  Status Upload(std::span<const float> input) override;
  Status ClearOutput(uint64_t count) override;
  Status Launch(uint64_t count) override;
  Status Wait() override;
  Status Download(std::span<float> output) override;

  struct Api;  // the dlsym'd functions (nccl_backend.cc)

 private:
  NcclAllreduceBackend() = default;
  Status Cuda(int rc, const char* call) const;
  Status Nccl(int rc, const char* call) const;

  std::unique_ptr<Api> api_;
  int device_ = 0;
  std::string pci_bus_id_;
  int nccl_version_ = 0;
  void* stream_ = nullptr;
  void* comm_ = nullptr;
  float* send_ = nullptr;
  float* recv_ = nullptr;
};

}  // namespace stallscope
