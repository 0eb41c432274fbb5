// The findings of an NCCL log's summary (sample/nccl_log.h), judged against
// this host's RDMA ports when known. Thresholds and reasoning are in
// analyze/catalog.cc. Pure; thread-safe.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "sample/finding.h"
#include "sample/nccl_log.h"

namespace stallscope {

// The findings of a summary: network.rdma_unused, network.wrong_interface,
// network.connect_failed, distributed.nccl_version_mismatch,
// distributed.init_incomplete, and the causes of analyze/nccl_log/causes.h;
// notes for what the log cannot tell (init's state in a log that ends
// before it). `source` names the log in evidence ("FILE:LINE"). Pure.
FindingsWithNotes CheckNcclLog(const NcclLogSummary& log, const std::optional<HostRdmaPorts>& host,
                               std::string_view source = {});

// The verdict of a report of NCCL findings: the critical finding to fix
// first, causes before their consequences (NcclCauseRank), not the first by
// layer. Leaves a report with no such finding as it is.
void PreferNcclCause(Report& report);

// How many hosts the job spans as far as the log tells: distinct hosts
// (NCCL's and nccl-tests') plus the peers no line of theirs shows
// (NcclPeerHostsInferred), NCCL's own nNodes, and at least 2 when channels
// run NET, when one host in the log holds fewer ranks than the communicator,
// or when the bootstrap root is in no local subnet.
int NcclJobNodes(const NcclLogSummary& log);
// Of them, the hosts inferred from network peers: addresses the log's
// connects name (failures, retries) that no process in the log holds.
int NcclPeerHostsInferred(const NcclLogSummary& log);
// Whether the log proves the job runs on one host: one host, and every rank
// of the communicator (its size known from Init lines) in the log.
bool NcclLogProvesOneHost(const NcclLogSummary& log);

}  // namespace stallscope
