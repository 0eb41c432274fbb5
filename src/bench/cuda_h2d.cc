// The pure parts of `bench h2d`: sizes, arithmetic, NUMA choice, verdict and
// the sysfs text it reads. See cuda_h2d.h.
#include "bench/cuda_h2d.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "core/file.h"
#include "core/text.h"

namespace stallscope {

Result<std::vector<uint64_t>> H2dSizes(uint64_t min_bytes, uint64_t max_bytes) {
  if (min_bytes == 0) return Status::InvalidArgument("--min-size: must be > 0");
  if (min_bytes > max_bytes)
    return Status::InvalidArgument(
        fmt::format("--min-size {} is above --max-size {}", min_bytes, max_bytes));
  std::vector<uint64_t> sizes;
  for (uint64_t size = min_bytes; size < max_bytes; size *= 4) {
    sizes.push_back(size);
    if (size > max_bytes / 4) break;
  }
  sizes.push_back(max_bytes);
  return sizes;
}

int CopiesFor(uint64_t size_bytes, uint64_t min_bytes, int min_copies) {
  if (size_bytes == 0) return std::max(min_copies, 1);
  uint64_t copies = (min_bytes + size_bytes - 1) / size_bytes;
  copies = std::max<uint64_t>(copies, static_cast<uint64_t>(std::max(min_copies, 1)));
  return static_cast<int>(std::min<uint64_t>(copies, 1 << 20));
}

double BytesPerSecond(uint64_t size_bytes, int copies, double seconds) {
  if (!(seconds > 0) || copies <= 0) return 0;
  return static_cast<double>(size_bytes) * copies / seconds;
}

NumaPlacement ChooseNumaNodes(std::optional<int> gpu_node, const std::vector<int>& memory_nodes) {
  NumaPlacement placement;
  if (memory_nodes.empty()) return placement;  // no NUMA information: unbound
  bool gpu_node_has_memory = gpu_node && std::find(memory_nodes.begin(), memory_nodes.end(),
                                                   *gpu_node) != memory_nodes.end();
  // A GPU without a node (numa_node -1, common in VMs) is compared against
  // the first node, the one the kernel starts allocations on.
  placement.local = gpu_node_has_memory ? *gpu_node : memory_nodes.front();
  for (int node : memory_nodes) {
    if (node != *placement.local) {
      placement.remote = node;
      break;
    }
  }
  return placement;
}

namespace {

const H2dSample* Find(const std::vector<H2dSample>& samples, uint64_t size, CopyDirection dir,
                      HostMemory memory, bool local) {
  for (const H2dSample& s : samples) {
    if (s.size_bytes == size && s.direction == dir && s.memory == memory && s.local == local &&
        s.bytes_per_second > 0)
      return &s;
  }
  return nullptr;
}

std::optional<double> Ratio(const H2dSample* num, const H2dSample* den) {
  if (num == nullptr || den == nullptr || !(den->bytes_per_second > 0)) return std::nullopt;
  return num->bytes_per_second / den->bytes_per_second;
}

}  // namespace

H2dVerdict JudgeH2d(const std::vector<H2dSample>& samples) {
  H2dVerdict v;
  uint64_t largest = 0;
  for (const H2dSample& s : samples) largest = std::max(largest, s.size_bytes);
  if (largest == 0) return v;
  auto h2d = CopyDirection::kHostToDevice, d2h = CopyDirection::kDeviceToHost;
  const H2dSample* pinned = Find(samples, largest, h2d, HostMemory::kPinned, true);
  v.pinned_over_pageable_h2d =
      Ratio(pinned, Find(samples, largest, h2d, HostMemory::kPageable, true));
  v.pinned_over_pageable_d2h = Ratio(Find(samples, largest, d2h, HostMemory::kPinned, true),
                                     Find(samples, largest, d2h, HostMemory::kPageable, true));
  v.remote_over_local_h2d = Ratio(Find(samples, largest, h2d, HostMemory::kPinned, false), pinned);

  if (v.pinned_over_pageable_h2d) {
    double r = *v.pinned_over_pageable_h2d;
    if (r >= kPinnedClearWinRatio) {
      v.lines.push_back(
          fmt::format("pinned host memory copies to the GPU {:.1f}x faster than pageable: use "
                      "DataLoader(pin_memory=True) and .to(device, non_blocking=True) (DMA needs "
                      "page-locked pages; pageable ones go through a staging copy)",
                      r));
    } else if (r >= kPinnedNoWinRatio) {
      v.lines.push_back(fmt::format(
          "pinned is {:.2f}x faster than pageable: pin_memory=True pays modestly here; keep the "
          "pinned total small (stallscope doctor: memory.pinned_excess)",
          r));
    } else {
      v.lines.push_back(fmt::format(
          "pageable copies are as fast as pinned here ({:.2f}x): pin_memory=True buys little copy "
          "speed on this host; it still lets non_blocking copies overlap compute, at the cost "
          "of page-locked RAM",
          r));
    }
  }
  if (v.remote_over_local_h2d) {
    double share = *v.remote_over_local_h2d;
    const H2dSample* remote = Find(samples, largest, h2d, HostMemory::kPinned, false);
    int local_node = pinned && pinned->numa_node ? *pinned->numa_node : 0;
    if (share < kNumaRemoteShare) {
      v.lines.push_back(fmt::format(
          "host memory on NUMA node {} reaches this GPU at {:.0f}% of node {}'s speed: run its "
          "loader on the GPU's node (numactl --cpunodebind={} --membind={} ...)",
          remote && remote->numa_node ? *remote->numa_node : -1, share * 100, local_node,
          local_node, local_node));
    } else {
      v.lines.push_back(fmt::format(
          "the other NUMA node costs little here ({:.0f}% of local): binding the loader to node "
          "{} is optional",
          share * 100, local_node));
    }
  }
  return v;
}

std::optional<std::vector<int>> ParseNodeList(std::string_view text) {
  text = Trim(text);
  std::set<int> nodes;
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view part = Trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (part.empty()) return std::nullopt;
    size_t dash = part.find('-');
    std::optional<uint64_t> first = ParseUint(part.substr(0, dash));
    std::optional<uint64_t> last =
        dash == std::string_view::npos ? first : ParseUint(part.substr(dash + 1));
    if (!first || !last || *first > *last || *last >= 4096) return std::nullopt;
    for (uint64_t n = *first; n <= *last; ++n) nodes.insert(static_cast<int>(n));
  }
  return std::vector<int>(nodes.begin(), nodes.end());
}

std::optional<std::string> CudaBusIdToSysfs(std::string_view bus_id) {
  bus_id = Trim(bus_id);
  // domain:bus:device.function, all hex; the domain 4 or 8 digits.
  size_t c1 = bus_id.find(':');
  size_t c2 = c1 == std::string_view::npos ? c1 : bus_id.find(':', c1 + 1);
  size_t dot = c2 == std::string_view::npos ? c2 : bus_id.find('.', c2 + 1);
  if (dot == std::string_view::npos) return std::nullopt;
  std::string_view domain = bus_id.substr(0, c1), bus = bus_id.substr(c1 + 1, c2 - c1 - 1),
                   device = bus_id.substr(c2 + 1, dot - c2 - 1), function = bus_id.substr(dot + 1);
  auto hex = [](std::string_view s, size_t min, size_t max) {
    if (s.size() < min || s.size() > max) return false;
    return std::all_of(s.begin(), s.end(),
                       [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; });
  };
  if (!hex(domain, 4, 8) || !hex(bus, 2, 2) || !hex(device, 2, 2) || !hex(function, 1, 1))
    return std::nullopt;
  // An 8-digit domain has leading zeros sysfs does not print.
  if (domain.size() > 4) {
    if (domain.substr(0, domain.size() - 4).find_first_not_of('0') != std::string_view::npos)
      return std::nullopt;
    domain = domain.substr(domain.size() - 4);
  }
  std::string out = fmt::format("{}:{}:{}.{}", domain, bus, device, function);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::optional<int> ReadPciNumaNode(const Root& root, std::string_view bus_id) {
  std::optional<std::string> address = CudaBusIdToSysfs(bus_id);
  if (!address) return std::nullopt;
  Result<std::string> text =
      ReadAttribute(root.Path("/sys/bus/pci/devices/" + *address + "/numa_node"));
  if (!text.ok()) return std::nullopt;
  std::optional<int64_t> node = ParseInt(*text);
  if (!node || *node < 0 || *node >= 4096) return std::nullopt;
  return static_cast<int>(*node);
}

std::vector<int> ReadMemoryNodes(const Root& root) {
  for (const char* file :
       {"/sys/devices/system/node/has_memory", "/sys/devices/system/node/online"}) {
    Result<std::string> text = ReadAttribute(root.Path(file));
    if (!text.ok()) continue;
    if (std::optional<std::vector<int>> nodes = ParseNodeList(*text); nodes && !nodes->empty())
      return *nodes;
  }
  return {};
}

void JudgeAgainstLink(const PcieLink& link, const std::vector<H2dSample>& samples, H2dVerdict& v) {
  std::optional<double> ceiling = PcieCeilingBytesPerSecond(link.current);
  uint64_t largest = 0;
  for (const H2dSample& s : samples) largest = std::max(largest, s.size_bytes);
  const H2dSample* pinned =
      Find(samples, largest, CopyDirection::kHostToDevice, HostMemory::kPinned, true);
  if (!ceiling || !pinned || largest == 0) return;
  v.pinned_h2d_over_link_ceiling = pinned->bytes_per_second / *ceiling;
  const PcieLinkEnd expected = PcieExpected(link);
  std::optional<double> possible = PcieCeilingBytesPerSecond(expected);
  std::string line = fmt::format(
      "pinned copies to the GPU reach {:.1f} GB/s, {:.0f}% of its PCIe link's {:.1f} GB/s "
      "ceiling ({})",
      pinned->bytes_per_second / 1e9, 100 * *v.pinned_h2d_over_link_ceiling, *ceiling / 1e9,
      PcieEndText(link.current));
  if (possible && *possible > *ceiling * 1.001) {
    line += fmt::format(
        "; the link trained below the {} its GPU and port can do ({:.1f} GB/s): the link caps "
        "these copies (stallscope doctor: io.pcie_degraded; lspci -vv -s {})",
        PcieEndText(expected), *possible / 1e9, link.pci_address);
  }
  v.lines.push_back(std::move(line));
}

}  // namespace stallscope
