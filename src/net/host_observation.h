// The network layer's view of the live host for `doctor`: a snapshot's
// facts and NIC counters (analyze/host/network_rules.h ObserveNetwork), plus
// what only the live host can tell: the routes to MASTER_ADDR and to the
// peers given with --peer, and the RDMA error counters' growth between a
// reading taken before the snapshot and one after it. Not pure (it asks the
// kernel); thread-compatible.
#pragma once

#include <string>
#include <vector>

#include "core/file.h"
#include "sample/network.h"
#include "sample/snapshot.h"

namespace stallscope::net {

// Read this before TakeSnapshot; pass it to ObserveHostNetwork after.
struct RdmaBaseline {
  std::vector<InfinibandDevice> devices;
  double monotonic_seconds = 0;
  bool ok = false;
};
RdmaBaseline ReadRdmaBaseline(const Root& root);

NetworkObservation ObserveHostNetwork(const Root& root, const Snapshot& snapshot,
                                      const std::vector<std::string>& peers,
                                      const RdmaBaseline& before);

}  // namespace stallscope::net
