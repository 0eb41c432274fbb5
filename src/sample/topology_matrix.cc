#include "sample/topology_matrix.h"

#include <algorithm>

namespace stallscope {
namespace {

// NVLinks from `a` to `b`: direct links, or, when both reach NVSwitches, the
// fewer of their switch links (every GPU on an NVSwitch fabric reaches every
// other at its full link count, which nvidia-smi prints as NV<n>).
int NvLinksBetween(const std::vector<GpuNvLinks>& links, const std::string& a,
                   const std::string& b) {
  int a_to_b = 0, b_to_a = 0, a_switch = 0, b_switch = 0;
  for (const GpuNvLinks& l : links) {
    if (l.gpu == a && l.peer == b) a_to_b += l.links;
    if (l.gpu == b && l.peer == a) b_to_a += l.links;
    if (l.peer_is_switch && l.gpu == a) a_switch += l.links;
    if (l.peer_is_switch && l.gpu == b) b_switch += l.links;
  }
  // One side may be unreadable (NVML answers per GPU): either side counts.
  int direct = std::max(a_to_b, b_to_a);
  return direct > 0 ? direct : std::min(a_switch, b_switch);
}

struct Placed {
  TopologyMatrix::Device device;
  PciPlace place;
};

void AddDevice(const DevicePlacement& p, bool gpu, std::vector<Placed>& placed,
               std::vector<std::string>& left_out) {
  std::optional<PciPlace> place = ParsePciPlace(p.pci_path, p.numa_node);
  if (!place) {
    left_out.push_back(p.name);
    return;
  }
  TopologyMatrix::Device d;
  d.name = p.name;
  d.pci_address = p.pci_address;
  d.numa_node = p.numa_node;
  d.gpu = gpu;
  placed.push_back({std::move(d), std::move(*place)});
}

// HCAs, then interfaces whose PCI function no HCA holds; an interface on an
// HCA's function is listed as that HCA's.
void AddNics(const Topology& t, std::vector<Placed>& placed, std::vector<std::string>& left_out) {
  size_t first_nic = placed.size();
  for (const DevicePlacement& hca : t.hcas) AddDevice(hca, false, placed, left_out);
  size_t hca_end = placed.size();
  for (size_t i = first_nic; i < hca_end; ++i) placed[i].device.rdma = true;
  for (const DevicePlacement& nic : t.nics) {
    auto holder =
        std::find_if(placed.begin() + first_nic, placed.begin() + hca_end, [&](const Placed& p) {
          return !nic.pci_address.empty() && p.device.pci_address == nic.pci_address;
        });
    if (holder != placed.begin() + hca_end) {
      holder->device.interfaces.push_back(nic.name);
      continue;
    }
    AddDevice(nic, false, placed, left_out);
  }
}

}  // namespace

std::string TopologyMatrix::Cell::Name() const {
  if (nvlinks > 0) return "NV" + std::to_string(nvlinks);
  return PciPathKindName(path);
}

TopologyMatrix BuildTopologyMatrix(const Topology& t) {
  TopologyMatrix m;
  std::vector<Placed> placed;
  std::vector<DevicePlacement> gpus = t.gpus;
  std::sort(gpus.begin(), gpus.end(),
            [](const DevicePlacement& a, const DevicePlacement& b) { return a.name < b.name; });
  for (const DevicePlacement& gpu : gpus) AddDevice(gpu, true, placed, m.left_out);
  m.gpu_count = placed.size();
  AddNics(t, placed, m.left_out);
  int numa_count = static_cast<int>(t.numa_nodes.size());
  size_t n = placed.size();
  m.cells.assign(n, std::vector<TopologyMatrix::Cell>(n));
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) {
      TopologyMatrix::Cell& c = m.cells[i][j];
      c.path =
          i == j ? PciPathKind::kSelf : NamePciPath(placed[i].place, placed[j].place, numa_count);
      if (i != j && i < m.gpu_count && j < m.gpu_count) {
        c.nvlinks = NvLinksBetween(t.nvlinks, placed[i].device.name, placed[j].device.name);
      }
    }
  }
  for (size_t i = 0; i < n; ++i) {
    bool gpu = i < m.gpu_count;
    size_t number = gpu ? i : i - m.gpu_count;
    placed[i].device.label = (gpu ? "GPU" : "NIC") + std::to_string(number);
    m.devices.push_back(std::move(placed[i].device));
  }
  // With an HCA present NCCL's net is IB and picks among HCAs only.
  bool any_rdma = std::any_of(m.devices.begin(), m.devices.end(),
                              [](const TopologyMatrix::Device& d) { return d.rdma; });
  for (size_t g = 0; g < m.gpu_count; ++g) {
    std::optional<size_t> best;
    for (size_t j = m.gpu_count; j < n; ++j) {
      if (any_rdma && !m.devices[j].rdma) continue;
      if (!best || m.cells[g][j].path < m.cells[g][*best].path) best = j;
    }
    m.closest_nic.push_back(best);
  }
  return m;
}

std::string TopologyDigest(const TopologyMatrix& m) {
  if (m.gpu_count == 0) return "-";
  // Distinct names, nearest path first (NV# before PIX .. SYS).
  auto distinct = [](std::vector<TopologyMatrix::Cell> cells) {
    std::sort(cells.begin(), cells.end(), [](const auto& a, const auto& b) {
      if ((a.nvlinks > 0) != (b.nvlinks > 0)) return a.nvlinks > 0;
      return a.nvlinks != b.nvlinks ? a.nvlinks > b.nvlinks : a.path < b.path;
    });
    std::string text, last;
    for (const TopologyMatrix::Cell& c : cells) {
      std::string name = c.Name();
      if (name == last) continue;
      text += (text.empty() ? "" : "/") + name;
      last = name;
    }
    return text;
  };
  std::vector<TopologyMatrix::Cell> between, closest;
  for (size_t g = 0; g < m.gpu_count; ++g) {
    for (size_t h = 0; h < m.gpu_count; ++h)
      if (g != h) between.push_back(m.cells[g][h]);
    if (g < m.closest_nic.size() && m.closest_nic[g])
      closest.push_back(m.cells[g][*m.closest_nic[g]]);
  }
  size_t nics = m.devices.size() - m.gpu_count;
  std::string text = std::to_string(m.gpu_count) + (m.gpu_count == 1 ? " GPU" : " GPUs");
  if (!between.empty()) text += " " + distinct(between);
  text += ", " + std::to_string(nics) + (nics == 1 ? " NIC" : " NICs");
  if (!closest.empty()) text += ", closest " + distinct(closest);
  return text;
}

std::optional<size_t> FindMatrixNic(const TopologyMatrix& m, const std::string& name) {
  for (size_t i = m.gpu_count; i < m.devices.size(); ++i) {
    const TopologyMatrix::Device& d = m.devices[i];
    if (d.name == name) return i;
    if (std::find(d.interfaces.begin(), d.interfaces.end(), name) != d.interfaces.end()) return i;
  }
  return std::nullopt;
}

}  // namespace stallscope
