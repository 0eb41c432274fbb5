// `bench h2d`: host-to-device and device-to-host copy bandwidth per GPU,
// from pinned (cudaHostAlloc) and pageable (malloc-like) host buffers, with
// the host buffer on the GPU's NUMA node and on another node.
//
// Why it matters: DMA needs page-locked pages, so a copy from pageable
// memory goes through a staging buffer or waits; that is what
// DataLoader(pin_memory=True) avoids. The ratio pinned/pageable on this
// machine says how much pin_memory buys; local/remote NUMA says whether the
// loader should run on the GPU's node.
//
// The pure parts (sizes, bandwidth, node choice, verdict, the sysfs text
// parsers) are here and unit tested; RunH2dBench (cuda_h2d_run.h) drives a
// CudaRuntime. Not thread-safe: RunH2dBench changes the calling thread's CPU
// affinity and memory policy for its duration (and restores them).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/file.h"
#include "core/status.h"
#include "sample/h2d.h"

namespace stallscope {

class CudaRuntime;

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

// Sizes from min to max, x4 each step, max always included. InvalidArgument
// naming the flag when min is 0 or above max.
Result<std::vector<uint64_t>> H2dSizes(uint64_t min_bytes, uint64_t max_bytes);
// Timed copies for one point: enough to move min_bytes, at least min_copies.
int CopiesFor(uint64_t size_bytes, uint64_t min_bytes, int min_copies);
double BytesPerSecond(uint64_t size_bytes, int copies, double seconds);
NumaPlacement ChooseNumaNodes(std::optional<int> gpu_node, const std::vector<int>& memory_nodes);
// The verdict of one GPU's samples, at the largest size measured.
H2dVerdict JudgeH2d(const std::vector<H2dSample>& samples);

// The verdict's line on the copies against the GPU's trained PCIe link: the
// pinned h2d rate at the largest size as a share of the link's ceiling, and
// whether the link trained below what it and its port can do (then the
// link, not the host, caps the copies: io.pcie_degraded). Pure.
void JudgeAgainstLink(const PcieLink& link, const std::vector<H2dSample>& samples,
                      H2dVerdict& verdict);

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

}  // namespace stallscope
