// A NIC's driver statistics, as `ethtool -S IFACE` prints them, and what
// they say about congestion: pause frames (link-level and per-priority
// PFC), ECN marks and CNPs of RoCE NICs, and the receive buffer and ring
// drops on the host side. Each driver names its counters its own way (mlx5,
// bnxt_en, ice/i40e, ena, virtio_net, veth); ClassifyNicCounter knows the
// names those drivers document and leaves every other name unclassified:
// kept raw, never guessed. SummarizeNicStats sums each kind without counting
// a frame twice where a driver prints a total beside its per-priority
// counters (the larger of the two is taken, for pauses and for drops). Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace stallscope {

struct NicCounter {
  std::string name;
  uint64_t value = 0;
};

struct NicStats {
  std::string interface;
  std::string source;                // "SIOCETHTOOL" or the file read
  std::vector<NicCounter> counters;  // in the driver's order
};

enum class NicCounterKind {
  kOther,              // not one this classification knows: kept raw
  kPauseRxTotal,       // pause frames received (the peer asked us to stop), all priorities
  kPauseTxTotal,       // pause frames sent (we asked the peer to stop), all priorities
  kPauseRxPriority,    // per-priority (PFC) pause frames received
  kPauseTxPriority,    // per-priority (PFC) pause frames sent
  kEcnMarked,          // RoCE packets that arrived ECN-marked (the fabric is congested)
  kCnpSent,            // congestion notification packets sent (as notification point)
  kCnpHandled,         // CNPs received and acted on (as reaction point: the rate was cut)
  kBufferDrop,         // packets dropped for lack of a receive buffer or ring slot
  kBufferDropQueue,    // the same, per queue or priority (a total may be printed too)
  kAllowanceExceeded,  // packets queued or dropped by a cloud NIC's bandwidth/pps allowance
};

NicCounterKind ClassifyNicCounter(std::string_view name);
std::string_view NicCounterKindName(NicCounterKind kind);

// The sums of one NicStats, per kind, and the counters each came from.
struct NicCongestion {
  uint64_t pause_rx = 0;
  uint64_t pause_tx = 0;
  uint64_t ecn_marked = 0;
  uint64_t cnp_sent = 0;
  uint64_t cnp_handled = 0;
  uint64_t buffer_drops = 0;
  uint64_t allowance_exceeded = 0;
  // InfiniBand ports (RdmaPortCongestion): port_xmit_wait in ticks and
  // port_xmit_data in 4-octet words, whose ratio says how long the port
  // waited for credits against how long it sent.
  uint64_t xmit_wait_ticks = 0;
  uint64_t xmit_words = 0;
  bool has_xmit_wait = false;
  bool has_pause = false;                  // the driver counts pause frames at all
  bool has_ecn_cnp = false;                // ... ECN marks or CNPs
  bool has_drops = false;                  // ... buffer drops
  std::vector<std::string> counters_used;  // the names summed, in the driver's order
};

NicCongestion SummarizeNicStats(const NicStats& stats);

// after - before per kind (a counter that went backwards, a driver reset,
// counts from 0 again: its after value).
NicCongestion NicCongestionGrowth(const NicCongestion& before, const NicCongestion& after);

}  // namespace stallscope
