// PCIe link attributes from sysfs (see pcie_link.h).
#include "probe/pcie_link.h"

#include <fmt/format.h>
#include <limits.h>
#include <stdlib.h>

#include <charconv>

#include "core/read_log.h"
#include "core/text.h"
#include "probe/topology.h"

namespace stallscope {
namespace {

std::optional<double> ReadSpeed(const std::string& path) {
  Result<std::string> text = ReadAttribute(path);
  return text.ok() ? ParseLinkSpeed(*text) : std::nullopt;
}

std::optional<int> ReadWidth(const std::string& path) {
  Result<std::string> text = ReadAttribute(path);
  return text.ok() ? ParseLinkWidth(*text) : std::nullopt;
}

PcieLinkEnd ReadMax(const std::string& dir) {
  return {ReadSpeed(dir + "/max_link_speed"), ReadWidth(dir + "/max_link_width")};
}

}  // namespace

std::optional<double> ParseLinkSpeed(std::string_view text) {
  text = Trim(text);
  size_t unit = text.find(" GT/s");
  if (unit == std::string_view::npos || unit == 0) return std::nullopt;
  std::string_view number = text.substr(0, unit);
  double value = 0;
  auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (ec != std::errc() || end != number.data() + number.size() || !(value > 0) || value > 1024)
    return std::nullopt;
  return value;
}

std::optional<int> ParseLinkWidth(std::string_view text) {
  text = Trim(text);
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < 0 ||
      value > 64)
    return std::nullopt;
  return value;
}

Result<PcieLink> ReadPcieLink(const Root& root, PcieDeviceKind kind, const std::string& name,
                              const std::string& pci_address) {
  const std::string dir = root.Path("/sys/bus/pci/devices/" + pci_address);
  PcieLink link;
  link.kind = kind;
  link.name = name;
  link.pci_address = pci_address;
  Result<std::string> speed = ReadAttribute(dir + "/current_link_speed");
  Result<std::string> width = ReadAttribute(dir + "/current_link_width");
  if (!speed.ok()) return speed.status();
  if (!width.ok()) return width.status();
  link.current = {ParseLinkSpeed(*speed), ParseLinkWidth(*width)};
  link.max = ReadMax(dir);
  char resolved[PATH_MAX];
  NoteLinksRead(dir);
  if (::realpath(dir.c_str(), resolved) != nullptr) {
    std::string_view path = resolved;
    size_t slash = path.rfind('/');
    if (slash != std::string_view::npos && slash > 0) {
      std::string_view parent = path.substr(0, slash);
      std::string_view parent_name = parent.substr(parent.rfind('/') + 1);
      if (IsPciAddress(parent_name)) {
        link.port_address = std::string(parent_name);
        link.port_max = ReadMax(std::string(parent));
      }
    }
  }
  return link;
}

std::vector<PcieLink> ReadPcieLinks(const Root& root, const Topology& topology,
                                    std::vector<std::string>* notes) {
  std::vector<PcieLink> links;
  auto add = [&](PcieDeviceKind kind, const DevicePlacement& device) {
    if (device.pci_address.empty()) return;
    for (PcieLink& seen : links) {
      if (seen.pci_address == device.pci_address) {
        seen.name += "/" + device.name;
        return;
      }
    }
    Result<PcieLink> link = ReadPcieLink(root, kind, device.name, device.pci_address);
    if (link.ok()) {
      links.push_back(std::move(*link));
    } else if (notes && kind == PcieDeviceKind::kGpu) {
      // A NIC without the attributes is conventional PCI (virtio in most
      // VMs): nothing to judge and nothing to say; a GPU is always PCIe.
      notes->push_back(fmt::format("pcie: {} {} ({}): no link figures to judge: {}",
                                   PcieDeviceKindName(kind), device.name, device.pci_address,
                                   link.status().message()));
    }
  };
  for (const DevicePlacement& gpu : topology.gpus) add(PcieDeviceKind::kGpu, gpu);
  for (const DevicePlacement& hca : topology.hcas) add(PcieDeviceKind::kHca, hca);
  for (const DevicePlacement& nic : topology.nics) add(PcieDeviceKind::kNic, nic);
  return links;
}

}  // namespace stallscope
