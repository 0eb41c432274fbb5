#include "sample/net_rates.h"

#include <cmath>
#include <map>
#include <string>

namespace stallscope {
namespace {

// Sum of the error columns of one direction. The kernel counts fifo overruns,
// framing errors, collisions and carrier losses apart from "errs"; all of them
// are a link that is not clean.
uint64_t RxErrors(const NetDevCounters& c) { return c.rx_errs + c.rx_fifo + c.rx_frame; }
uint64_t TxErrors(const NetDevCounters& c) {
  return c.tx_errs + c.tx_fifo + c.tx_colls + c.tx_carrier;
}

}  // namespace

Result<std::vector<NetRates>> ComputeNetRates(const std::vector<NetDevCounters>& before,
                                              const std::vector<NetDevCounters>& after,
                                              double seconds) {
  if (!std::isfinite(seconds) || seconds <= 0) {
    return Status::InvalidArgument("net rates need a positive interval, got " +
                                   std::to_string(seconds) + " s");
  }
  std::map<std::string_view, const NetDevCounters*> earlier;
  for (const NetDevCounters& c : before) earlier[c.name] = &c;

  std::vector<NetRates> rates;
  for (const NetDevCounters& now : after) {
    auto found = earlier.find(now.name);
    if (found == earlier.end()) continue;
    const NetDevCounters& then = *found->second;
    NetRates r;
    r.name = now.name;
    r.seconds = seconds;
    const bool went_back = now.rx_bytes < then.rx_bytes || now.tx_bytes < then.tx_bytes ||
                           now.rx_packets < then.rx_packets || now.tx_packets < then.tx_packets ||
                           now.rx_drop < then.rx_drop || now.tx_drop < then.tx_drop ||
                           RxErrors(now) < RxErrors(then) || TxErrors(now) < TxErrors(then);
    if (went_back) {
      r.counters_reset = true;
      rates.push_back(std::move(r));
      continue;
    }
    r.rx_bytes_per_s = static_cast<double>(now.rx_bytes - then.rx_bytes) / seconds;
    r.tx_bytes_per_s = static_cast<double>(now.tx_bytes - then.tx_bytes) / seconds;
    r.rx_packets_per_s = static_cast<double>(now.rx_packets - then.rx_packets) / seconds;
    r.tx_packets_per_s = static_cast<double>(now.tx_packets - then.tx_packets) / seconds;
    r.rx_errors = RxErrors(now) - RxErrors(then);
    r.tx_errors = TxErrors(now) - TxErrors(then);
    r.rx_drops = now.rx_drop - then.rx_drop;
    r.tx_drops = now.tx_drop - then.tx_drop;
    rates.push_back(std::move(r));
  }
  return rates;
}

}  // namespace stallscope
