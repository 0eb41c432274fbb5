// NCCL logs joined to a host's triage: what `doctor --nccl-log FILE` and
// `run` (the files a job wrote to NCCL_DEBUG_FILE, or `run --nccl-log`)
// take from an NCCL_DEBUG=INFO log, and the small pure pieces they share
// with `nccl-log`.
//
// The host findings are those of CheckNcclLog (rules.cc) that
// concern the network of the hosts in the log: network.rdma_unused,
// network.wrong_interface and network.connect_failed, each with evidence
// naming the log file and, for sockets, the line where NCCL first set up a
// connection "via NET/Socket" (found by formats/nccl_log/nccl_log.h's NcclLineMarks while
// the file is read). Pure: summaries in, findings out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sample/finding.h"
#include "sample/nccl_log.h"

namespace stallscope {

// "12.2" from "2.18.3+cuda12.2" (the CUDA runtime NCCL was built against,
// the suffix NCCL prints after its version); "" when there is none.
std::string NcclCudaRuntime(std::string_view version);

// 12020 -> "12.2" (cudaDriverVersion as CUDA encodes it: major*1000 +
// minor*10); "" for 0.
std::string NcclCudaDriverText(int64_t driver);
// Whether a CUDA runtime ("12.4") runs on a driver ("12.2"), in words:
// empty when either is unknown or the driver is as new; CUDA's minor-version
// compatibility when only the minor is newer (it runs: NCCL's own calls need
// no newer driver; PTX built for the newer minor does not JIT), fatal when
// the major is newer ("CUDA driver version is insufficient") unless the
// forward-compatibility package (cuda-compat) is installed.
std::string NcclCudaCompatibility(std::string_view runtime, std::string_view driver);

// What aws-ofi-nccl said of a process, in one line: "1.14.0, libfabric
// 1.22, provider efa (fabric efa-direct), 4 NIC(s), protocol RDMA".
std::string NcclOfiText(const NcclProcess& p);

// The network findings of one log (see the header paragraph), each with
// evidence "nccl_log" = the file and, where it applies, "nccl_log_line" =
// "FILE:LINE". `host`: this host's Active RDMA ports (nullopt: unknown).
FindingsWithNotes NcclHostNetworkFindings(const NcclLogFile& log,
                                          const std::optional<HostRdmaPorts>& host);

// A one-line description of a log read, for the notes of a report:
// "nccl log F: 67 NCCL lines, 4 rank(s) on 2 host(s), NCCL 2.18.3 (CUDA runtime 12.2)".
std::string DescribeNcclLogFile(const NcclLogFile& log);

// What a run's NCCL logs say about this host's network: the findings of
// every log, a note per log (DescribeNcclLogFile) after `notes` (those of
// finding and reading the logs). `host` as for NcclHostNetworkFindings.
FindingsWithNotes NcclLogConclusions(const std::vector<NcclLogFile>& logs,
                                     const std::optional<HostRdmaPorts>& host,
                                     std::vector<std::string> notes);

}  // namespace stallscope
