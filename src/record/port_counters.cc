#include "record/port_counters.h"

#include <fmt/format.h>

#include "sample/rdma_congestion.h"

namespace stallscope {
namespace {

bool SameErrors(const PortCounterPoint& a, const PortCounterPoint& b) {
  return a.rx_errors == b.rx_errors && a.tx_errors == b.tx_errors && a.rx_drops == b.rx_drops &&
         a.tx_drops == b.tx_drops && a.symbol_errors == b.symbol_errors &&
         a.link_downed == b.link_downed && a.rcv_errors == b.rcv_errors;
}

}  // namespace

std::vector<PortCounterPoint> PortCounterTracker::Update(double t,
                                                         const std::vector<NetDevCounters>& nics,
                                                         const std::vector<InfinibandDevice>& rdma,
                                                         bool all) {
  std::vector<PortCounterPoint> now;
  for (const NetDevCounters& c : nics) {
    if (c.name == "lo") continue;
    PortCounterPoint p;
    p.t = t;
    p.port = c.name;
    p.packets = c.rx_packets + c.tx_packets;
    // The same sums as NetRates (sample/net_rates.h).
    p.rx_errors = c.rx_errs + c.rx_fifo + c.rx_frame;
    p.tx_errors = c.tx_errs + c.tx_fifo + c.tx_colls + c.tx_carrier;
    p.rx_drops = c.rx_drop;
    p.tx_drops = c.tx_drop;
    now.push_back(std::move(p));
  }
  for (const InfinibandDevice& d : rdma) {
    for (const InfinibandPort& port : d.ports) {
      PortCounterPoint p;
      p.t = t;
      p.port = fmt::format("{}:{}", d.name, port.port);
      p.rdma = true;
      p.symbol_errors = port.symbol_errors.value_or(0);
      p.link_downed = port.link_downed.value_or(0);
      p.rcv_errors = port.rcv_errors.value_or(0);
      now.push_back(std::move(p));
    }
  }
  std::vector<PortCounterPoint> store;
  for (PortCounterPoint& p : now) {
    auto it = stored_.find(p.port);
    if (!all && it != stored_.end() && SameErrors(it->second, p)) continue;
    stored_[p.port] = p;
    store.push_back(std::move(p));
  }
  return store;
}

std::vector<CongestionPoint> CongestionTracker::Update(double t, const std::vector<NicStats>& nics,
                                                       const std::vector<InfinibandDevice>& rdma,
                                                       bool all) {
  std::vector<CongestionPoint> now;
  for (const NicStats& n : nics) {
    NicCongestion c = SummarizeNicStats(n);
    if (!c.has_pause && !c.has_ecn_cnp && !c.has_drops) continue;
    c.counters_used.clear();
    now.push_back({t, n.interface, false, std::move(c)});
  }
  for (RdmaCongestionReading& r : RdmaCongestionReadings(rdma)) {
    r.total.counters_used.clear();
    now.push_back({t, std::move(r.port), true, std::move(r.total)});
  }
  auto same = [](const NicCongestion& a, const NicCongestion& b) {
    return a.pause_rx == b.pause_rx && a.pause_tx == b.pause_tx && a.ecn_marked == b.ecn_marked &&
           a.cnp_sent == b.cnp_sent && a.cnp_handled == b.cnp_handled &&
           a.buffer_drops == b.buffer_drops && a.allowance_exceeded == b.allowance_exceeded &&
           a.xmit_wait_ticks == b.xmit_wait_ticks && a.xmit_words == b.xmit_words;
  };
  std::vector<CongestionPoint> store;
  for (CongestionPoint& p : now) {
    auto it = stored_.find(p.port);
    if (!all && it != stored_.end() && same(it->second.counters, p.counters)) continue;
    stored_[p.port] = p;
    store.push_back(std::move(p));
  }
  return store;
}

}  // namespace stallscope
