// RunH2dBench: the measuring half of `bench h2d` (cuda_h2d_run.h).
//
// Per GPU: one device buffer of the largest size; for each host NUMA node
// (the GPU's, then another) a pinned buffer (cudaHostAlloc under a
// set_mempolicy(MPOL_BIND) so its pages land on that node) and a pageable one
// (mmap + mbind + touch). The thread runs on the GPU's node's CPUs, so only
// the memory's place changes between the two. Each point: warm-up copies,
// then N copies between two CUDA events on one stream.
#include "bench/cuda_h2d_run.h"

#include <fmt/format.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include "bench/cuda_h2d.h"
#include "bench/cuda_runtime.h"
#include "core/file.h"
#include "probe/pcie_link.h"

namespace stallscope {
namespace {

constexpr int kMpolDefault = 0;
constexpr int kMpolBind = 2;
constexpr int kMaxNodes = 1024;
using NodeMask = unsigned long[kMaxNodes / (8 * sizeof(unsigned long))];

void MaskOf(int node, NodeMask& mask) {
  std::memset(mask, 0, sizeof(NodeMask));
  mask[node / (8 * sizeof(unsigned long))] |= 1ul << (node % (8 * sizeof(unsigned long)));
}

// The kernel reads maxnode - 1 bits.
bool BindThreadMemory(int node) {
  NodeMask mask;
  MaskOf(node, mask);
  return ::syscall(SYS_set_mempolicy, kMpolBind, mask, kMaxNodes + 1) == 0;
}

void ResetThreadMemory() { ::syscall(SYS_set_mempolicy, kMpolDefault, nullptr, 0); }

bool BindRange(void* address, size_t length, int node) {
  NodeMask mask;
  MaskOf(node, mask);
  return ::syscall(SYS_mbind, address, length, kMpolBind, mask, kMaxNodes + 1, 0) == 0;
}

// Runs the calling thread on one node's CPUs while it lives.
class CpuBinding {
 public:
  CpuBinding(const Root& root, int node) {
    if (::sched_getaffinity(0, sizeof(old_), &old_) != 0) return;
    Result<std::string> text =
        ReadAttribute(root.Path(fmt::format("/sys/devices/system/node/node{}/cpulist", node)));
    if (!text.ok()) return;
    std::optional<std::vector<int>> cpus = ParseNodeList(*text);
    if (!cpus || cpus->empty()) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int cpu : *cpus)
      if (cpu < CPU_SETSIZE && CPU_ISSET(cpu, &old_)) CPU_SET(cpu, &set);
    if (CPU_COUNT(&set) == 0) return;  // none of the node's CPUs are ours
    bound_ = ::sched_setaffinity(0, sizeof(set), &set) == 0;
  }
  ~CpuBinding() {
    if (bound_) ::sched_setaffinity(0, sizeof(old_), &old_);
  }
  bool bound() const { return bound_; }

 private:
  cpu_set_t old_{};
  bool bound_ = false;
};

// A host buffer on one node, freed on scope exit.
class HostBuffer {
 public:
  HostBuffer(const CudaRuntime& cuda, HostMemory memory) : cuda_(cuda), memory_(memory) {}
  ~HostBuffer() {
    if (data_ == nullptr) return;
    if (memory_ == HostMemory::kPinned) {
      cuda_.api().FreeHost(data_);
    } else {
      ::munmap(data_, size_);
    }
  }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  // node nullopt: no binding. Returns the error text, "" when allocated;
  // *bound says whether the node binding took.
  std::string Allocate(size_t size, std::optional<int> node, bool* bound) {
    size_ = size;
    *bound = false;
    if (memory_ == HostMemory::kPinned) {
      // cudaHostAlloc faults the pages in itself: the thread's policy places them.
      if (node) *bound = BindThreadMemory(*node);
      if (node && !*bound) bind_errno_ = errno;
      int err = cuda_.api().HostAlloc(&data_, size, 0);
      if (node) ResetThreadMemory();
      if (err != kCudaSuccess) {
        data_ = nullptr;
        return cuda_.ErrorText("cudaHostAlloc", err);
      }
    } else {
      void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) return fmt::format("mmap {} bytes: {}", size, std::strerror(errno));
      data_ = p;
      if (node) *bound = BindRange(p, size, *node);
      if (node && !*bound) bind_errno_ = errno;
    }
    std::memset(data_, 0x5a, size);  // fault every page in, on its node
    return "";
  }
  void* data() const { return data_; }
  int bind_errno() const { return bind_errno_; }

 private:
  int bind_errno_ = 0;
  const CudaRuntime& cuda_;
  HostMemory memory_;
  void* data_ = nullptr;
  size_t size_ = 0;
};

struct DeviceContext {
  const CudaRuntime& cuda;
  void* device = nullptr;
  CudaStream stream = nullptr;
  CudaEvent start = nullptr, end = nullptr;
  ~DeviceContext() {
    const CudaApi& api = cuda.api();
    if (start) api.EventDestroy(start);
    if (end) api.EventDestroy(end);
    if (stream) api.StreamDestroy(stream);
    if (device) api.Free(device);
  }
};

// One point: warm-up, then `copies` copies between the two events.
Result<H2dSample> TimePoint(DeviceContext& ctx, void* host, uint64_t size, CopyDirection dir,
                            const H2dOptions& options) {
  const CudaApi& api = ctx.cuda.api();
  int kind =
      dir == CopyDirection::kHostToDevice ? kCudaMemcpyHostToDevice : kCudaMemcpyDeviceToHost;
  void* dst = dir == CopyDirection::kHostToDevice ? ctx.device : host;
  const void* src = dir == CopyDirection::kHostToDevice ? host : ctx.device;
  auto fail = [&](const char* call, int err) {
    return Status::Unavailable(ctx.cuda.ErrorText(call, err));
  };
  for (int i = 0; i < options.warmup; ++i) {
    if (int err = api.MemcpyAsync(dst, src, size, kind, ctx.stream); err != kCudaSuccess)
      return fail("cudaMemcpyAsync", err);
  }
  H2dSample sample;
  sample.size_bytes = size;
  sample.direction = dir;
  sample.copies = CopiesFor(size, options.min_bytes_per_point, options.min_iterations);
  if (int err = api.EventRecord(ctx.start, ctx.stream); err != kCudaSuccess)
    return fail("cudaEventRecord", err);
  for (int i = 0; i < sample.copies; ++i) {
    if (int err = api.MemcpyAsync(dst, src, size, kind, ctx.stream); err != kCudaSuccess)
      return fail("cudaMemcpyAsync", err);
  }
  if (int err = api.EventRecord(ctx.end, ctx.stream); err != kCudaSuccess)
    return fail("cudaEventRecord", err);
  if (int err = api.EventSynchronize(ctx.end); err != kCudaSuccess)
    return fail("cudaEventSynchronize", err);
  float ms = 0;
  if (int err = api.EventElapsedTime(&ms, ctx.start, ctx.end); err != kCudaSuccess)
    return fail("cudaEventElapsedTime", err);
  sample.seconds = ms / 1000.0;
  sample.bytes_per_second = BytesPerSecond(size, sample.copies, sample.seconds);
  return sample;
}

void RunGpu(const CudaRuntime& cuda, const H2dOptions& options, const std::vector<uint64_t>& sizes,
            const std::vector<int>& memory_nodes, H2dGpu& gpu) {
  const CudaApi& api = cuda.api();
  if (int err = api.SetDevice(gpu.index); err != kCudaSuccess) {
    gpu.notes.push_back(cuda.ErrorText("cudaSetDevice", err));
    return;
  }
  // cudaDeviceProp begins with char name[256]; the rest of its (versioned,
  // ~1 KiB) layout is never read, so a generous buffer is all we need.
  std::vector<char> props(16384, 0);
  if (api.GetDeviceProperties(props.data(), gpu.index) == kCudaSuccess)
    gpu.name.assign(props.data(), strnlen(props.data(), 256));
  char bus_id[64] = {};
  if (api.DeviceGetPCIBusId(bus_id, sizeof(bus_id) - 1, gpu.index) == kCudaSuccess)
    gpu.pci_bus_id = bus_id;
  gpu.numa_node = ReadPciNumaNode(options.root, gpu.pci_bus_id);
  if (std::optional<std::string> address = CudaBusIdToSysfs(gpu.pci_bus_id)) {
    Result<PcieLink> link = ReadPcieLink(options.root, PcieDeviceKind::kGpu, *address, *address);
    if (link.ok()) {
      gpu.link = std::move(*link);
    } else {
      gpu.notes.push_back("no PCIe link figures: " + link.status().message());
    }
  }
  NumaPlacement placement = ChooseNumaNodes(gpu.numa_node, memory_nodes);
  if (!placement.local)
    gpu.notes.push_back("no NUMA node information: host buffers not bound");
  else if (!placement.remote)
    gpu.notes.push_back("one NUMA node with memory: no remote-node rows");

  DeviceContext ctx{cuda};
  uint64_t largest = sizes.back();
  if (int err = api.Malloc(&ctx.device, largest); err != kCudaSuccess) {
    ctx.device = nullptr;
    gpu.notes.push_back(cuda.ErrorText("cudaMalloc", err));
    return;
  }
  if (int err = api.StreamCreate(&ctx.stream); err != kCudaSuccess) {
    ctx.stream = nullptr;
    gpu.notes.push_back(cuda.ErrorText("cudaStreamCreate", err));
    return;
  }
  if (api.EventCreate(&ctx.start) != kCudaSuccess || api.EventCreate(&ctx.end) != kCudaSuccess) {
    gpu.notes.push_back("cudaEventCreate failed");
    return;
  }
  std::optional<CpuBinding> cpus;
  if (placement.local) {
    cpus.emplace(options.root, *placement.local);
    if (!cpus->bound())
      gpu.notes.push_back(fmt::format("could not run on node {}'s CPUs", *placement.local));
  }
  std::vector<std::optional<int>> nodes = {placement.local};
  if (placement.remote) nodes.push_back(placement.remote);
  for (size_t n = 0; n < nodes.size(); ++n) {
    for (HostMemory memory : {HostMemory::kPinned, HostMemory::kPageable}) {
      if (options.progress)
        options.progress(fmt::format("bench h2d: GPU {} {} node {}", gpu.index,
                                     HostMemoryName(memory),
                                     nodes[n] ? fmt::format("{}", *nodes[n]) : "unbound"));
      HostBuffer buffer(cuda, memory);
      bool bound = false;
      if (std::string error = buffer.Allocate(largest, nodes[n], &bound); !error.empty()) {
        gpu.notes.push_back(fmt::format("{} buffer: {}", HostMemoryName(memory), error));
        continue;
      }
      if (nodes[n] && !bound)
        gpu.notes.push_back(
            fmt::format("{} buffer: binding to NUMA node {} failed ({}); placement "
                        "left to the kernel",
                        HostMemoryName(memory), *nodes[n], std::strerror(buffer.bind_errno())));
      for (CopyDirection dir : {CopyDirection::kHostToDevice, CopyDirection::kDeviceToHost}) {
        for (uint64_t size : sizes) {
          Result<H2dSample> sample = TimePoint(ctx, buffer.data(), size, dir, options);
          if (!sample.ok()) {
            gpu.notes.push_back(sample.status().message());
            return;
          }
          sample->memory = memory;
          sample->numa_node = bound ? nodes[n] : std::nullopt;
          sample->local = n == 0;
          gpu.samples.push_back(*sample);
        }
      }
    }
  }
  gpu.verdict = JudgeH2d(gpu.samples);
  if (gpu.link) JudgeAgainstLink(*gpu.link, gpu.samples, gpu.verdict);
}

}  // namespace

Result<H2dResult> RunH2dBench(const CudaRuntime& cuda, const H2dOptions& options) {
  auto start = std::chrono::steady_clock::now();
  H2dResult result;
  Result<std::vector<uint64_t>> sizes = H2dSizes(options.min_size_bytes, options.max_size_bytes);
  if (!sizes.ok()) return sizes.status();
  result.sizes = *sizes;
  result.runtime_library = cuda.path();
  result.runtime_version = cuda.RuntimeVersion();
  result.driver_version = cuda.DriverVersion();
  int count = 0;
  if (int err = cuda.api().GetDeviceCount(&count); err != kCudaSuccess)
    return Status::Unavailable(
        fmt::format("no CUDA GPU found ({})", cuda.ErrorText("cudaGetDeviceCount", err)));
  if (count <= 0) return Status::Unavailable("no CUDA GPU found (cudaGetDeviceCount: 0 devices)");
  if (options.device && (*options.device < 0 || *options.device >= count))
    return Status::InvalidArgument(
        fmt::format("--gpu {}: this host has GPUs 0..{}", *options.device, count - 1));
  std::vector<int> memory_nodes = ReadMemoryNodes(options.root);
  for (int i = 0; i < count; ++i) {
    if (options.device && i != *options.device) continue;
    H2dGpu gpu;
    gpu.index = i;
    RunGpu(cuda, options, result.sizes, memory_nodes, gpu);
    result.gpus.push_back(std::move(gpu));
  }
  result.total_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace stallscope
