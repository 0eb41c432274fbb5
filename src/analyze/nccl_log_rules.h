// The findings of an NCCL log's summary (sample/nccl_log.h), judged against
// this host's RDMA ports when known. Thresholds and reasoning are in
// analyze/catalog.cc. Pure; thread-safe.
#pragma once

#include <optional>
#include <vector>

#include "sample/finding.h"
#include "sample/nccl_log.h"

namespace stallscope {

// The findings of a summary: network.rdma_unused, network.wrong_interface,
// network.connect_failed, distributed.nccl_version_mismatch,
// distributed.init_incomplete. Pure.
std::vector<Finding> CheckNcclLog(const NcclLogSummary& log,
                                  const std::optional<HostRdmaPorts>& host);

// How many hosts the job spans as far as the log tells: distinct hosts, or
// NCCL's own nNodes when larger.
int NcclJobNodes(const NcclLogSummary& log);

}  // namespace stallscope
