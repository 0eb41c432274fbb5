#include "render/topology_matrix.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace stallscope {
namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kLegend =
    "  Legend:\n"
    "    X    = Self\n"
    "    SYS  = through PCIe and the link between NUMA nodes (QPI/UPI, Infinity Fabric)\n"
    "    NODE = through PCIe and between PCIe host bridges of one NUMA node\n"
    "    PHB  = through PCIe and a PCIe host bridge (the CPU)\n"
    "    PXB  = through several PCIe switches, not a host bridge\n"
    "    PIX  = through at most one PCIe switch\n"
    "    NV#  = through # NVLinks\n";

std::string Names(const TopologyMatrix::Device& d) {
  std::string text = d.name;
  if (!d.interfaces.empty()) {
    text += " (";
    for (size_t i = 0; i < d.interfaces.size(); ++i) text += (i ? ", " : "") + d.interfaces[i];
    text += ")";
  }
  return text;
}

}  // namespace

std::string RenderTopologyMatrixText(const TopologyMatrix& m) {
  if (m.gpu_count == 0) return "";
  std::string out = "  paths (as nvidia-smi topo -m)\n  " + std::string(6, ' ');
  for (const TopologyMatrix::Device& d : m.devices) out += fmt::format("{:<6}", d.label);
  out += "NUMA\n";
  for (size_t i = 0; i < m.devices.size(); ++i) {
    out += fmt::format("  {:<6}", m.devices[i].label);
    for (const TopologyMatrix::Cell& c : m.cells[i]) out += fmt::format("{:<6}", c.Name());
    int node = m.devices[i].numa_node;
    out += (node < 0 ? std::string("N/A") : std::to_string(node)) + "\n";
  }
  out += kLegend;
  out += "  Devices:\n";
  for (const TopologyMatrix::Device& d : m.devices) {
    out += fmt::format("    {}: {}{}\n", d.label, Names(d), d.gpu ? "" : d.rdma ? " RDMA" : "");
  }
  for (size_t g = 0; g < m.gpu_count && g < m.closest_nic.size(); ++g) {
    if (!m.closest_nic[g]) continue;
    const TopologyMatrix::Device& nic = m.devices[*m.closest_nic[g]];
    out += fmt::format("  closest NIC of {}: {} {} ({})\n", m.devices[g].label, nic.label, nic.name,
                       m.cells[g][*m.closest_nic[g]].Name());
  }
  if (!m.left_out.empty()) {
    out += "  not in the matrix (no place in the PCI tree):";
    for (const std::string& name : m.left_out) out += " " + name;
    out += "\n";
  }
  return out;
}

Json TopologyMatrixToJson(const TopologyMatrix& m) {
  Json devices = Json::array();
  for (size_t i = 0; i < m.devices.size(); ++i) {
    const TopologyMatrix::Device& d = m.devices[i];
    Json paths = Json::object();
    for (size_t j = 0; j < m.devices.size(); ++j) {
      if (j != i) paths[m.devices[j].label] = m.cells[i][j].Name();
    }
    Json one = {{"label", d.label},
                {"kind", d.gpu    ? "gpu"
                         : d.rdma ? "hca"
                                  : "nic"},
                {"name", d.name},
                {"pci_address", d.pci_address},
                {"numa_node", d.numa_node},
                {"interfaces", d.interfaces},
                {"paths", paths}};
    if (i < m.gpu_count && i < m.closest_nic.size() && m.closest_nic[i]) {
      one["closest_nic"] = m.devices[*m.closest_nic[i]].label;
      one["closest_nic_path"] = m.cells[i][*m.closest_nic[i]].Name();
    }
    devices.push_back(std::move(one));
  }
  return {{"devices", devices}, {"left_out", m.left_out}};
}

}  // namespace stallscope
