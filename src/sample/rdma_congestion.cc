#include "sample/rdma_congestion.h"

namespace stallscope {

NicCongestion RdmaPortCongestion(const InfinibandPort& port) {
  // The hw_counters carry the names the NIC classification knows
  // (out_of_buffer, np_cnp_sent, rp_cnp_handled, np_ecn_marked_roce_packets).
  NicStats stats;
  stats.counters = port.hw_counters;
  NicCongestion c = SummarizeNicStats(stats);
  if (port.xmit_wait) {
    c.has_xmit_wait = true;
    c.xmit_wait_ticks = *port.xmit_wait;
    c.xmit_words = port.xmit_bytes.value_or(0) / 4;
    c.counters_used.insert(c.counters_used.begin(), "port_xmit_wait");
  }
  return c;
}

std::vector<RdmaCongestionReading> RdmaCongestionReadings(
    const std::vector<InfinibandDevice>& devices) {
  std::vector<RdmaCongestionReading> out;
  for (const InfinibandDevice& d : devices) {
    for (const InfinibandPort& p : d.ports) {
      NicCongestion c = RdmaPortCongestion(p);
      if (!c.has_xmit_wait && !c.has_ecn_cnp && !c.has_drops && !c.has_pause) continue;
      out.push_back({d.name + ":" + std::to_string(p.port), std::move(c)});
    }
  }
  return out;
}

}  // namespace stallscope
