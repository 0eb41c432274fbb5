// network.nic_far_from_gpu: a GPU whose network traffic goes through a NIC
// further from it than its closest, or whose closest RDMA NIC is across the
// link between sockets, where NCCL turns GPUDirect RDMA off and stages every
// transfer through host memory.
//
// The paths come from the host's GPU/NIC matrix (sample/topology_matrix.h).
// The NICs the job uses are, in this order of trust: the ones an NCCL log
// says it chose (NET/IB : Using ..., NET/Socket : Using ...), else the ones
// NCCL_IB_HCA (the IB transport) or NCCL_SOCKET_IFNAME (the socket transport)
// allow, else all of them (NCCL then pairs each GPU with its closest itself).
// Pure; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sample/environment.h"
#include "sample/finding.h"
#include "sample/topology.h"

namespace stallscope {

// The longest path from a GPU to its RDMA NIC at which NCCL still uses
// GPUDirect RDMA by default (NCCL_NET_GDR_LEVEL's default is PXB; NCCL also
// takes PHB on some platforms): SYS never qualifies. The rule raises the SYS
// case only, which no NCCL setting repairs short of moving the card.
inline constexpr const char* kGdrNeverPath = "SYS";

struct NicPlacementInputs {
  Topology topology;
  TrainingEnvironment environment;
  // NIC, HCA or interface names an NCCL log says the job used ("mlx5_0",
  // "eth0"); empty when there is no log.
  std::vector<std::string> nccl_log_nics;
  std::string nccl_log_name;  // the log's file, for the evidence
};

std::optional<Finding> CheckNicFarFromGpu(const NicPlacementInputs& inputs);

}  // namespace stallscope
