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
//   route <interface> <peer host>           topology <the path matrix in a few words>
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
#include "sample/node_summary.h"
#include "sample/snapshot.h"

namespace stallscope {

inline constexpr std::string_view kNodeSummaryHeader = "stallscope.node/1";

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
