// "Is this all-reduce bandwidth normal?": the rules over a `bench allreduce`
// result. The link in use is chosen from what the probes saw (interfaces,
// RDMA ports, the variables that pin an interface, the route to a peer
// node); busbw of the largest size is compared with its line rate.
//   network.allreduce_slow      busbw under a share of the line rate.
//   distributed.allreduce_wrong  a result element differs from the exact sum.
// One host: the ranks talk through shared memory or loopback, and the line
// rate does not apply (said in `note`, no finding). Pure; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sample/finding.h"
#include "sample/network.h"

namespace stallscope {

// A ring all-reduce on a healthy fabric reaches 80-95% of the line rate in
// busbw at large sizes (nccl-tests' published figures for IB and RoCE);
// under half means something between the ranks is wrong, under a quarter
// that the traffic is on the wrong path altogether.
inline constexpr double kAllreduceSlowWarningFraction = 0.5;
inline constexpr double kAllreduceSlowCriticalFraction = 0.25;
// Below this size an all-reduce is latency-bound and busbw says nothing
// about the link.
inline constexpr uint64_t kAllreduceJudgeMinBytes = 64ull << 20;

// The link the ranks' traffic leaves this node through.
struct AllreduceLink {
  std::string name;                      // "eth0", "mlx5_0:1"
  std::string kind;                      // "interface" or "rdma port"
  std::string chosen_by;                 // "NCCL_SOCKET_IFNAME=eth", "the route to node2", ...
  std::optional<double> line_rate_gbps;  // gigabits/s; nullopt: not reported
};

struct AllreduceLinkInput {
  std::string backend;  // "mpi" or "nccl"
  std::vector<NetInterface> interfaces;
  std::vector<InfinibandDevice> infiniband;
  std::optional<std::string> nccl_socket_ifname;
  std::optional<std::string> nccl_ib_hca;
  std::optional<std::string> nccl_ib_disable;
  std::optional<std::string> ompi_tcp_if_include;  // OMPI_MCA_btl_tcp_if_include
  std::string route_interface;                     // the interface the route to a peer node uses
  std::string route_peer;                          // that peer's host name
};

// NCCL with an ACTIVE RDMA port (and NCCL_IB_DISABLE not set): that port
// (filtered by NCCL_IB_HCA). Else the interface the variable names
// (NCCL_SOCKET_IFNAME for nccl, OMPI_MCA_btl_tcp_if_include for mpi), else
// the routed interface. nullopt when none can be told.
std::optional<AllreduceLink> ChooseAllreduceLink(const AllreduceLinkInput& input);

struct AllreduceJudgeInput {
  int ranks = 0;
  int hosts = 0;
  uint64_t largest_bytes = 0;
  double largest_busbw_gbps = 0;  // GB/s
  int64_t wrong_total = 0;
  int sizes_with_wrong = 0;
  std::optional<AllreduceLink> link;
};

struct AllreduceJudgement {
  std::optional<double> percent_of_line_rate;
  std::string note;  // why there is no comparison, or what it compared
  std::vector<Finding> findings;
};

AllreduceJudgement JudgeAllreduce(const AllreduceJudgeInput& input);

}  // namespace stallscope
