// The hwloc half of probe/topology.h: fills Topology from the live machine.
// hwloc knows more than sysfs shows directly (it merges firmware tables and
// handles hosts whose sysfs lacks numa_node links), so it is preferred on a
// live root; built only when CMake finds hwloc (STALLSCOPE_HAVE_HWLOC).
#include "probe/topology.h"

#ifdef STALLSCOPE_HAVE_HWLOC
#include <hwloc.h>

#include <algorithm>
#include <cstdio>
#include <string>
#endif

namespace stallscope {

#ifdef STALLSCOPE_HAVE_HWLOC
namespace {

constexpr unsigned kNvidiaVendor = 0x10de;

// Owns one loaded hwloc topology for the length of a call.
class HwlocTopology {
 public:
  HwlocTopology() = default;
  HwlocTopology(const HwlocTopology&) = delete;
  HwlocTopology& operator=(const HwlocTopology&) = delete;
  ~HwlocTopology() {
    if (initialized_) hwloc_topology_destroy(topology_);
  }
  Status Load() {
    if (hwloc_topology_init(&topology_) != 0) return Status::Unavailable("hwloc_topology_init");
    initialized_ = true;
    // Disallowed CPUs and nodes too (a cgroup-limited job still sits on the
    // whole machine), and the PCI devices that matter: GPUs, NICs, HCAs.
    hwloc_topology_set_flags(topology_, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
    hwloc_topology_set_io_types_filter(topology_, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (hwloc_topology_load(topology_) != 0) return Status::Unavailable("hwloc_topology_load");
    return Status::Ok();
  }
  hwloc_topology_t get() const { return topology_; }

 private:
  hwloc_topology_t topology_ = nullptr;
  bool initialized_ = false;
};

// The NUMA node an I/O object is attached to, as sysfs's numa_node says it:
// hwloc hangs devices without affinity off the root, which is -1 there.
int NumaNodeOf(hwloc_topology_t topology, hwloc_obj_t io_object) {
  hwloc_obj_t ancestor = hwloc_get_non_io_ancestor_obj(topology, io_object);
  if (ancestor == nullptr || ancestor == hwloc_get_root_obj(topology)) return -1;
  if (ancestor->nodeset == nullptr || hwloc_bitmap_weight(ancestor->nodeset) != 1) return -1;
  return hwloc_bitmap_first(ancestor->nodeset);
}

std::string PciAddress(hwloc_obj_t pci) {
  char text[32];
  std::snprintf(text, sizeof text, "%04x:%02x:%02x.%01x", pci->attr->pcidev.domain & 0xffffu,
                pci->attr->pcidev.bus, pci->attr->pcidev.dev, pci->attr->pcidev.func);
  return text;
}

bool ByName(const DevicePlacement& a, const DevicePlacement& b) { return a.name < b.name; }

}  // namespace

Result<Topology> ReadHwlocTopology() {
  HwlocTopology hwloc;
  if (Status loaded = hwloc.Load(); !loaded.ok()) return loaded;
  hwloc_topology_t topology = hwloc.get();
  Topology result;
  result.source = "hwloc";

  int nodes = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_NUMANODE);
  for (int i = 0; i < nodes; ++i) {
    hwloc_obj_t object = hwloc_get_obj_by_type(topology, HWLOC_OBJ_NUMANODE, i);
    if (object == nullptr) continue;
    NumaNode node;
    node.id = static_cast<int>(object->os_index);
    if (object->cpuset != nullptr) {
      char cpulist[4096];
      if (hwloc_bitmap_list_snprintf(cpulist, sizeof cpulist, object->cpuset) >= 0) {
        node.cpulist = cpulist;
      }
      node.cpu_count = std::max(0, hwloc_bitmap_weight(object->cpuset));
    }
    node.mem_total_bytes = object->attr->numanode.local_memory;
    result.numa_nodes.push_back(std::move(node));
  }
  std::sort(result.numa_nodes.begin(), result.numa_nodes.end(),
            [](const NumaNode& a, const NumaNode& b) { return a.id < b.id; });

  for (hwloc_obj_t os = hwloc_get_next_osdev(topology, nullptr); os != nullptr;
       os = hwloc_get_next_osdev(topology, os)) {
    bool nic = os->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK;
    bool hca = os->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS;
    if ((!nic && !hca) || os->name == nullptr) continue;
    DevicePlacement placement;
    placement.name = os->name;
    for (hwloc_obj_t parent = os->parent; parent != nullptr; parent = parent->parent) {
      if (parent->type == HWLOC_OBJ_PCI_DEVICE) {
        placement.pci_address = PciAddress(parent);
        break;
      }
    }
    placement.numa_node = NumaNodeOf(topology, os);
    (nic ? result.nics : result.hcas).push_back(std::move(placement));
  }
  for (hwloc_obj_t pci = hwloc_get_next_pcidev(topology, nullptr); pci != nullptr;
       pci = hwloc_get_next_pcidev(topology, pci)) {
    unsigned class_id = pci->attr->pcidev.class_id;
    if (pci->attr->pcidev.vendor_id != kNvidiaVendor) continue;
    if (class_id != 0x0300 && class_id != 0x0302) continue;
    std::string address = PciAddress(pci);
    result.gpus.push_back({address, address, NumaNodeOf(topology, pci), ""});
  }
  std::sort(result.nics.begin(), result.nics.end(), ByName);
  std::sort(result.hcas.begin(), result.hcas.end(), ByName);
  std::sort(result.gpus.begin(), result.gpus.end(), ByName);
  return result;
}

#else

Result<Topology> ReadHwlocTopology() {
  return Status::Unavailable("hwloc: stallscope was built without hwloc");
}

#endif

}  // namespace stallscope
