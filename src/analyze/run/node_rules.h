// The rules that compare a job's nodes with each other, over the per-node
// rows AnalyzeJob (analyze/run/job_analysis.h) builds from each node's run file:
//
// - network.node_receive_slow: a node whose job interface (the route to
//   MASTER_ADDR) received under half of what the other nodes' did while the
//   ranks were in gradient sync. In synchronous data-parallel training every
//   node moves about the same bytes per step, so one node far below the
//   others is a node whose collective traffic leaves by another interface
//   (NCCL/gloo picked another one) or crawls on a slower path.
// - The io findings a node's own file raised (io.input_bound,
//   io.device_saturated) get the other nodes' figures beside their own, so a
//   reader sees at once whether the job's storage is slow everywhere or one
//   node's disk or cache is ("only node-b waits").
//
// Pure; thread-safe.
#pragma once

#include <optional>
#include <vector>

#include "analyze/run/analysis.h"
#include "sample/finding.h"
#include "sample/timeline.h"

namespace stallscope {

// network.node_receive_slow fires when a node's receive rate during sync is
// under this share of the other nodes' median...
inline constexpr double kNodeReceiveShare = 0.5;
// ...and that median is at least this (bytes/s): below it the job exchanges
// too little for the interface to matter.
inline constexpr double kNodeReceiveFloorBytesPerSecond = 1e6;
// A node is compared when at least this many of its samples carry a rate
// while its ranks synced (or, without the DDP hook, stepped).
inline constexpr int kNodeReceiveMinSamples = 3;

// The node's job-interface figures, from its file: the mean receive rate
// over the samples in whose interval its ranks waited in gradient sync (the
// DDP hook's records), else those in which a step ended; nullopt rates when
// the file has no interface or too few such samples.
struct NodeReceive {
  std::optional<double> bytes_per_s;
  int samples = 0;
  bool during_sync = false;  // false: over the stepping samples
};
NodeReceive ReceiveWhileSyncing(const Timeline& timeline);

// network.node_receive_slow over the rows (NodeRow::receive_bytes_per_s).
FindingsWithNotes CheckNodeReceive(const std::vector<NodeRow>& nodes);

// Adds to each io.input_bound and io.device_saturated finding of `findings`
// (host-tagged, their first evidence "host") the median of the other nodes'
// data wait, or data disk util and await, and says in the summary when the
// other nodes do not share the condition.
void CompareNodeIo(const std::vector<NodeRow>& nodes, std::vector<Finding>& findings);

}  // namespace stallscope
