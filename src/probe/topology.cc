#include "probe/topology.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <optional>
#include <string>

#include "core/file.h"
#include "core/read_log.h"
#include "core/text.h"

namespace stallscope {
namespace {

constexpr uint16_t kNvidiaVendor = 0x10de;
constexpr uint32_t kVgaClass = 0x0300;  // class/subclass of a display controller
constexpr uint32_t k3dClass = 0x0302;   // data-center GPUs present as 3D controllers

std::optional<uint32_t> ParseHex(std::string_view text) {
  text = Trim(text);
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X'))
    text.remove_prefix(2);
  uint32_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value, 16);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return value;
}

// numa_node of a sysfs device directory; -1 when absent or not a node.
std::optional<int> ReadNumaNode(const std::string& device_dir) {
  Result<std::string> text = ReadAttribute(device_dir + "/numa_node");
  if (!text.ok()) return std::nullopt;
  std::optional<int64_t> node = ParseInt(*text);
  if (!node) return std::nullopt;
  return *node < 0 || *node > INT_MAX ? -1 : static_cast<int>(*node);
}

// The part of a resolved sysfs path from the host bridge ("pci0000:16") to
// `end`; empty when it holds no host bridge.
std::string PciTreePath(std::string_view resolved, size_t end) {
  std::string_view path = resolved.substr(0, std::min(end, resolved.size()));
  size_t at = 0;
  while ((at = path.find("/pci", at)) != std::string_view::npos) {
    std::string_view rest = path.substr(at + 1);
    std::string_view component = rest.substr(0, rest.find('/'));
    if (component.size() == 10 && component[7] == ':') return std::string(rest);
    at += 4;
  }
  return "";
}

// The PCI tree path of the function at `link` (a /sys/bus/pci/devices entry).
std::string ResolvePciTreePath(const std::string& link) {
  char resolved[PATH_MAX];
  NoteLinksRead(link);
  if (::realpath(link.c_str(), resolved) == nullptr) return "";
  return PciTreePath(resolved, std::string_view::npos);
}

// Where a class device (/sys/class/net/eth0/device) sits: the PCI address is
// the last PCI-looking directory on its resolved path (a virtio NIC resolves
// to .../0000:00:03.0/virtio2), and its numa_node is the device's own or,
// when the device has none, that PCI function's.
DevicePlacement PlaceDevice(std::string name, const std::string& device_link) {
  DevicePlacement placement;
  placement.name = std::move(name);
  std::optional<int> node = ReadNumaNode(device_link);
  char resolved[PATH_MAX];
  NoteLinksRead(device_link);
  if (::realpath(device_link.c_str(), resolved) != nullptr) {
    std::string_view path = resolved;
    size_t pci_end = std::string_view::npos;
    size_t end = path.size();
    while (end > 0) {
      size_t slash = path.rfind('/', end - 1);
      if (slash == std::string_view::npos) break;
      std::string_view component = path.substr(slash + 1, end - slash - 1);
      if (IsPciAddress(component)) {
        placement.pci_address = std::string(component);
        pci_end = end;
        placement.pci_path = PciTreePath(path, pci_end);
        break;
      }
      end = slash;
    }
    if (!node && pci_end != std::string_view::npos) {
      node = ReadNumaNode(std::string(path.substr(0, pci_end)));
    }
  }
  placement.numa_node = node.value_or(-1);
  return placement;
}

// Devices of a class directory (/sys/class/net) that have a `device` link;
// virtual interfaces (lo, bridges, veth) have none and are left out.
std::vector<DevicePlacement> PlaceClassDevices(const Root& root, std::string_view class_dir) {
  std::vector<DevicePlacement> devices;
  std::string dir = root.Path(class_dir);
  Result<std::vector<std::string>> names = ListDirectory(dir);
  if (!names.ok()) return devices;
  for (const std::string& name : *names) {
    std::string link = dir + "/" + name + "/device";
    if (::access(link.c_str(), F_OK) != 0) continue;
    devices.push_back(PlaceDevice(name, link));
  }
  return devices;
}

std::vector<DevicePlacement> FindNvidiaGpus(const Root& root) {
  std::vector<DevicePlacement> gpus;
  std::string dir = root.Path("/sys/bus/pci/devices");
  Result<std::vector<std::string>> addresses = ListDirectory(dir);
  if (!addresses.ok()) return gpus;
  for (const std::string& address : *addresses) {
    std::string device = dir + "/" + address;
    Result<std::string> vendor = ReadAttribute(device + "/vendor");
    if (!vendor.ok() || ParseHex(*vendor) != kNvidiaVendor) continue;
    Result<std::string> pci_class = ReadAttribute(device + "/class");
    if (!pci_class.ok()) continue;
    std::optional<uint32_t> code = ParseHex(*pci_class);
    if (!code || ((*code >> 8) != kVgaClass && (*code >> 8) != k3dClass)) continue;
    gpus.push_back(
        {address, address, ReadNumaNode(device).value_or(-1), ResolvePciTreePath(device)});
  }
  return gpus;
}

}  // namespace

bool IsPciAddress(std::string_view text) {
  // dddd:bb:dd.f
  if (text.size() != 12 || text[4] != ':' || text[7] != ':' || text[10] != '.') return false;
  for (size_t i = 0; i < text.size(); ++i) {
    if (i == 4 || i == 7 || i == 10) continue;
    char c = text[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

Result<int> ParseCpuListCount(std::string_view text, std::string_view source) {
  text = Trim(text);
  int64_t count = 0;
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view range = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    size_t dash = range.find('-');
    std::optional<uint64_t> first = ParseUint(range.substr(0, dash));
    std::optional<uint64_t> last =
        dash == std::string_view::npos ? first : ParseUint(range.substr(dash + 1));
    // Linux caps CPUs at 8192 (NR_CPUS); anything beyond is not a cpulist.
    constexpr uint64_t kMaxCpu = 1 << 16;
    if (!first || !last || *last < *first || *last >= kMaxCpu) {
      return Status::ParseError(source, 1, "bad CPU range '" + std::string(range) + "'");
    }
    count += static_cast<int64_t>(*last - *first + 1);
    if (count > static_cast<int64_t>(kMaxCpu)) {
      return Status::ParseError(source, 1, "more CPUs than any kernel supports");
    }
  }
  return static_cast<int>(count);
}

Result<uint64_t> ParseNodeMemTotal(std::string_view text, std::string_view source) {
  int number = 0;
  while (!text.empty()) {
    size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    ++number;
    size_t key = line.find("MemTotal:");
    if (key == std::string_view::npos) continue;
    std::string_view value = Trim(line.substr(key + 9));
    std::optional<uint64_t> kb;
    if (value.size() > 2 && value.substr(value.size() - 2) == "kB") {
      kb = ParseUint(value.substr(0, value.size() - 2));
    }
    if (!kb || *kb > UINT64_MAX / 1024) {
      return Status::ParseError(source, number, "MemTotal is not '<number> kB'");
    }
    return *kb * 1024;
  }
  return Status::ParseError(source, 0, "no MemTotal line");
}

Result<Topology> ReadSysfsTopology(const Root& root) {
  Topology topology;
  topology.source = "sysfs";
  std::string node_dir = root.Path("/sys/devices/system/node");
  Result<std::vector<std::string>> names = ListDirectory(node_dir);
  if (!names.ok() && !names.status().IsNotFound()) return names.status();
  if (names.ok()) {
    for (const std::string& name : *names) {
      if (name.size() < 5 || name.compare(0, 4, "node") != 0) continue;
      std::optional<uint64_t> id = ParseUint(std::string_view(name).substr(4));
      if (!id || *id > INT_MAX) continue;
      NumaNode node;
      node.id = static_cast<int>(*id);
      std::string dir = node_dir + "/" + name;
      if (Result<std::string> cpulist = ReadAttribute(dir + "/cpulist"); cpulist.ok()) {
        Result<int> count = ParseCpuListCount(*cpulist, dir + "/cpulist");
        if (!count.ok()) return count.status();
        node.cpulist = *cpulist;
        node.cpu_count = *count;
      }
      if (Result<std::string> meminfo = ReadFile(dir + "/meminfo"); meminfo.ok()) {
        Result<uint64_t> total = ParseNodeMemTotal(*meminfo, dir + "/meminfo");
        if (!total.ok()) return total.status();
        node.mem_total_bytes = *total;
      }
      topology.numa_nodes.push_back(std::move(node));
    }
    std::sort(topology.numa_nodes.begin(), topology.numa_nodes.end(),
              [](const NumaNode& a, const NumaNode& b) { return a.id < b.id; });
  }
  topology.nics = PlaceClassDevices(root, "/sys/class/net");
  topology.hcas = PlaceClassDevices(root, "/sys/class/infiniband");
  topology.gpus = FindNvidiaGpus(root);
  return topology;
}

void FillPciTreePaths(const Root& root, Topology& topology) {
  std::string dir = root.Path("/sys/bus/pci/devices");
  for (std::vector<DevicePlacement>* list : {&topology.gpus, &topology.nics, &topology.hcas}) {
    for (DevicePlacement& d : *list) {
      if (d.pci_path.empty() && IsPciAddress(d.pci_address)) {
        d.pci_path = ResolvePciTreePath(dir + "/" + d.pci_address);
      }
    }
  }
}

Result<Topology> ReadTopology(const Root& root) {
  // A capture reads sysfs, so that its files are in it and read back alike.
  if (root.IsLive() && CurrentReadLog() == nullptr) {
    Result<Topology> hwloc = ReadHwlocTopology();
    if (hwloc.ok()) {
      FillPciTreePaths(root, *hwloc);
      return hwloc;
    }
  }
  return ReadSysfsTopology(root);
}

}  // namespace stallscope
