// Network interfaces: counters from /proc/net/dev, facts from /sys/class/net.
//
// ParseNetDev is the pure parser of /proc/net/dev; ReadNetDev reads it under
// a Root. ReadInterfaces lists /sys/class/net under a Root and says, for each
// interface, its MTU, speed, state, MAC, kind (physical NIC, bridge, Docker
// bridge, veth, IPoIB, ...), the bridge or bond it is enslaved to and its PCI
// address; IP addresses come from the caller (ReadLiveAddresses on a live
// host, a hand-made map in tests) because they live in netlink, not in a file.
// ClassifyInterface is the pure rule that turns sysfs evidence into a kind.
// All functions are stateless and thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/file.h"
#include "core/status.h"
#include "sample/network.h"

namespace stallscope {

// /proc/net/dev: two header lines, then "<name>: <8 receive> <8 transmit>".
// Interfaces in file order.
Result<std::vector<NetDevCounters>> ParseNetDev(std::string_view text, std::string_view source);
Result<std::vector<NetDevCounters>> ReadNetDev(const Root& root);

// What /sys/class/net/<if>/ shows about an interface, as far as its kind goes.
struct InterfaceEvidence {
  std::string name;
  std::optional<uint32_t> arp_type;
  std::optional<int64_t> ifindex;
  std::optional<int64_t> iflink;
  bool has_device = false;        // `device` link: backed by real hardware (PCI, USB, virtio)
  bool has_bridge_dir = false;    // `bridge/`: it is a bridge
  bool has_bonding_dir = false;   // `bonding/`: it is a bond master
  bool has_wireless_dir = false;  // `wireless/` or `phy80211`
  bool has_tun_flags = false;     // `tun_flags`: tun or tap
  std::string devtype;            // DEVTYPE= of `uevent` ("vlan", "bridge", "wlan", ...)
  std::string master;             // basename of the `master` link
};

struct InterfaceClass {
  InterfaceKind kind = InterfaceKind::kOther;
  std::string evidence;  // e.g. "has bridge/ and is named docker0"
};

InterfaceClass ClassifyInterface(const InterfaceEvidence& evidence);

// Docker's bridges: docker0 and br-<first 12 hex digits of the network id>.
bool IsDockerBridgeName(std::string_view name);

// The last path component shaped like a PCI address ("0000:3b:00.0") in a
// `device` link target or resolved path; empty when there is none.
std::string PciAddressFromDevicePath(std::string_view path);

// Every interface in /sys/class/net (sorted by name), with its addresses
// taken from `addresses`. A missing /sys/class/net is NotFound; an attribute
// the kernel refuses to read is nullopt; one that reads but does not parse is
// a ParseError naming the file.
Result<std::vector<NetInterface>> ReadInterfaces(const Root& root,
                                                 const InterfaceAddresses& addresses);

// IPv4 and IPv6 addresses of the live host's interfaces, from getifaddrs.
Result<InterfaceAddresses> ReadLiveAddresses();

}  // namespace stallscope
