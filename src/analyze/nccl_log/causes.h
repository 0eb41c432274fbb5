// The causes an NCCL log names of its own failures, each its own finding so
// that the verdict names what to fix first: the GPU side of NCCL's set-up
// (Cuda failures, IPC handles), the IB out-of-band socket, a bootstrap root
// in no local subnet, connects that time out, one address on two hosts, a
// link-local or tunnel interface chosen, and every WARN no rule explains.
// Pure; called by CheckNcclLog (rules.h), whose consequences
// (distributed.init_incomplete) they come before. Thresholds and reasons are
// in the catalog under the same ids.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sample/finding.h"
#include "sample/nccl_log.h"

namespace stallscope {

// Items joined by "; ", past `cap` counted ("; and 3 more").
std::string NcclJoined(const std::vector<std::string>& items, size_t cap = 8);
// "FILE:LINE" for a line of the log (or "line N" when the source is unnamed).
std::string NcclLogPlace(std::string_view source, uint64_t line);
// A peer as NCCL prints it, "10.0.0.2<43211>" or "node1<57557>", as the
// address and port a user types ("10.0.0.2", "43211"); the port is empty
// when none was printed.
std::pair<std::string, std::string> NcclPeerAddressPort(std::string_view peer);

// `also`: the texts of WARNs judged CUDA-side failures by where NCCL raised
// them and what it returned (failures.h), whatever their words.
void CheckNcclCudaFailure(const NcclLogSummary& log, std::string_view source,
                          std::vector<Finding>& out, const std::vector<std::string>& also = {});
void CheckNcclOobSocket(const NcclLogSummary& log, std::string_view source,
                        std::vector<Finding>& out);
void CheckNcclRootUnreachable(const NcclLogSummary& log, std::string_view source,
                              std::vector<Finding>& out);
// `init_failed`: some rank never finished init, on positive evidence.
void CheckNcclConnectTimeout(const NcclLogSummary& log, bool init_failed, std::string_view source,
                             std::vector<Finding>& out);
void CheckNcclDuplicateAddress(const NcclLogSummary& log, std::string_view source,
                               std::vector<Finding>& out);
void CheckNcclLinkLocal(const NcclLogSummary& log, int hosts, std::string_view source,
                        std::vector<Finding>& out);
// A net plugin that failed and NCCL went on without: the plugin, why, and
// what carried the job instead.
void CheckNcclPluginFallback(const NcclLogSummary& log, std::string_view source,
                             std::vector<Finding>& out);
// ncclResult_t's names (nccl.h): "ncclSystemError" for 2; empty past them.
std::string_view NcclResultName(int code);

// Whether a WARN's text is one a rule reads (a connect failure, a Cuda
// failure, a version mismatch, ...), or one that is harmless on its own.
bool NcclWarningExplained(std::string_view text);
bool NcclWarningBenign(std::string_view text);
// Whether a WARN is one NCCL falls back from and carries on (an IB device it
// could not open, a net plugin whose init failed): no sign a rank stopped.
bool NcclWarningFallback(std::string_view text);
// Whether an address was redacted by whoever copied the log ("xxx.xxx.x.x",
// "<redacted>", "***", empty): no host's real address, no peer to probe.
bool NcclAddressRedacted(std::string_view address);

// Which of the log's critical findings is fixed first: causes before their
// consequences (see the catalog's "distributed.init_incomplete"). Lower is
// first; ids not listed rank after all that are.
int NcclCauseRank(std::string_view id);

}  // namespace stallscope
