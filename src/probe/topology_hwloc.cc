// The hwloc half of probe/topology.h: fills Topology from the live machine.
// hwloc knows more than sysfs shows directly (it merges firmware tables and
// handles hosts whose sysfs lacks numa_node links), so it is preferred on a
// live root; built only when CMake finds hwloc's header (STALLSCOPE_HAVE_HWLOC).
// The library is opened on first use (probe/hwloc_api.h): where it cannot
// be, this reader is Unavailable and ReadTopology reads sysfs.
#include "probe/topology.h"

#ifdef STALLSCOPE_HAVE_HWLOC
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "probe/hwloc_api.h"
#endif

namespace stallscope {

#ifdef STALLSCOPE_HAVE_HWLOC
namespace {

constexpr unsigned kNvidiaVendor = 0x10de;

// Owns one loaded hwloc topology for the length of a call.
class HwlocTopology {
 public:
  explicit HwlocTopology(const HwlocApi& api) : api_(api) {}
  HwlocTopology(const HwlocTopology&) = delete;
  HwlocTopology& operator=(const HwlocTopology&) = delete;
  ~HwlocTopology() {
    if (initialized_) api_.hwloc_topology_destroy(topology_);
  }
  Status Load() {
    if (api_.hwloc_topology_init(&topology_) != 0) {
      return Status::Unavailable("hwloc_topology_init");
    }
    initialized_ = true;
    // Disallowed CPUs and nodes too (a cgroup-limited job still sits on the
    // whole machine), and the PCI devices that matter: GPUs, NICs, HCAs.
    api_.hwloc_topology_set_flags(topology_, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
    api_.hwloc_topology_set_io_types_filter(topology_, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (api_.hwloc_topology_load(topology_) != 0) {
      return Status::Unavailable("hwloc_topology_load");
    }
    return Status::Ok();
  }

  // The objects of a type, in hwloc's order (what hwloc's inline
  // hwloc_get_obj_by_type and hwloc_get_next_osdev walk, through the table).
  std::vector<hwloc_obj_t> ObjectsOf(hwloc_obj_type_t type) const {
    std::vector<hwloc_obj_t> out;
    const int depth = api_.hwloc_get_type_depth(topology_, type);
    if (depth == HWLOC_TYPE_DEPTH_UNKNOWN || depth == HWLOC_TYPE_DEPTH_MULTIPLE) return out;
    const unsigned n = api_.hwloc_get_nbobjs_by_depth(topology_, depth);
    for (unsigned i = 0; i < n; ++i) {
      if (hwloc_obj_t o = api_.hwloc_get_obj_by_depth(topology_, depth, i)) out.push_back(o);
    }
    return out;
  }

  // The NUMA node an I/O object is attached to, as sysfs's numa_node says
  // it: hwloc hangs devices without affinity off the root, which is -1 there.
  int NumaNodeOf(hwloc_obj_t io_object) const {
    hwloc_obj_t ancestor = io_object;  // the first ancestor with CPUs
    while (ancestor != nullptr && ancestor->cpuset == nullptr) ancestor = ancestor->parent;
    if (ancestor == nullptr || ancestor == api_.hwloc_get_obj_by_depth(topology_, 0, 0)) {
      return -1;
    }
    if (ancestor->nodeset == nullptr || api_.hwloc_bitmap_weight(ancestor->nodeset) != 1) {
      return -1;
    }
    return api_.hwloc_bitmap_first(ancestor->nodeset);
  }

 private:
  const HwlocApi& api_;
  hwloc_topology_t topology_ = nullptr;
  bool initialized_ = false;
};

std::string PciAddress(hwloc_obj_t pci) {
  char text[32];
  std::snprintf(text, sizeof text, "%04x:%02x:%02x.%01x", pci->attr->pcidev.domain & 0xffffu,
                pci->attr->pcidev.bus, pci->attr->pcidev.dev, pci->attr->pcidev.func);
  return text;
}

bool ByName(const DevicePlacement& a, const DevicePlacement& b) { return a.name < b.name; }

}  // namespace

Result<Topology> ReadHwlocTopology() {
  std::string why;
  const HwlocApi* api = Hwloc(why);
  if (api == nullptr) return Status::Unavailable("hwloc: " + why);
  HwlocTopology hwloc(*api);
  if (Status loaded = hwloc.Load(); !loaded.ok()) return loaded;
  Topology result;
  result.source = "hwloc";

  for (hwloc_obj_t object : hwloc.ObjectsOf(HWLOC_OBJ_NUMANODE)) {
    NumaNode node;
    node.id = static_cast<int>(object->os_index);
    if (object->cpuset != nullptr) {
      char cpulist[4096];
      if (api->hwloc_bitmap_list_snprintf(cpulist, sizeof cpulist, object->cpuset) >= 0) {
        node.cpulist = cpulist;
      }
      node.cpu_count = std::max(0, api->hwloc_bitmap_weight(object->cpuset));
    }
    node.mem_total_bytes = object->attr->numanode.local_memory;
    result.numa_nodes.push_back(std::move(node));
  }
  std::sort(result.numa_nodes.begin(), result.numa_nodes.end(),
            [](const NumaNode& a, const NumaNode& b) { return a.id < b.id; });

  for (hwloc_obj_t os : hwloc.ObjectsOf(HWLOC_OBJ_OS_DEVICE)) {
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
    placement.numa_node = hwloc.NumaNodeOf(os);
    (nic ? result.nics : result.hcas).push_back(std::move(placement));
  }
  for (hwloc_obj_t pci : hwloc.ObjectsOf(HWLOC_OBJ_PCI_DEVICE)) {
    unsigned class_id = pci->attr->pcidev.class_id;
    if (pci->attr->pcidev.vendor_id != kNvidiaVendor) continue;
    if (class_id != 0x0300 && class_id != 0x0302) continue;
    std::string address = PciAddress(pci);
    result.gpus.push_back({address, address, hwloc.NumaNodeOf(pci), ""});
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
