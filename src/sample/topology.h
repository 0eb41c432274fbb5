// Where the hardware sits: NUMA nodes with their CPUs and memory, and the NUMA
// node of each NIC, InfiniBand HCA and NVIDIA GPU. A GPU or NIC fed from the
// far socket pays for every copy across the inter-socket link, so placement is
// part of the baseline. Filled by probe/topology.h from sysfs or hwloc (the
// NVLinks from NVML); sample/topology_matrix.h names the path between every
// two devices from it. Plain data; thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace stallscope {

struct NumaNode {
  int id = 0;
  std::string cpulist;           // as the kernel writes it: "0-15,32-47"
  int cpu_count = 0;             // CPUs in cpulist
  uint64_t mem_total_bytes = 0;  // MemTotal of the node
};

// A device and the NUMA node it hangs off.
struct DevicePlacement {
  std::string name;         // "eth0", "mlx5_0"; for GPUs the PCI address
  std::string pci_address;  // "0000:17:00.0"; empty when not on PCI
  int numa_node = -1;       // -1: no affinity reported (single-node or virtual)
  // Its place in the PCI tree, from the host bridge on:
  // "pci0000:16/0000:16:01.0/0000:17:00.0" (the resolved /sys/devices path).
  // Empty when not on PCI or unknown (run files and captures before it).
  std::string pci_path;
};

// NVLinks between two GPUs (or a GPU and an NVSwitch), from NVML: the links
// of `gpu` that are up and whose remote end is `peer` (a PCI address).
struct GpuNvLinks {
  std::string gpu;   // PCI address
  std::string peer;  // PCI address of the other GPU or of the NVSwitch
  int links = 0;     // active links between them
  bool peer_is_switch = false;
};

struct Topology {
  std::string source;                 // "hwloc" or "sysfs"
  std::vector<NumaNode> numa_nodes;   // by id
  std::vector<DevicePlacement> nics;  // by name; only NICs backed by a device
  std::vector<DevicePlacement> hcas;  // by name
  std::vector<DevicePlacement> gpus;  // by PCI address
  std::vector<GpuNvLinks> nvlinks;    // from NVML; empty without it
};

}  // namespace stallscope
