// The path between every two GPUs and NICs of a host, as `nvidia-smi topo -m`
// prints it and NCCL ranks it: NV<n> (n NVLinks, directly or through
// NVSwitches), else the PCIe path (X, PIX, PXB, PHB, NODE, SYS; see
// sample/pci_path.h); and for each GPU its closest NIC, the one NCCL would
// pair it with. NICs are the RDMA HCAs first, then the network interfaces
// on a PCI function no HCA holds (an HCA's own netdev is listed with it).
// Built from a Topology alone, so a capture or a cluster member's summary
// gives the same matrix as the live host. Pure; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sample/pci_path.h"
#include "sample/topology.h"

namespace stallscope {

struct TopologyMatrix {
  struct Device {
    std::string label;                    // "GPU0", "NIC1"
    std::string name;                     // GPU: PCI address; NIC: "mlx5_0", "eth0"
    std::string pci_address;              // "0000:17:00.0"
    std::vector<std::string> interfaces;  // netdevs on the same PCI function ("ib0")
    int numa_node = -1;
    bool gpu = false;
    bool rdma = false;  // an InfiniBand/RoCE HCA
  };
  struct Cell {
    PciPathKind path = PciPathKind::kSys;
    int nvlinks = 0;           // > 0: NVLink, and path is not what counts
    std::string Name() const;  // "NV18", "PIX"
  };
  std::vector<Device> devices;           // GPUs first (by PCI address), then NICs
  std::vector<std::vector<Cell>> cells;  // cells[i][j]: from devices[i] to devices[j]
  size_t gpu_count = 0;
  // Per GPU (index < gpu_count): the index in devices of its closest NIC
  // (ties to the first listed), among the HCAs when there is one (NCCL's IB
  // net uses nothing else), nullopt when the host has no NIC on PCI.
  std::vector<std::optional<size_t>> closest_nic;
  std::vector<std::string> left_out;  // devices with no place in the PCI tree
  bool empty() const { return devices.empty(); }
};

TopologyMatrix BuildTopologyMatrix(const Topology& topology);

// The matrix in a few words, for comparing nodes (`cluster`): the GPU count
// and the distinct GPU-to-GPU paths, the NIC count and the distinct paths
// from each GPU to its closest NIC: "8 GPUs NV18, 5 NICs, closest PIX".
// "-" when there is no GPU.
std::string TopologyDigest(const TopologyMatrix& matrix);

// The device of `matrix` a NIC, HCA or interface name is (an HCA's netdev
// finds the HCA); nullopt when none.
std::optional<size_t> FindMatrixNic(const TopologyMatrix& matrix, const std::string& name);

}  // namespace stallscope
