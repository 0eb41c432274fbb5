#include "sample/nic_stats.h"

#include <algorithm>
#include <cctype>

namespace stallscope {
namespace {

// "port.link_xoff_rx" (i40e) and "link_xoff_rx.nic" (ice) are the port's
// own counters under the name the rest of the drivers use.
std::string_view Normalized(std::string_view name) {
  if (name.substr(0, 5) == "port.") name.remove_prefix(5);
  if (name.size() > 4 && name.substr(name.size() - 4) == ".nic") name.remove_suffix(4);
  return name;
}

// `name` is prefix + one or more digits + suffix.
bool NumberedAs(std::string_view name, std::string_view prefix, std::string_view suffix) {
  if (name.size() <= prefix.size() + suffix.size()) return false;
  if (name.substr(0, prefix.size()) != prefix) return false;
  if (name.substr(name.size() - suffix.size()) != suffix) return false;
  std::string_view digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  return !digits.empty() && std::all_of(digits.begin(), digits.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0;
  });
}

struct Named {
  std::string_view name;
  NicCounterKind kind;
};

// The exact names, by driver:
//  mlx5 (counters.rst): rx/tx_pause_ctrl_phy, rx_out_of_buffer,
//    rx/tx_discards_phy; its RDMA hw_counters np_ecn_marked_roce_packets,
//    np_cnp_sent, rp_cnp_handled, out_of_buffer.
//  bnxt_en / bnxt_re: rx/tx_pause_frames, rx/tx_pfc_frames,
//    rx_ecn_marked_pkts, tx_cnp_pkts, rx_cnp_pkts.
//  ice / i40e: link_xoff_rx/tx (XON frames, which resume, are not pauses).
//  ixgbe: rx/tx_flow_control_xoff.
//  virtio_net (6.x): rx_drops, the total of its queues' rxN_drops.
//  ena: the five *_allowance_exceeded counters.
constexpr Named kExact[] = {
    {"rx_pause_ctrl_phy", NicCounterKind::kPauseRxTotal},
    {"tx_pause_ctrl_phy", NicCounterKind::kPauseTxTotal},
    {"rx_pause_frames", NicCounterKind::kPauseRxTotal},
    {"tx_pause_frames", NicCounterKind::kPauseTxTotal},
    {"rx_pfc_frames", NicCounterKind::kPauseRxTotal},
    {"tx_pfc_frames", NicCounterKind::kPauseTxTotal},
    {"link_xoff_rx", NicCounterKind::kPauseRxTotal},
    {"link_xoff_tx", NicCounterKind::kPauseTxTotal},
    {"rx_flow_control_xoff", NicCounterKind::kPauseRxTotal},
    {"tx_flow_control_xoff", NicCounterKind::kPauseTxTotal},
    {"np_ecn_marked_roce_packets", NicCounterKind::kEcnMarked},
    {"rx_ecn_marked_pkts", NicCounterKind::kEcnMarked},
    {"np_cnp_sent", NicCounterKind::kCnpSent},
    {"tx_cnp_pkts", NicCounterKind::kCnpSent},
    {"rp_cnp_handled", NicCounterKind::kCnpHandled},
    {"rx_cnp_pkts", NicCounterKind::kCnpHandled},
    {"rx_out_of_buffer", NicCounterKind::kBufferDrop},
    {"out_of_buffer", NicCounterKind::kBufferDrop},
    {"rx_discards_phy", NicCounterKind::kBufferDrop},
    {"rx_drops", NicCounterKind::kBufferDrop},
    {"tx_discards_phy", NicCounterKind::kBufferDrop},
    {"bw_in_allowance_exceeded", NicCounterKind::kAllowanceExceeded},
    {"bw_out_allowance_exceeded", NicCounterKind::kAllowanceExceeded},
    {"pps_allowance_exceeded", NicCounterKind::kAllowanceExceeded},
    {"conntrack_allowance_exceeded", NicCounterKind::kAllowanceExceeded},
    {"linklocal_allowance_exceeded", NicCounterKind::kAllowanceExceeded},
};

struct Numbered {
  std::string_view prefix;
  std::string_view suffix;
  NicCounterKind kind;
};

// Per priority or per queue: mlx5 rx_prio3_pause / rx_prio3_discards,
// bnxt rx_pfc_ena_frames_pri3, ice/i40e rx_priority_3_xoff, virtio_net
// rx3_drops (6.x) and rx_queue_3_drops (before).
constexpr Numbered kNumbered[] = {
    {"rx_prio", "_pause", NicCounterKind::kPauseRxPriority},
    {"tx_prio", "_pause", NicCounterKind::kPauseTxPriority},
    {"rx_pfc_ena_frames_pri", "", NicCounterKind::kPauseRxPriority},
    {"tx_pfc_ena_frames_pri", "", NicCounterKind::kPauseTxPriority},
    {"rx_priority_", "_xoff", NicCounterKind::kPauseRxPriority},
    {"tx_priority_", "_xoff", NicCounterKind::kPauseTxPriority},
    {"rx_prio", "_discards", NicCounterKind::kBufferDropQueue},
    {"rx_queue_", "_drops", NicCounterKind::kBufferDropQueue},
    {"rx", "_drops", NicCounterKind::kBufferDropQueue},
};

}  // namespace

NicCounterKind ClassifyNicCounter(std::string_view raw) {
  std::string_view name = Normalized(raw);
  for (const Named& n : kExact)
    if (n.name == name) return n.kind;
  for (const Numbered& n : kNumbered)
    if (NumberedAs(name, n.prefix, n.suffix)) return n.kind;
  return NicCounterKind::kOther;
}

std::string_view NicCounterKindName(NicCounterKind kind) {
  switch (kind) {
    case NicCounterKind::kOther:
      return "other";
    case NicCounterKind::kPauseRxTotal:
      return "pause_rx";
    case NicCounterKind::kPauseTxTotal:
      return "pause_tx";
    case NicCounterKind::kPauseRxPriority:
      return "pause_rx_priority";
    case NicCounterKind::kPauseTxPriority:
      return "pause_tx_priority";
    case NicCounterKind::kEcnMarked:
      return "ecn_marked";
    case NicCounterKind::kCnpSent:
      return "cnp_sent";
    case NicCounterKind::kCnpHandled:
      return "cnp_handled";
    case NicCounterKind::kBufferDrop:
      return "buffer_drop";
    case NicCounterKind::kBufferDropQueue:
      return "buffer_drop_queue";
    case NicCounterKind::kAllowanceExceeded:
      return "allowance_exceeded";
  }
  return "other";
}

NicCongestion SummarizeNicStats(const NicStats& stats) {
  NicCongestion c;
  uint64_t rx_total = 0, tx_total = 0, rx_priority = 0, tx_priority = 0, drops_queue = 0;
  for (const NicCounter& counter : stats.counters) {
    NicCounterKind kind = ClassifyNicCounter(counter.name);
    if (kind == NicCounterKind::kOther) continue;
    c.counters_used.push_back(counter.name);
    const uint64_t v = counter.value;
    switch (kind) {
      case NicCounterKind::kPauseRxTotal:
        rx_total += v;
        break;
      case NicCounterKind::kPauseTxTotal:
        tx_total += v;
        break;
      case NicCounterKind::kPauseRxPriority:
        rx_priority += v;
        break;
      case NicCounterKind::kPauseTxPriority:
        tx_priority += v;
        break;
      case NicCounterKind::kEcnMarked:
        c.ecn_marked += v;
        break;
      case NicCounterKind::kCnpSent:
        c.cnp_sent += v;
        break;
      case NicCounterKind::kCnpHandled:
        c.cnp_handled += v;
        break;
      case NicCounterKind::kBufferDrop:
        c.buffer_drops += v;
        break;
      case NicCounterKind::kBufferDropQueue:
        drops_queue += v;
        break;
      case NicCounterKind::kAllowanceExceeded:
        c.allowance_exceeded += v;
        break;
      case NicCounterKind::kOther:
        break;
    }
    c.has_pause |= kind == NicCounterKind::kPauseRxTotal || kind == NicCounterKind::kPauseTxTotal ||
                   kind == NicCounterKind::kPauseRxPriority ||
                   kind == NicCounterKind::kPauseTxPriority;
    c.has_ecn_cnp |= kind == NicCounterKind::kEcnMarked || kind == NicCounterKind::kCnpSent ||
                     kind == NicCounterKind::kCnpHandled;
    c.has_drops |= kind == NicCounterKind::kBufferDrop ||
                   kind == NicCounterKind::kBufferDropQueue ||
                   kind == NicCounterKind::kAllowanceExceeded;
  }
  // A total beside its per-priority counters counts the same frames: the
  // larger of the two, never their sum.
  c.pause_rx = std::max(rx_total, rx_priority);
  c.pause_tx = std::max(tx_total, tx_priority);
  c.buffer_drops = std::max(c.buffer_drops, drops_queue);
  return c;
}

NicCongestion NicCongestionGrowth(const NicCongestion& before, const NicCongestion& after) {
  auto grew = [](uint64_t b, uint64_t a) { return a >= b ? a - b : a; };
  NicCongestion g = after;
  g.pause_rx = grew(before.pause_rx, after.pause_rx);
  g.pause_tx = grew(before.pause_tx, after.pause_tx);
  g.ecn_marked = grew(before.ecn_marked, after.ecn_marked);
  g.cnp_sent = grew(before.cnp_sent, after.cnp_sent);
  g.cnp_handled = grew(before.cnp_handled, after.cnp_handled);
  g.buffer_drops = grew(before.buffer_drops, after.buffer_drops);
  g.allowance_exceeded = grew(before.allowance_exceeded, after.allowance_exceeded);
  g.xmit_wait_ticks = grew(before.xmit_wait_ticks, after.xmit_wait_ticks);
  g.xmit_words = grew(before.xmit_words, after.xmit_words);
  return g;
}

}  // namespace stallscope
