// One node as `cluster` compares it: host, kernel, CPU, GPUs and driver,
// interfaces and their MTUs, RDMA ports, the NCCL/Gloo environment and the
// route to rank 0, as plain data. dist/node_summary.h builds, serializes and
// parses it; analyze/fleet/cluster_rules.h compares nodes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sample/environment.h"

namespace stallscope {

struct NodeInterface {
  std::string name;
  uint64_t mtu_bytes = 0;
  std::string kind;         // InterfaceKindName
  std::string operstate;    // "up", "down", ...
  uint64_t speed_mbps = 0;  // 0: not reported
  bool operator==(const NodeInterface&) const = default;
};

struct NodeRdmaPort {
  std::string name;   // "mlx5_0:1"
  std::string state;  // "ACTIVE"
  bool operator==(const NodeRdmaPort&) const = default;
};

struct NodeSummary {
  int rank = 0;
  std::string hostname;
  std::string kernel;
  std::string cpu_model;
  uint64_t cpu_count = 0;
  std::vector<std::string> gpus;  // one model name per GPU
  std::string gpu_note;           // why the list is empty (no NVML, no GPU)
  std::string driver_version;
  std::string cuda_version;
  std::vector<NodeInterface> interfaces;
  std::vector<NodeRdmaPort> rdma_ports;
  std::vector<EnvironmentVariable> environment;  // NCCL_* and GLOO_* only, sorted
  std::string route_interface;                   // the interface the route to route_peer uses
  std::string route_peer;
  // The GPU/NIC path matrix in a few words (TopologyDigest); empty: unknown.
  std::string topology;
};

// Field by field (EnvironmentVariable has no operator== of its own).
bool operator==(const NodeSummary& a, const NodeSummary& b);

}  // namespace stallscope
