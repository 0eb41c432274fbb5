// Test helpers: the timeline of one node of a two-node job (one rank a node,
// master 10.0.0.1:29500), without samples or steps, for the tests of the job
// analysis and the rules across nodes to fill in.
#pragma once

#include <string>

#include "sample/timeline.h"

namespace stallscope {

inline Timeline NodeOfTwo(const std::string& host, int rank, double start_realtime,
                          double duration_s) {
  Timeline t;
  t.info.hostname = host;
  t.info.started_utc = "2026-12-02T10:00:00Z";
  t.info.interval_seconds = 1;
  t.info.duration_seconds = duration_s;
  NodeInfo n;
  n.node_rank = rank;
  n.nnodes = 2;
  n.procs_per_node = 1;
  n.world_size = 2;
  n.master_addr = "10.0.0.1";
  n.master_port = 29500;
  n.source = "flags";
  n.start_realtime_seconds = start_realtime;
  t.node = n;
  t.ranks.push_back(RankInfo{100 + rank, rank, 0, 2, host});
  return t;
}

}  // namespace stallscope
