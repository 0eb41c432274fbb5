// What an RDMA port's counters say about congestion, in the same terms as
// a NIC's driver statistics (sample/nic_stats.h): port_xmit_wait (ticks the
// port had data but no credits) with port_xmit_data beside it, and the
// hw_counters of RoCE ports (CNPs sent and handled, ECN marks,
// out_of_buffer drops), so that network.congestion and network.drops_buffer
// judge an HCA port ("mlx5_0:1") as they judge a NIC. Pure; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "sample/network.h"
#include "sample/nic_stats.h"

namespace stallscope {

// One port's congestion counters, cumulative. A port whose driver offers
// none of them has every has_* false.
NicCongestion RdmaPortCongestion(const InfinibandPort& port);

struct RdmaCongestionReading {
  std::string port;  // "mlx5_0:1"
  NicCongestion total;
};

// Every port of every device that offers at least one congestion counter.
std::vector<RdmaCongestionReading> RdmaCongestionReadings(
    const std::vector<InfinibandDevice>& devices);

}  // namespace stallscope
