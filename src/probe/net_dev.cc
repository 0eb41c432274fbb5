#include "probe/net_dev.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <bit>
#include <cctype>

#include "core/file.h"
#include "core/read_log.h"
#include "core/text.h"

namespace stallscope {
namespace {

// ARPHRD_* values from <linux/if_arp.h>; spelled here so the rule reads alone.
constexpr uint32_t kArpEther = 1;
constexpr uint32_t kArpInfiniband = 32;
constexpr uint32_t kArpLoopback = 772;

// /proc/net/dev has 8 receive and 8 transmit columns per interface.
constexpr size_t kNetDevColumns = 16;

bool IsHex(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// "0000:3b:00.0": domain (4 or more hex digits, VMD domains have 5), bus,
// device, function.
bool IsPciAddress(std::string_view text) {
  size_t first = text.find(':');
  if (first == std::string_view::npos || first < 4) return false;
  if (!IsHex(text.substr(0, first))) return false;
  std::string_view rest = text.substr(first + 1);
  return rest.size() == 7 && IsHex(rest.substr(0, 2)) && rest[2] == ':' &&
         IsHex(rest.substr(3, 2)) && rest[5] == '.' && rest[6] >= '0' && rest[6] <= '7';
}

bool Exists(const std::string& path) {
  NoteLinksRead(path);
  struct stat info;
  return ::lstat(path.c_str(), &info) == 0;
}

bool IsDirectory(const std::string& path) {
  NoteLinksRead(path);
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

std::string Basename(std::string_view path) {
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

std::optional<std::string> ReadLink(const std::string& path) {
  std::array<char, PATH_MAX> buffer;
  NoteLinksRead(path);
  ssize_t n = ::readlink(path.c_str(), buffer.data(), buffer.size());
  if (n <= 0 || static_cast<size_t>(n) >= buffer.size()) return std::nullopt;
  return std::string(buffer.data(), static_cast<size_t>(n));
}

// A sysfs integer attribute. The kernel answers EINVAL for the speed and
// carrier of a down or virtual interface, so any read failure is "not
// known"; text that reads but is not a number is a parse error.
Result<std::optional<int64_t>> ReadIntAttribute(const std::string& path) {
  Result<std::string> text = ReadAttribute(path);
  if (!text.ok()) return std::optional<int64_t>();
  std::optional<int64_t> value = ParseInt(*text);
  if (!value) return Status::ParseError(path, 1, "expected an integer, got '" + *text + "'");
  return value;
}

std::string ReadStringAttribute(const std::string& path) {
  Result<std::string> text = ReadAttribute(path);
  return text.ok() ? *text : std::string();
}

// DEVTYPE= of a uevent file; empty when the driver sets none (ethernet, veth).
std::string ReadDevtype(const std::string& path) {
  Result<std::string> text = ReadFile(path, 1 << 16);
  if (!text.ok()) return {};
  for (std::string_view line : SplitLines(*text)) {
    if (StartsWith(line, "DEVTYPE=")) return std::string(Trim(line.substr(8)));
  }
  return {};
}

}  // namespace

Result<std::vector<NetDevCounters>> ParseNetDev(std::string_view text, std::string_view source) {
  std::vector<std::string_view> lines = SplitLines(text);
  // The header is "Inter-|   Receive ... |  Transmit" then " face |bytes ...".
  if (lines.size() < 2) return Status::ParseError(source, 0, "missing the two header lines");
  for (int i = 0; i < 2; ++i) {
    if (lines[i].find('|') == std::string_view::npos) {
      return Status::ParseError(source, i + 1, "expected a header line with '|'");
    }
  }
  std::vector<NetDevCounters> interfaces;
  for (size_t i = 2; i < lines.size(); ++i) {
    const int line_number = static_cast<int>(i + 1);
    std::string_view line = lines[i];
    if (Trim(line).empty()) continue;
    // Old kernels print "eth0:12345" with no space once the byte count is
    // wide, so split at the colon, never on whitespace. Names cannot hold ':'.
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      return Status::ParseError(source, line_number, "expected '<interface>: <counters>'");
    }
    std::string_view name = Trim(line.substr(0, colon));
    if (name.empty()) return Status::ParseError(source, line_number, "empty interface name");
    std::string_view fields[kNetDevColumns];
    size_t count = SplitFieldsInto(line.substr(colon + 1), fields);
    if (count != kNetDevColumns) {
      return Status::ParseError(source, line_number,
                                "expected 16 counters, got " + std::to_string(count));
    }
    std::array<uint64_t, kNetDevColumns> values{};
    for (size_t f = 0; f < kNetDevColumns; ++f) {
      std::optional<uint64_t> value = ParseUint(fields[f]);
      if (!value) {
        return Status::ParseError(source, line_number,
                                  "counter " + std::to_string(f + 1) + " is not a number: '" +
                                      std::string(fields[f]) + "'");
      }
      values[f] = *value;
    }
    NetDevCounters c;
    c.name = std::string(name);
    c.rx_bytes = values[0];
    c.rx_packets = values[1];
    c.rx_errs = values[2];
    c.rx_drop = values[3];
    c.rx_fifo = values[4];
    c.rx_frame = values[5];
    c.rx_compressed = values[6];
    c.rx_multicast = values[7];
    c.tx_bytes = values[8];
    c.tx_packets = values[9];
    c.tx_errs = values[10];
    c.tx_drop = values[11];
    c.tx_fifo = values[12];
    c.tx_colls = values[13];
    c.tx_carrier = values[14];
    c.tx_compressed = values[15];
    interfaces.push_back(std::move(c));
  }
  return interfaces;
}

Result<std::vector<NetDevCounters>> ReadNetDev(const Root& root) {
  const std::string path = root.Path("/proc/net/dev");
  Result<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  return ParseNetDev(*text, path);
}

bool IsDockerBridgeName(std::string_view name) {
  if (name == "docker0") return true;
  // User-defined Docker networks get "br-" plus 12 hex digits of the network
  // id. A hand-made bridge called "br-lan" is not Docker's, so require them.
  return StartsWith(name, "br-") && name.size() == 15 && IsHex(name.substr(3));
}

// The order matters: an IPoIB or wireless netdev also has a `device` link,
// and a Docker bridge is first a bridge, so the specific evidence wins.
//   type 772 (ARPHRD_LOOPBACK)            -> loopback
//   type 32 (ARPHRD_INFINIBAND)           -> infiniband (name ib* if type unreadable)
//   wireless/ or DEVTYPE=wlan             -> wireless
//   bridge/ or DEVTYPE=bridge             -> bridge; docker if named docker0 or br-<12 hex>
//   bonding/ or DEVTYPE=bond              -> bond
//   DEVTYPE=vlan                          -> vlan
//   tun_flags                             -> tun (tun and tap)
//   device link                           -> ethernet (a physical or virtio NIC)
//   type 1, iflink != ifindex, or veth*   -> veth; docker if its master is a Docker bridge
//   anything else (ifb, dummy, tunnels)   -> other
// macvlan/ipvlan also show iflink != ifindex with no DEVTYPE, so they read
// as veth: both are virtual links stacked on another interface, which is
// what the network checks care about.
InterfaceClass ClassifyInterface(const InterfaceEvidence& e) {
  if (e.arp_type == kArpLoopback) return {InterfaceKind::kLoopback, "type 772 (loopback)"};
  if (e.arp_type == kArpInfiniband) return {InterfaceKind::kInfiniband, "type 32 (infiniband)"};
  if (!e.arp_type && StartsWith(e.name, "ib")) {
    return {InterfaceKind::kInfiniband, "named ib* (type unreadable)"};
  }
  if (e.has_wireless_dir) return {InterfaceKind::kWireless, "has wireless/"};
  if (e.devtype == "wlan") return {InterfaceKind::kWireless, "DEVTYPE=wlan"};
  if (e.has_bridge_dir || e.devtype == "bridge") {
    std::string why = e.has_bridge_dir ? "has bridge/" : "DEVTYPE=bridge";
    if (IsDockerBridgeName(e.name)) return {InterfaceKind::kDocker, why + ", Docker's name"};
    return {InterfaceKind::kBridge, why};
  }
  if (e.has_bonding_dir) return {InterfaceKind::kBond, "has bonding/"};
  if (e.devtype == "bond") return {InterfaceKind::kBond, "DEVTYPE=bond"};
  if (e.devtype == "vlan") return {InterfaceKind::kVlan, "DEVTYPE=vlan"};
  if (e.has_tun_flags) return {InterfaceKind::kTun, "has tun_flags"};
  if (e.has_device) return {InterfaceKind::kEthernet, "has device link"};
  std::string veth_why;
  if (e.arp_type == kArpEther && e.ifindex && e.iflink && *e.ifindex != *e.iflink) {
    veth_why = "iflink differs from ifindex, no device link";
  } else if (StartsWith(e.name, "veth")) {
    veth_why = "named veth*, no device link";
  }
  if (!veth_why.empty()) {
    if (IsDockerBridgeName(e.master)) {
      return {InterfaceKind::kDocker, veth_why + ", master " + e.master};
    }
    return {InterfaceKind::kVeth, veth_why};
  }
  return {InterfaceKind::kOther, "no device link, no kind-specific sysfs entry"};
}

std::string PciAddressFromDevicePath(std::string_view path) {
  std::string found;
  while (!path.empty()) {
    size_t slash = path.find('/');
    std::string_view part = path.substr(0, slash);
    if (IsPciAddress(part)) found = std::string(part);
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return found;
}

Result<std::vector<NetInterface>> ReadInterfaces(const Root& root,
                                                 const InterfaceAddresses& addresses) {
  const std::string class_dir = root.Path("/sys/class/net");
  Result<std::vector<std::string>> names = ListDirectory(class_dir);
  if (!names.ok()) return names.status();
  std::vector<NetInterface> interfaces;
  for (const std::string& name : *names) {
    const std::string dir = class_dir + "/" + name;
    // bonding_masters sits beside the interfaces as a plain file.
    if (!IsDirectory(dir)) continue;
    NetInterface out;
    out.name = name;

    Result<std::optional<int64_t>> value = ReadIntAttribute(dir + "/ifindex");
    if (!value.ok()) return value.status();
    out.ifindex = *value;
    value = ReadIntAttribute(dir + "/iflink");
    if (!value.ok()) return value.status();
    out.iflink = *value;
    value = ReadIntAttribute(dir + "/mtu");
    if (!value.ok()) return value.status();
    if (*value && **value >= 0) out.mtu_bytes = static_cast<uint64_t>(**value);
    // -1 (SPEED_UNKNOWN) is what a NIC without link or a virtio NIC reports.
    value = ReadIntAttribute(dir + "/speed");
    if (!value.ok()) return value.status();
    if (*value && **value > 0) out.speed_mbps = static_cast<uint64_t>(**value);
    value = ReadIntAttribute(dir + "/type");
    if (!value.ok()) return value.status();
    if (*value && **value >= 0 && **value <= UINT32_MAX) {
      out.arp_type = static_cast<uint32_t>(**value);
    }
    value = ReadIntAttribute(dir + "/carrier");
    if (!value.ok()) return value.status();
    if (*value) out.carrier = **value != 0;
    out.operstate = ReadStringAttribute(dir + "/operstate");
    out.mac_address = ReadStringAttribute(dir + "/address");

    std::optional<std::string> master = ReadLink(dir + "/master");
    if (master) out.master = Basename(*master);

    InterfaceEvidence evidence;
    evidence.name = name;
    evidence.arp_type = out.arp_type;
    evidence.ifindex = out.ifindex;
    evidence.iflink = out.iflink;
    evidence.has_device = Exists(dir + "/device");
    evidence.has_bridge_dir = Exists(dir + "/bridge");
    evidence.has_bonding_dir = Exists(dir + "/bonding");
    evidence.has_wireless_dir = Exists(dir + "/wireless") || Exists(dir + "/phy80211");
    evidence.has_tun_flags = Exists(dir + "/tun_flags");
    evidence.devtype = ReadDevtype(dir + "/uevent");
    evidence.master = out.master;
    InterfaceClass kind = ClassifyInterface(evidence);
    out.kind = kind.kind;
    out.kind_evidence = std::move(kind.evidence);

    if (evidence.has_device) {
      // A NIC's link names its PCI function ("../../../0000:3b:00.0"); a
      // virtio NIC's names "virtio2", whose resolved path holds the PCI
      // function above it.
      std::optional<std::string> link = ReadLink(dir + "/device");
      if (link) out.pci_address = PciAddressFromDevicePath(*link);
      if (out.pci_address.empty()) {
        char* resolved = ::realpath((dir + "/device").c_str(), nullptr);
        if (resolved != nullptr) {
          out.pci_address = PciAddressFromDevicePath(resolved);
          ::free(resolved);
        }
      }
    }

    auto found = addresses.find(name);
    if (found != addresses.end()) out.addresses = found->second;
    interfaces.push_back(std::move(out));
  }
  return interfaces;
}

Result<InterfaceAddresses> ReadLiveAddresses() {
  struct ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return Status::FromErrno("getifaddrs", errno);
  InterfaceAddresses out;
  for (struct ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr || entry->ifa_name == nullptr) continue;
    const int family = entry->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    char text[INET6_ADDRSTRLEN] = {};
    IpAddress address;
    int prefix = 0;
    if (family == AF_INET) {
      address.family = IpAddress::Family::kIpv4;
      const auto* in = reinterpret_cast<const sockaddr_in*>(entry->ifa_addr);
      ::inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
      if (entry->ifa_netmask != nullptr) {
        const auto* mask = reinterpret_cast<const sockaddr_in*>(entry->ifa_netmask);
        prefix = std::popcount(static_cast<uint32_t>(mask->sin_addr.s_addr));
      }
    } else {
      address.family = IpAddress::Family::kIpv6;
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(entry->ifa_addr);
      ::inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text);
      if (entry->ifa_netmask != nullptr) {
        const auto* mask = reinterpret_cast<const sockaddr_in6*>(entry->ifa_netmask);
        for (unsigned char byte : mask->sin6_addr.s6_addr) prefix += std::popcount(byte);
      }
    }
    address.address = text;
    address.prefix_length = prefix;
    out[entry->ifa_name].push_back(std::move(address));
  }
  ::freeifaddrs(list);
  return out;
}

}  // namespace stallscope
