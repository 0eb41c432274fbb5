// `bench h2d`: host-to-device and device-to-host copy bandwidth per GPU,
// from pinned (cudaHostAlloc) and pageable (malloc-like) host buffers, with
// the host buffer on the GPU's NUMA node and on another node.
//
// The seed (2.1) explains why it matters: DMA needs page-locked pages, so a
// copy from pageable memory goes through a staging buffer or waits; that is
// what DataLoader(pin_memory=True) avoids. The ratio pinned/pageable on this
// machine says how much pin_memory buys; local/remote NUMA says whether the
// loader should run on the GPU's node.
//
// The pure parts (sizes, bandwidth, node choice, verdict, the sysfs text
// parsers) are here and unit tested; RunH2dBench (cuda_h2d_run.cc) drives a
// CudaRuntime. Not thread-safe: RunH2dBench changes the calling thread's CPU
// affinity and memory policy for its duration (and restores them).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/text.h"

namespace stallscope {

class CudaRuntime;

enum class HostMemory { kPinned, kPageable };
enum class CopyDirection { kHostToDevice, kDeviceToHost };
std::string_view HostMemoryName(HostMemory memory);           // "pinned", "pageable"
std::string_view CopyDirectionName(CopyDirection direction);  // "h2d", "d2h"

// pinned/pageable at the largest size above which pin_memory=True is the
// clear answer. Ours: the seed gives no number; under 1.5x the copy is rarely
// what a step waits on.
inline constexpr double kPinnedClearWinRatio = 1.5;
// Under this the two are the same within run-to-run noise of copy timings.
inline constexpr double kPinnedNoWinRatio = 1.1;
// Remote-node pinned bandwidth under this share of local: bind the loader.
// Ours: cross-socket links (UPI/xGMI) commonly cost 10-40% of PCIe throughput.
inline constexpr double kNumaRemoteShare = 0.9;

struct H2dOptions {
  uint64_t min_size_bytes = 1ull << 20;
  uint64_t max_size_bytes = 1ull << 30;
  int warmup = 2;                              // untimed copies before each timed point
  int min_iterations = 5;                      // timed copies per point, at least
  uint64_t min_bytes_per_point = 64ull << 20;  // small sizes repeat up to this
  std::optional<int> device;                   // one GPU, else all
  Root root{"/"};                              // for /sys (NUMA nodes, the GPU's PCI device)
  std::function<void(std::string_view)> progress;
};

// Which host NUMA node each buffer lives on. nullopt local: no NUMA binding
// (no node information); nullopt remote: no second node with memory.
struct NumaPlacement {
  std::optional<int> local, remote;
};

struct H2dSample {
  uint64_t size_bytes = 0;
  CopyDirection direction = CopyDirection::kHostToDevice;
  HostMemory memory = HostMemory::kPinned;
  std::optional<int> numa_node;  // nullopt: not bound
  bool local = true;             // on the GPU's node (or unbound)
  int copies = 0;
  double seconds = 0;  // all timed copies, CUDA events
  double bytes_per_second = 0;
};

struct H2dVerdict {
  std::optional<double> pinned_over_pageable_h2d, pinned_over_pageable_d2h;
  std::optional<double> remote_over_local_h2d;  // pinned, largest size
  std::vector<std::string> lines;               // what it means, in words
};

struct H2dGpu {
  int index = 0;
  std::string name, pci_bus_id;
  std::optional<int> numa_node;  // from sysfs; nullopt when -1 or unreadable
  std::vector<H2dSample> samples;
  H2dVerdict verdict;
  std::vector<std::string> notes;
};

struct H2dResult {
  std::string runtime_library, runtime_version, driver_version;
  std::vector<uint64_t> sizes;
  std::vector<H2dGpu> gpus;
  std::vector<std::string> notes;
  double total_seconds = 0;
};

// Sizes from min to max, x4 each step, max always included. InvalidArgument
// naming the flag when min is 0 or above max.
Result<std::vector<uint64_t>> H2dSizes(uint64_t min_bytes, uint64_t max_bytes);
// Timed copies for one point: enough to move min_bytes, at least min_copies.
int CopiesFor(uint64_t size_bytes, uint64_t min_bytes, int min_copies);
double BytesPerSecond(uint64_t size_bytes, int copies, double seconds);
NumaPlacement ChooseNumaNodes(std::optional<int> gpu_node, const std::vector<int>& memory_nodes);
// The verdict of one GPU's samples, at the largest size measured.
H2dVerdict JudgeH2d(const std::vector<H2dSample>& samples);

// "0-1,3" -> {0,1,3} (the kernel's list format, as in has_memory); nullopt
// when malformed or absurd (over 4096 entries).
std::optional<std::vector<int>> ParseNodeList(std::string_view text);
// cudaDeviceGetPCIBusId's "00000000:3B:00.0" or "0000:3B:00.0" as sysfs
// names it, "0000:3b:00.0"; nullopt when it is not a PCI address.
std::optional<std::string> CudaBusIdToSysfs(std::string_view bus_id);
// The GPU's node from <root>/sys/bus/pci/devices/<addr>/numa_node (-1 or
// missing: nullopt).
std::optional<int> ReadPciNumaNode(const Root& root, std::string_view bus_id);
// Nodes that have memory: <root>/sys/devices/system/node/has_memory, else
// "online"; empty when neither reads.
std::vector<int> ReadMemoryNodes(const Root& root);

// Unavailable (the message says why: no device, no driver) when CUDA finds
// no GPU; per-GPU failures become notes on that GPU.
Result<H2dResult> RunH2dBench(const CudaRuntime& cuda, const H2dOptions& options);

}  // namespace stallscope
