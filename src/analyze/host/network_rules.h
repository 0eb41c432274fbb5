// The network layer of the triage: pure rules over what the network probes
// saw (probe/net_dev, probe/infiniband, probe/environment, the container
// clues) and over what `net probe` measured.
//
// NetworkObservation is assembled by the caller (doctor from a snapshot and
// a live route lookup, run/report from the run's baseline and timeline) and
// holds plain data only, so every rule is tested on fixture hosts and
// synthetic values. The rules:
//   network.wrong_interface   NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME /
//                             NCCL_IB_HCA name something missing, down,
//                             addressless, loopback or Docker; or the route
//                             to MASTER_ADDR (or a given peer) leaves through
//                             an interface the variable does not allow.
//   network.container_bridge  a container on bridge networking (veth, the
//                             Docker bridge range, no host interfaces).
//   network.rdma_unused       active IB/RoCE ports while NCCL is told not to
//                             use them (NCCL_IB_DISABLE=1, NCCL_NET=Socket).
//   network.port_errors       NIC errors/drops, IB symbol errors, link_downed
//                             that grew over a window.
//   network.congestion        pause frames, ECN marks, CNPs or an IB port's
//                             port_xmit_wait growing over a window.
//   network.drops_buffer      NIC or HCA buffer/ring drops (out_of_buffer).
//   network.nic_far_from_gpu  a GPU uses a NIC further than its closest, or
//                             its closest HCA is across sockets
//                             (analyze/host/nic_placement_rules.h).
//   network.mtu_mismatch      `net probe`: local, path and peer MTU differ.
// Thresholds are named constants; their reasoning is in analyze/catalog.cc.
// Stateless; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sample/container.h"
#include "sample/environment.h"
#include "sample/finding.h"
#include "sample/network.h"
#include "sample/snapshot.h"

namespace stallscope {

// network.port_errors. A healthy link counts no CRC/frame/carrier errors at
// all, so one in a window is worth a look; losing 0.1% of packets already
// cuts a TCP stream's rate severalfold (throughput ~ 1/sqrt(loss)).
inline constexpr uint64_t kPortErrorsWarningCount = 1;
inline constexpr double kPortErrorsCriticalFraction = 0.001;  // of the packets in the window
// Drops also count packets of protocols nobody listens to, so a few are
// normal: they matter from 10 in a window and 0.1% of the packets.
inline constexpr uint64_t kPortDropsMinCount = 10;
inline constexpr double kPortDropsWarningFraction = 0.001;
inline constexpr double kPortDropsCriticalFraction = 0.01;

// network.container_bridge: Docker's default bridge network.
inline constexpr std::string_view kDockerBridgeRange = "172.17.0.0/16";

// NCCL's interface-list syntax (NCCL_SOCKET_IFNAME, NCCL_IB_HCA):
// "[^][=]name[:port][,name[:port]...]". '^' excludes the listed names, '='
// asks for exact names instead of prefixes ("eth" matches eth0 and eth1),
// ":port" selects one port of an HCA (sockets ignore it).
struct InterfaceList {
  struct Entry {
    std::string name;
    std::optional<int> port;
  };
  bool exclude = false;
  bool exact = false;
  std::vector<Entry> entries;
};

InterfaceList ParseInterfaceList(std::string_view value);

// Whether `entry` selects `name` (and `port`, when both give one).
bool EntryMatches(const InterfaceList& list, const InterfaceList::Entry& entry,
                  std::string_view name, std::optional<int> port);
// Whether NCCL would use `name`/`port` under this list (exclusion applied).
bool ListSelects(const InterfaceList& list, std::string_view name, std::optional<int> port);

// NIC deltas from NetRates (which already count errors per interval) and
// RDMA deltas from two readings of the ports. Loopback is left out; a port
// whose counters went backwards (reset) counts nothing.
std::vector<PortErrorDelta> NicErrorDeltas(const std::vector<NetRates>& rates);
std::vector<PortErrorDelta> RdmaErrorDeltas(const std::vector<InfinibandDevice>& before,
                                            const std::vector<InfinibandDevice>& after);

// Whether the job's environment says it spans hosts: WORLD_SIZE above
// LOCAL_WORLD_SIZE, NODE_RANK/GROUP_RANK above 0, or a route to MASTER_ADDR
// that leaves the host. `why` receives the clue.
bool MultiNodeHint(const NetworkObservation& observation, std::string* why);

// The growth of each RDMA port's congestion counters (port_xmit_wait, the
// hw_counters) between two readings, named "mlx5_0:1", for
// NetworkObservation::nic_congestion. Ports in only one reading are left out.
std::vector<NetworkObservation::NicCongestionDelta> RdmaCongestionDeltas(
    const std::vector<InfinibandDevice>& before, const std::vector<InfinibandDevice>& after);

// The facts of a snapshot (interfaces, RDMA ports, environment, container)
// and the NIC counters' growth over its interval. Routes and RDMA counter
// growth need the live host: the caller adds them.
NetworkObservation ObserveNetwork(const Snapshot& snapshot);

FindingsWithNotes CheckNetwork(const NetworkObservation& observation);

// network.congestion: pause frames received, ECN-marked packets or CNPs
// handled growing at this rate or more (per second, any one of them) on a
// NIC over the window; critical at kPauseStormPerSecond pause frames/s.
inline constexpr double kCongestionWarningPerSecond = 10;
inline constexpr double kPauseStormPerSecond = 1000;
// network.congestion on an InfiniBand port: port_xmit_wait growing at
// least kXmitWaitMinTicksPerSecond (a floor under the noise of an idle
// port, whatever the chip's tick) and at kXmitWaitWarningRatio ticks or
// more per 4-byte word sent; critical from kXmitWaitCriticalRatio (the
// port waited about as long as it sent). The tick is a multiple of the
// symbol time each chip picks, so the ratio, not seconds, is judged.
inline constexpr double kXmitWaitMinTicksPerSecond = 1e6;
inline constexpr double kXmitWaitWarningRatio = 0.1;
inline constexpr double kXmitWaitCriticalRatio = 1.0;
// network.drops_buffer: at least this many buffer/ring drops (or a cloud
// NIC's allowance exceeded) over the window; critical at the rate below.
inline constexpr uint64_t kBufferDropsMinCount = 10;
inline constexpr double kBufferDropsCriticalPerSecond = 100;

// network.mtu_mismatch: warning when the three differ; critical when packets
// the local MTU allows are silently lost on the way (the kernel still
// believes the local MTU: nobody told it, so every full-size packet vanishes).
std::optional<Finding> CheckPathMtu(const MtuObservation& observation);

}  // namespace stallscope
