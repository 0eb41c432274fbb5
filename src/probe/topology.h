// The host's NUMA topology and device placement (sample/topology.h).
//
// Two readers fill the same struct: the sysfs one takes a Root and is what
// the tests drive; the hwloc one (topology_hwloc.cc, built when CMake finds
// hwloc) reads the live machine. ReadTopology picks hwloc on a live root and
// falls back to sysfs when hwloc is missing or fails. Stateless; thread-safe
// (hwloc topologies are created and destroyed within a call).
#pragma once

#include <cstdint>
#include <string_view>

#include "core/file.h"
#include "core/status.h"
#include "sample/topology.h"

namespace stallscope {

// "0-15,32-47\n" -> 32 CPUs. Empty text (a memory-only node) is 0 CPUs.
Result<int> ParseCpuListCount(std::string_view text, std::string_view source);
// /sys/devices/system/node/nodeN/meminfo: "Node 0 MemTotal: 4417312 kB" -> bytes.
Result<uint64_t> ParseNodeMemTotal(std::string_view text, std::string_view source);
// "0000:17:00.0": domain:bus:device.function in lower-case hex.
bool IsPciAddress(std::string_view text);

// From /sys/devices/system/node, /sys/class/net, /sys/class/infiniband and
// /sys/bus/pci/devices under root. A host without NUMA support in its kernel
// has no node directory: numa_nodes is then empty.
Result<Topology> ReadSysfsTopology(const Root& root);
// Each device's pci_path from /sys/bus/pci/devices under root, where hwloc
// (which knows addresses, not sysfs paths) left it empty.
void FillPciTreePaths(const Root& root, Topology& topology);
// The live machine through hwloc; Unavailable when built without hwloc.
Result<Topology> ReadHwlocTopology();
// hwloc on a live root when it works, sysfs otherwise.
Result<Topology> ReadTopology(const Root& root);

}  // namespace stallscope
