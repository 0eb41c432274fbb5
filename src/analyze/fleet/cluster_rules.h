// `stallscope cluster`: what differs between the nodes of a job, from the
// node summaries every rank sent (dist/node_summary.h) and the clock offsets
// rank 0 measured. Ranks with the same host and the same facts share a row;
// a column whose value is not the same on every row is marked on the rows
// that differ from the most common value (rank 0's on a tie). Findings:
//   distributed.heterogeneous_gpus  GPU models (or counts) differ.
//   network.mtu_mismatch            the MTU of the interface in use, or of a
//                                   same-named NIC, differs across nodes.
//   network.wrong_interface         a rank's NCCL_SOCKET_IFNAME /
//                                   GLOO_SOCKET_IFNAME / NCCL_IB_HCA names an
//                                   interface its node does not have.
//   distributed.clock_offset        a node's clock is off rank 0's by more
//                                   than the threshold plus the measuring error.
// Pure: tested on hand-made summaries. Thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sample/finding.h"
#include "sample/node_summary.h"

namespace stallscope {

// Timelines from several nodes are merged by wall clock (report a.db b.db):
// a step lasts 100 ms to seconds, so an offset over 10 ms already moves an
// event into the neighbouring step; NTP/chrony on a LAN keeps clocks within
// about a millisecond, so more means the node is not synchronised. Over a
// second: warning turns critical (logs of the nodes cannot be lined up).
inline constexpr double kClockOffsetWarningMs = 10;
inline constexpr double kClockOffsetCriticalMs = 1000;

// Rank 0's measurement of one rank's clock: offset = remote - local at the
// same instant, from the ping-pong round with the smallest round trip;
// the error bound is half that round trip.
struct ClockOffset {
  int rank = 0;
  double offset_ms = 0;
  double round_trip_ms = 0;
};

struct ClusterRow {
  std::string host;
  std::vector<int> ranks;
  std::vector<std::string> values;  // one per ClusterComparison::columns
  std::vector<bool> differs;        // the same length: marked cells
};

struct ClusterComparison {
  std::vector<std::string> columns;
  std::vector<ClusterRow> rows;
  int nodes = 0;
  int ranks = 0;
  std::vector<std::string> differing_columns;
  std::vector<Finding> findings;
};

// The interface a rank's traffic uses: the first up, non-loopback one its
// NCCL_SOCKET_IFNAME selects, else its route interface; empty if unknown.
std::string InterfaceInUse(const NodeSummary& node);

ClusterComparison CompareNodes(const std::vector<NodeSummary>& ranks,
                               const std::vector<ClockOffset>& offsets);

// "0-2,5" for {0,1,2,5}.
std::string RankRanges(const std::vector<int>& ranks);

}  // namespace stallscope
