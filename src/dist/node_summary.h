// NodeSummary: what `stallscope cluster` compares between nodes, taken by
// every rank from its snapshot and sent to rank 0 as a compact text record
// (the wire format below), so rank 0 gathers kilobytes, not snapshots.
//
// Wire format "stallscope.node/1": the header line, then one line per fact,
// fields separated by tabs, '\\', tab and newline escaped as \\ \t \n:
//   rank <n>            host <name>          kernel <uname -r>
//   cpu <model> <logical cpus>              gpu <model>   (one per GPU)
//   gpu_note <why no GPU list>              driver <version>   cuda <version>
//   if <name> <mtu> <kind> <operstate> <speed Mb/s, 0 unknown>
//   rdma <hca:port> <state>                 env <NAME> <value>  (NCCL_*, GLOO_*)
//   route <interface> <peer host>
// Unknown keys are skipped (a newer rank may say more); a known key with the
// wrong field count or a bad number is a ParseError naming the line.
// Pure; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "probe/environment.h"
#include "sample/snapshot.h"

namespace stallscope {

inline constexpr std::string_view kNodeSummaryHeader = "stallscope.node/1";

struct NodeInterface {
  std::string name;
  uint64_t mtu_bytes = 0;
  std::string kind;       // InterfaceKindName
  std::string operstate;  // "up", "down", ...
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
  std::string route_interface;  // the interface the route to route_peer uses
  std::string route_peer;
};

// Field by field (EnvironmentVariable has no operator== of its own).
bool operator==(const NodeSummary& a, const NodeSummary& b);

// Whether `name` is one of the variables the summary carries.
bool IsClusterVariable(std::string_view name);

// The summary of a snapshot; GPU, driver, CUDA and CPU model come from the
// caller (they are not in every snapshot), as does the route.
NodeSummary SummarizeSnapshot(const Snapshot& snapshot, int rank);

// "model name" of the first processor in /proc/cpuinfo; empty when absent.
std::string ParseCpuModel(std::string_view cpuinfo);
// "535.104.05" from /proc/driver/nvidia/version's "NVRM version" line.
std::string ParseNvidiaDriverVersion(std::string_view text);

std::string SerializeNodeSummary(const NodeSummary& node);
Result<NodeSummary> ParseNodeSummary(std::string_view text, std::string_view source);

}  // namespace stallscope
