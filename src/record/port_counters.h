// Which network port counters `run` and `watch` store each interval: every
// port's first reading, then a port's reading only when one of its error or
// drop counters moved since the last one stored, and every port's at the
// end. A clean run so stores two rows per port however long it runs, and a run with errors stores
// exactly the intervals where they grew (the timeline's port_counters, read by
// network.port_errors). NICs come from /proc/net/dev (loopback left out),
// RDMA ports from /sys/class/infiniband. Pure bookkeeping, no I/O;
// not thread-safe (one per recording).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "sample/network.h"
#include "sample/timeline.h"

namespace stallscope {

class PortCounterTracker {
 public:
  // The rows to store for the sample taken at t; every port's when `all`
  // (the run's last sample, so that the growth spans the whole run).
  std::vector<PortCounterPoint> Update(double t, const std::vector<NetDevCounters>& nics,
                                       const std::vector<InfinibandDevice>& rdma, bool all = false);

 private:
  std::map<std::string, PortCounterPoint> stored_;  // last row stored, by port
};

// The same bookkeeping for the ports' congestion counters (table
// congestion_counters): NICs from their driver statistics (those that
// count any congestion kind), RDMA ports from RdmaPortCongestion.
class CongestionTracker {
 public:
  std::vector<CongestionPoint> Update(double t, const std::vector<NicStats>& nics,
                                      const std::vector<InfinibandDevice>& rdma, bool all = false);

 private:
  std::map<std::string, CongestionPoint> stored_;
};

}  // namespace stallscope
