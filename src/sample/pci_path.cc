#include "sample/pci_path.h"

#include <algorithm>

namespace stallscope {
namespace {

bool IsPciFunction(std::string_view text) {
  // dddd:bb:dd.f
  if (text.size() != 12 || text[4] != ':' || text[7] != ':' || text[10] != '.') return false;
  return std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == ':' || c == '.';
  });
}

bool IsHostBridge(std::string_view text) {
  // pcidddd:bb
  return text.size() == 10 && text.substr(0, 3) == "pci" && text[7] == ':';
}

std::vector<std::string_view> Components(std::string_view path) {
  std::vector<std::string_view> parts;
  while (!path.empty()) {
    size_t slash = path.find('/');
    std::string_view part = path.substr(0, slash);
    if (!part.empty()) parts.push_back(part);
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return parts;
}

}  // namespace

const char* PciPathKindName(PciPathKind kind) {
  switch (kind) {
    case PciPathKind::kSelf:
      return "X";
    case PciPathKind::kPix:
      return "PIX";
    case PciPathKind::kPxb:
      return "PXB";
    case PciPathKind::kPhb:
      return "PHB";
    case PciPathKind::kNode:
      return "NODE";
    case PciPathKind::kSys:
      return "SYS";
  }
  return "SYS";
}

std::optional<PciPlace> ParsePciPlace(std::string_view resolved_path, int numa_node) {
  PciPlace place;
  place.numa_node = numa_node;
  for (std::string_view part : Components(resolved_path)) {
    if (place.host_bridge.empty()) {
      if (IsHostBridge(part)) place.host_bridge = std::string(part);
      continue;
    }
    if (!IsPciFunction(part)) break;
    place.functions.emplace_back(part);
  }
  if (place.host_bridge.empty() || place.functions.empty()) return std::nullopt;
  return place;
}

PciPathKind NamePciPath(const PciPlace& a, const PciPlace& b, int numa_node_count) {
  if (a.host_bridge != b.host_bridge) {
    int node_a = a.numa_node, node_b = b.numa_node;
    if (numa_node_count <= 1) {
      node_a = std::max(node_a, 0);
      node_b = std::max(node_b, 0);
    }
    return node_a >= 0 && node_a == node_b ? PciPathKind::kNode : PciPathKind::kSys;
  }
  size_t common = 0;
  while (common < a.functions.size() && common < b.functions.size() &&
         a.functions[common] == b.functions[common])
    ++common;
  if (common == a.functions.size() && common == b.functions.size()) return PciPathKind::kSelf;
  // No common root port: the path turns in the host bridge.
  if (common == 0) return PciPathKind::kPhb;
  // A switch shows in sysfs as its upstream port with a downstream port per
  // slot: two devices in one switch (or two functions of one device) are at
  // most two levels below what they share. Deeper means a second switch.
  bool one_switch = a.functions.size() - common <= 2 && b.functions.size() - common <= 2;
  return one_switch ? PciPathKind::kPix : PciPathKind::kPxb;
}

}  // namespace stallscope
