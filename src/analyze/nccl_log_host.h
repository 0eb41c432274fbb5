// NCCL logs joined to a host's triage: what `doctor --nccl-log FILE` and
// `run` (the files a job wrote to NCCL_DEBUG_FILE, or `run --nccl-log`)
// take from an NCCL_DEBUG=INFO log, and the small pure pieces they share
// with `nccl-log`.
//
// The host findings are those of CheckNcclLog (nccl_log_rules.cc) that
// concern the network of the hosts in the log: network.rdma_unused,
// network.wrong_interface and network.connect_failed, each with evidence
// naming the log file and, for sockets, the line where NCCL first set up a
// connection "via NET/Socket". The line is found by NcclLineMarks, a scanner
// fed the same chunks as the parser that stops looking once it has its lines
// (so a long log costs one extra newline count over its head, not a second
// pass). Pure: chunks and summaries in, findings out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analyze/finding.h"
#include "analyze/nccl_log.h"

namespace stallscope {

// "12.2" from "2.18.3+cuda12.2" (the CUDA runtime NCCL was built against,
// the suffix NCCL prints after its version); "" when there is none.
std::string NcclCudaRuntime(std::string_view version);

// 12020 -> "12.2" (cudaDriverVersion as CUDA encodes it: major*1000 +
// minor*10); "" for 0.
std::string NcclCudaDriverText(int64_t driver);

// The 1-based numbers of the first lines of interest, found while a log is
// fed in chunks (a chunk may end mid-line). 0: not seen.
class NcclLineMarks {
 public:
  void Feed(std::string_view chunk);
  uint64_t first_socket_line() const { return socket_line_; }  // "via NET/Socket"
  // "NET/IB : Using", when on or before the first socket line (or no socket
  // line was seen): the scanner stops at the socket line.
  uint64_t first_ib_line() const { return ib_line_; }

 private:
  uint64_t line_ = 1;  // the line the next byte belongs to
  uint64_t socket_line_ = 0;
  uint64_t ib_line_ = 0;
  std::string carry_;  // the end of the last chunk, for a needle cut in two
};

// One log as doctor and run read it.
struct NcclLogFile {
  std::string path;
  NcclLogSummary summary;
  uint64_t first_socket_line = 0;
  uint64_t first_ib_line = 0;
};

// The network findings of one log (see the header paragraph), each with
// evidence "nccl_log" = the file and, where it applies, "nccl_log_line" =
// "FILE:LINE". `host`: this host's Active RDMA ports (nullopt: unknown).
std::vector<Finding> NcclHostNetworkFindings(const NcclLogFile& log,
                                             const std::optional<HostRdmaPorts>& host);

// A one-line description of a log read, for the notes of a report:
// "nccl log F: 67 NCCL lines, 4 rank(s) on 2 host(s), NCCL 2.18.3 (CUDA runtime 12.2)".
std::string DescribeNcclLogFile(const NcclLogFile& log);

}  // namespace stallscope
