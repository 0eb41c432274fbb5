// Network samples: per-interface counters, interface facts, RDMA ports, rates.
//
// Plain data filled by probe/net_dev.h (from /proc/net/dev and
// /sys/class/net) and probe/infiniband.h (from /sys/class/infiniband), and
// the rates between two counter samples (sample/net_rates.h). The network
// checks of the triage read these: MTU mismatches, Docker bridge addresses,
// the NIC NCCL should use, RDMA ports that are down or erroring. Units are in
// the field names; counters are cumulative since boot unless named per
// second. Values own their strings; thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sample/container.h"
#include "sample/environment.h"
#include "sample/nic_stats.h"

namespace stallscope {

// One line of /proc/net/dev: cumulative counters since the interface was
// created. Receive and transmit columns differ: receive has frame and
// multicast, transmit has colls and carrier.
struct NetDevCounters {
  std::string name;
  uint64_t rx_bytes = 0;
  uint64_t rx_packets = 0;
  uint64_t rx_errs = 0;
  uint64_t rx_drop = 0;
  uint64_t rx_fifo = 0;
  uint64_t rx_frame = 0;
  uint64_t rx_compressed = 0;
  uint64_t rx_multicast = 0;
  uint64_t tx_bytes = 0;
  uint64_t tx_packets = 0;
  uint64_t tx_errs = 0;
  uint64_t tx_drop = 0;
  uint64_t tx_fifo = 0;
  uint64_t tx_colls = 0;
  uint64_t tx_carrier = 0;
  uint64_t tx_compressed = 0;
};

// What an interface is, in the words an engineer uses when asking "which NIC
// does NCCL pick?". How each kind is decided from sysfs is in net_dev.cc.
enum class InterfaceKind {
  kLoopback,
  kEthernet,  // a physical NIC (has a `device` link)
  kBridge,
  kBond,
  kVeth,
  kDocker,      // docker0 / br-<id> bridge, or a veth enslaved to one
  kInfiniband,  // IPoIB netdev (ARPHRD_INFINIBAND)
  kVlan,
  kTun,  // tun or tap
  kWireless,
  kOther,
};

// Stable names for JSON and text output.
inline const char* InterfaceKindName(InterfaceKind kind) {
  switch (kind) {
    case InterfaceKind::kLoopback:
      return "loopback";
    case InterfaceKind::kEthernet:
      return "ethernet";
    case InterfaceKind::kBridge:
      return "bridge";
    case InterfaceKind::kBond:
      return "bond";
    case InterfaceKind::kVeth:
      return "veth";
    case InterfaceKind::kDocker:
      return "docker";
    case InterfaceKind::kInfiniband:
      return "infiniband";
    case InterfaceKind::kVlan:
      return "vlan";
    case InterfaceKind::kTun:
      return "tun";
    case InterfaceKind::kWireless:
      return "wireless";
    case InterfaceKind::kOther:
      return "other";
  }
  return "other";
}

struct IpAddress {
  enum class Family { kIpv4, kIpv6 };
  Family family = Family::kIpv4;
  std::string address;    // textual form: "172.17.0.1", "fe80::1"
  int prefix_length = 0;  // 16 for 172.17.0.1/16
};

// Whether a textual address reaches only its own link: IPv6 fe80::/10 (as
// "fe80:..." in any case), IPv4 169.254.0.0/16 (a host with no DHCP answer,
// a BMC's USB link). One rule for the host's interfaces and NCCL's.
inline bool IsLinkLocalAddress(std::string_view address) {
  if (address.size() >= 5 && address[4] == ':' && (address[0] | 0x20) == 'f' &&
      (address[1] | 0x20) == 'e' && address[2] == '8' && address[3] == '0') {
    return true;
  }
  return address.substr(0, 8) == "169.254.";
}

// IP addresses by interface name. On a live host getifaddrs fills it
// (ReadLiveAddresses); tests supply their own.
using InterfaceAddresses = std::map<std::string, std::vector<IpAddress>>;

// One entry of /sys/class/net. Attributes the kernel refuses to give (speed
// and carrier of a down or virtual interface read as EINVAL) are nullopt.
struct NetInterface {
  std::string name;
  std::optional<int64_t> ifindex;
  std::optional<int64_t> iflink;  // differs from ifindex for veth peers and vlans
  std::optional<uint64_t> mtu_bytes;
  std::optional<uint64_t> speed_mbps;  // nullopt when down, virtual or -1
  std::string operstate;               // "up", "down", "unknown", "dormant", ...
  std::string mac_address;             // "02:fc:00:00:00:01"; 20 bytes for IPoIB
  std::optional<uint32_t> arp_type;    // ARPHRD_*: 1 ether, 32 infiniband, 772 loopback
  std::optional<bool> carrier;
  InterfaceKind kind = InterfaceKind::kOther;
  std::string kind_evidence;  // the sysfs fact that decided kind, e.g. "has bridge/"
  std::string master;         // bridge or bond this interface is enslaved to; empty if none
  std::string pci_address;    // "0000:3b:00.0" for a NIC on PCI; empty otherwise
  std::vector<IpAddress> addresses;
};

// Rates of one interface between two /proc/net/dev samples.
struct NetRates {
  std::string name;
  double seconds = 0;
  double rx_bytes_per_s = 0;
  double tx_bytes_per_s = 0;
  double rx_packets_per_s = 0;
  double tx_packets_per_s = 0;
  // Counts over the interval, not per second: one dropped packet in an
  // interval matters, a rate of 0.01/s hides it.
  uint64_t rx_errors = 0;  // errs + fifo + frame
  uint64_t tx_errors = 0;  // errs + fifo + colls + carrier
  uint64_t rx_drops = 0;
  uint64_t tx_drops = 0;
  // A counter went backwards (interface re-created, driver reset): the rates
  // above are 0 rather than a wrapped, absurd number.
  bool counters_reset = false;
};

// "4: ACTIVE" (state) or "5: LinkUp" (phys_state) of an RDMA port.
struct IbPortState {
  int code = 0;
  std::string name;  // "ACTIVE", "DOWN", "INIT", "LinkUp", "Polling", "Disabled", ...
};

// "200 Gb/sec (4X HDR)".
struct IbRate {
  double gbps = 0;   // 200; gigabits per second of signalling rate
  std::string text;  // the kernel's text, as read
};

// One port of an RDMA device (/sys/class/infiniband/<hca>/ports/<n>/).
struct InfinibandPort {
  uint32_t port = 0;  // 1-based, as the kernel numbers them
  std::optional<IbPortState> state;
  std::optional<IbPortState> phys_state;
  std::optional<IbRate> rate;
  std::string link_layer;       // "InfiniBand" or "Ethernet" (RoCE)
  bool roce = false;            // link_layer is Ethernet
  std::optional<uint32_t> lid;  // 0 for RoCE ports
  // The kernel reports port_xmit_data and port_rcv_data in 4-byte words (the
  // IBA PortCounters unit); these are those counts times 4.
  std::optional<uint64_t> xmit_bytes;
  std::optional<uint64_t> rcv_bytes;
  std::optional<uint64_t> rcv_errors;
  std::optional<uint64_t> symbol_errors;
  std::optional<uint64_t> link_downed;
  std::optional<uint64_t> xmit_discards;
  // port_xmit_wait: ticks in which the port had data to send but sent
  // nothing (no credits from the link's far end, or lost arbitration): the
  // InfiniBand congestion counter. A tick is a multiple of the symbol time
  // that each chip chooses (PortSamplesControl.Tick), so it is kept in
  // ticks, never turned into seconds here.
  std::optional<uint64_t> xmit_wait;
  std::optional<uint64_t> excessive_buffer_overrun_errors;
  std::optional<uint64_t> local_link_integrity_errors;
  // The congestion counters of the port's hw_counters/ (mlx5: out_of_buffer,
  // np_cnp_sent, rp_cnp_handled, np_ecn_marked_roce_packets), where present;
  // named as the driver names them.
  std::vector<NicCounter> hw_counters;
  // The Ethernet netdev carrying this port (RoCE) or its IPoIB netdev; empty
  // when the driver exposes none.
  std::string netdev;
};

// One RDMA device (an HCA: mlx5_0) with its ports.
struct InfinibandDevice {
  std::string name;              // "mlx5_0"
  std::string hca_type;          // "MT4123"; empty when absent
  std::string firmware_version;  // fw_ver: "20.31.1014"
  std::string node_guid;         // "b859:9f03:00d4:1e2a"
  std::vector<InfinibandPort> ports;
};

// The error counters of one network port: a NIC from /proc/net/dev, or an
// RDMA port ("mlx5_0:1") from /sys/class/infiniband. Cumulative in a
// recorded sample (PortCounterPoint), a window's growth in a finding's
// evidence (PortErrorDelta): the same fields either way.
struct PortErrors {
  std::string port;
  bool rdma = false;
  uint64_t packets = 0;  // rx + tx packets (NICs)
  uint64_t rx_errors = 0;
  uint64_t tx_errors = 0;
  uint64_t rx_drops = 0;
  uint64_t tx_drops = 0;
  uint64_t symbol_errors = 0;  // RDMA ports
  uint64_t link_downed = 0;
  uint64_t rcv_errors = 0;
  // RDMA ports: excessive_buffer_overrun_errors and
  // local_link_integrity_errors (doctor's window; not in the run file).
  uint64_t buffer_overrun_errors = 0;
  uint64_t link_integrity_errors = 0;
};

// Where the kernel routes packets for one peer: the source address a
// connected UDP socket got, and the interface that holds that address.
struct PeerRoute {
  std::string peer;           // as given: "MASTER_ADDR=node1", "--peer 10.0.0.2"
  std::string address;        // resolved: "10.0.0.2"
  std::string local_address;  // the kernel's pick of source address
  std::string interface;      // its interface; empty when none holds it
  std::string error;          // why it could not be routed; empty on success
};

// Counter growth of one port over a window.
using PortErrorDelta = PortErrors;

struct NetworkObservation {
  std::vector<NetInterface> interfaces;
  std::vector<InfinibandDevice> infiniband;
  TrainingEnvironment environment;
  ContainerInfo container;
  std::vector<PeerRoute> routes;  // MASTER_ADDR and any given peers
  // The counters' growth over window_seconds; nullopt window: not sampled.
  std::optional<double> window_seconds;
  std::vector<PortErrorDelta> port_deltas;
  // The NICs' congestion counters (ethtool -S) over the same window.
  struct NicCongestionDelta {
    std::string interface;
    NicCongestion growth;
  };
  std::vector<NicCongestionDelta> nic_congestion;
};

// What `net probe` found out about MTUs on the path to a peer.
struct MtuObservation {
  std::string peer;                    // "10.0.0.2"
  std::string local_interface;         // the one the route uses
  std::optional<uint64_t> local_mtu;   // its MTU
  std::optional<uint64_t> path_mtu;    // largest packet that arrived, IP header included
  std::optional<uint64_t> kernel_mtu;  // IP_MTU of the connected socket afterwards
  std::string peer_interface;          // the server's interface
  std::optional<uint64_t> peer_mtu;    // its MTU, as the server tells it
};

}  // namespace stallscope
