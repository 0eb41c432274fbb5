// The PCIe path between two devices, named as NCCL and `nvidia-smi topo -m`
// name it: PIX (at most one PCIe switch between them), PXB (several switches,
// no host bridge), PHB (through one host bridge, the CPU's root complex),
// NODE (across host bridges of one NUMA node), SYS (across the inter-socket
// link: NCCL turns GPUDirect RDMA off there). Worked out from each device's
// place in the sysfs PCI tree (/sys/devices/pci0000:00/0000:00:01.0/...) and
// its NUMA node. Pure; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stallscope {

enum class PciPathKind { kSelf, kPix, kPxb, kPhb, kNode, kSys };
// "X", "PIX", "PXB", "PHB", "NODE", "SYS".
const char* PciPathKindName(PciPathKind kind);

// Where one device sits in the PCI tree.
struct PciPlace {
  std::string host_bridge;             // "pci0000:00"
  std::vector<std::string> functions;  // root port first, the device last
  int numa_node = -1;                  // -1: the kernel reported none
};

// From a resolved sysfs device path: "/sys/devices/pci0000:00/0000:00:01.0/
// 0000:01:00.0" -> {"pci0000:00", {"0000:00:01.0", "0000:01:00.0"}}. Trailing
// non-PCI components (a virtio child) are dropped; nullopt when the path has
// no host bridge or no PCI function under it.
std::optional<PciPlace> ParsePciPlace(std::string_view resolved_path, int numa_node);

// The path between two devices. numa_node_count is the host's number of NUMA
// nodes: with at most one, a device without a NUMA node is on node 0's
// socket; with more, an unknown node cannot be shown local and is SYS.
PciPathKind NamePciPath(const PciPlace& a, const PciPlace& b, int numa_node_count);

}  // namespace stallscope
