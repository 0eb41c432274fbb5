#include "analyze/host/nic_placement_rules.h"

#include <fmt/format.h>

#include <algorithm>

#include "analyze/host/network_rules.h"
#include "sample/topology_matrix.h"

namespace stallscope {
namespace {

struct UsedNics {
  std::vector<size_t> devices;  // indices in the matrix
  std::string source;           // where the list came from
};

bool IbDisabled(const TrainingEnvironment& env) {
  std::optional<std::string_view> v = env.Get("NCCL_IB_DISABLE");
  return v && !v->empty() && *v != "0";
}

// The NICs of `m` an NCCL list variable selects: HCAs for NCCL_IB_HCA,
// the others (by any of their interface names) for NCCL_SOCKET_IFNAME.
std::vector<size_t> SelectedBy(const TopologyMatrix& m, std::string_view value, bool rdma) {
  InterfaceList list = ParseInterfaceList(value);
  std::vector<size_t> out;
  for (size_t i = m.gpu_count; i < m.devices.size(); ++i) {
    const TopologyMatrix::Device& d = m.devices[i];
    if (rdma && !d.rdma) continue;
    // An HCA by its own name; for sockets, each interface on the function
    // (an HCA's netdevs included) is usable on its own.
    std::vector<std::string> names;
    if (!rdma) names = d.interfaces;
    if (rdma || !d.rdma) names.push_back(d.name);
    bool selected = std::any_of(names.begin(), names.end(), [&](const std::string& n) {
      return ListSelects(list, n, std::nullopt);
    });
    if (selected) out.push_back(i);
  }
  return out;
}

UsedNics FindUsedNics(const TopologyMatrix& m, const NicPlacementInputs& in) {
  UsedNics used;
  for (const std::string& name : in.nccl_log_nics) {
    std::optional<size_t> i = FindMatrixNic(m, name);
    if (i && std::find(used.devices.begin(), used.devices.end(), *i) == used.devices.end())
      used.devices.push_back(*i);
  }
  if (!used.devices.empty()) {
    used.source = in.nccl_log_name.empty() ? "the NCCL log" : in.nccl_log_name;
    return used;
  }
  bool any_rdma = std::any_of(m.devices.begin(), m.devices.end(),
                              [](const TopologyMatrix::Device& d) { return d.rdma; });
  const TrainingEnvironment& env = in.environment;
  if (any_rdma && !IbDisabled(env)) {
    if (auto v = env.Get("NCCL_IB_HCA"); v && !v->empty()) {
      used.devices = SelectedBy(m, *v, true);
      used.source = "NCCL_IB_HCA=" + std::string(*v);
    }
  } else if (auto v = env.Get("NCCL_SOCKET_IFNAME"); v && !v->empty()) {
    used.devices = SelectedBy(m, *v, false);
    used.source = "NCCL_SOCKET_IFNAME=" + std::string(*v);
  }
  return used;
}

// The closest of `candidates` to GPU g; nullopt when there is none.
std::optional<size_t> ClosestOf(const TopologyMatrix& m, size_t g,
                                const std::vector<size_t>& candidates) {
  std::optional<size_t> best;
  for (size_t j : candidates) {
    if (!best || m.cells[g][j].path < m.cells[g][*best].path) best = j;
  }
  return best;
}

}  // namespace

std::optional<Finding> CheckNicFarFromGpu(const NicPlacementInputs& in) {
  TopologyMatrix m = BuildTopologyMatrix(in.topology);
  if (m.gpu_count == 0) return std::nullopt;
  UsedNics used = FindUsedNics(m, in);
  std::vector<std::string> far, across;
  std::vector<Evidence> evidence;
  for (size_t g = 0; g < m.gpu_count; ++g) {
    if (!m.closest_nic[g]) continue;
    size_t closest = *m.closest_nic[g];
    PciPathKind best = m.cells[g][closest].path;
    std::optional<size_t> through = used.source.empty() ? closest : ClosestOf(m, g, used.devices);
    const TopologyMatrix::Device& gpu = m.devices[g];
    if (through && m.cells[g][*through].path > best) {
      const TopologyMatrix::Device& nic = m.devices[*through];
      far.push_back(fmt::format("{} ({}) uses {} ({}) while {} is {}", gpu.label, gpu.name,
                                nic.name, m.cells[g][*through].Name(), m.devices[closest].name,
                                m.cells[g][closest].Name()));
      evidence.push_back({gpu.label + "_nic", nic.name});
      evidence.push_back({gpu.label + "_nic_path", m.cells[g][*through].Name()});
      evidence.push_back({gpu.label + "_closest_nic", m.devices[closest].name});
      evidence.push_back({gpu.label + "_closest_nic_path", m.cells[g][closest].Name()});
    } else if (best == PciPathKind::kSys && m.devices[closest].rdma) {
      across.push_back(fmt::format("{} ({})", gpu.label, gpu.name));
      evidence.push_back({gpu.label + "_closest_nic", m.devices[closest].name});
      evidence.push_back({gpu.label + "_closest_nic_path", "SYS"});
    }
  }
  if (far.empty() && across.empty()) return std::nullopt;
  Finding f;
  f.id = "network.nic_far_from_gpu";
  f.layer = Layer::kNetwork;
  f.severity = Severity::kWarning;
  std::string text;
  if (!far.empty()) {
    text = fmt::format("{} GPU(s) talk through a NIC further than their closest ({}): {}",
                       far.size(), used.source, fmt::join(far, "; "));
  }
  if (!across.empty()) {
    if (!text.empty()) text += "; ";
    text += fmt::format(
        "the closest RDMA NIC of {} is across the link between sockets (SYS): NCCL turns "
        "GPUDirect RDMA off there and stages every transfer through host memory",
        fmt::join(across, ", "));
  }
  f.summary = text;
  if (!used.source.empty()) evidence.insert(evidence.begin(), {"nics_from", used.source});
  f.evidence = std::move(evidence);
  f.next = far.empty()
               ? "stallscope snapshot (the path matrix): put the HCA in a slot of the GPUs' "
                 "socket, or keep the job on GPUs near it; NCCL_DEBUG=INFO shows 'GPU Direct "
                 "RDMA Disabled' per GPU/NIC pair"
               : "stallscope snapshot (the path matrix): let NCCL pair each GPU with its closest "
                 "NIC (list every rail in NCCL_IB_HCA / NCCL_SOCKET_IFNAME, or unset it), then "
                 "check the 'NET/IB : Using' line of NCCL_DEBUG=INFO";
  return f;
}

}  // namespace stallscope
