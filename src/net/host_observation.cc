#include "net/host_observation.h"

#include "analyze/host/network_rules.h"
#include "core/file.h"
#include "core/host_clock.h"
#include "net/route.h"
#include "probe/infiniband.h"

namespace stallscope::net {

RdmaBaseline ReadRdmaBaseline(const Root& root) {
  RdmaBaseline b;
  b.monotonic_seconds = MonotonicSeconds();
  if (Result<std::vector<InfinibandDevice>> devices = ReadInfinibandDevices(root); devices.ok()) {
    b.devices = std::move(*devices);
    b.ok = true;
  }
  return b;
}

NetworkObservation ObserveHostNetwork(const Root& root, const Snapshot& snapshot,
                                      const std::vector<std::string>& peers,
                                      const RdmaBaseline& before) {
  NetworkObservation o = ObserveNetwork(snapshot);
  // Routes are the live kernel's: meaningless for a fixture root.
  if (root.IsLive()) o.routes = RoutesForJob(snapshot.environment, peers);
  if (before.ok && !before.devices.empty()) {
    RdmaBaseline after = ReadRdmaBaseline(root);
    if (after.ok) {
      std::vector<PortErrorDelta> rdma = RdmaErrorDeltas(before.devices, after.devices);
      o.port_deltas.insert(o.port_deltas.end(), rdma.begin(), rdma.end());
      for (NetworkObservation::NicCongestionDelta& d :
           RdmaCongestionDeltas(before.devices, after.devices)) {
        o.nic_congestion.push_back(std::move(d));
      }
      if (!o.window_seconds) o.window_seconds = after.monotonic_seconds - before.monotonic_seconds;
    }
  }
  return o;
}

}  // namespace stallscope::net
