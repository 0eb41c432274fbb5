// Reading a PCIe link from sysfs under a Root: for a device at
// /sys/bus/pci/devices/<address>, its current_link_speed/current_link_width
// and max_link_speed/max_link_width, and the same maxima of the port above
// it (the parent directory on the device's resolved path, when that is a PCI
// function: a root port's parent is "pci0000:16" and has none). Every GPU,
// NIC and HCA the topology placed on PCI is read once; a GPU without the
// attributes is a note, a NIC without them (conventional PCI: virtio) is not.
//
// The parsers are pure and take every form kernels write: "16.0 GT/s PCIe"
// (5.x and later), "8 GT/s" and "2.5 GT/s" (4.x), "Unknown" / "Unknown
// speed" (nullopt). Stateless; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/file.h"
#include "core/status.h"
#include "sample/pcie.h"
#include "sample/topology.h"

namespace stallscope {

// "16.0 GT/s PCIe" -> 16; "2.5 GT/s" -> 2.5; anything else -> nullopt.
std::optional<double> ParseLinkSpeed(std::string_view text);
// "16\n" -> 16; "0" (link down) -> 0; not a number -> nullopt.
std::optional<int> ParseLinkWidth(std::string_view text);

// One device's link; NotFound naming the file when the device has no
// current_link_speed or current_link_width.
Result<PcieLink> ReadPcieLink(const Root& root, PcieDeviceKind kind, const std::string& name,
                              const std::string& pci_address);

// Every GPU, NIC and HCA of `topology` with a PCI address, each address once
// (an HCA and its netdev share a function: "mlx5_0/ib0"). A GPU whose link
// could not be read is a note in `notes`.
std::vector<PcieLink> ReadPcieLinks(const Root& root, const Topology& topology,
                                    std::vector<std::string>* notes);

}  // namespace stallscope
