// A PCIe link as sysfs reports it: the speed and width the device trained at
// (current_link_speed / current_link_width) against what the device can do
// (max_link_*) and what the port above it can do (the upstream bridge's
// max_link_*), and the copy ceiling each allows. A GPU at x8 of x16, or at
// 8 GT/s (Gen3) in a 16 GT/s (Gen4) slot, copies host memory at half speed;
// nothing in a training log says so. Filled by probe/pcie_link.h, judged by
// analyze/pcie_rules.h. Plain data and arithmetic; thread-safe.
#pragma once

#include <optional>
#include <string>

namespace stallscope {

enum class PcieDeviceKind { kGpu, kNic, kHca };
const char* PcieDeviceKindName(PcieDeviceKind kind);  // "gpu", "nic", "hca"

struct PcieLinkEnd {
  std::optional<double> speed_gts;  // GT/s per lane; nullopt: "Unknown" or unreadable
  std::optional<int> width;         // lanes
};

struct PcieLink {
  PcieDeviceKind kind = PcieDeviceKind::kGpu;
  std::string name;          // "eth0", "mlx5_0"; for a GPU its PCI address
  std::string pci_address;   // "0000:17:00.0"
  PcieLinkEnd current;       // what the link trained at
  PcieLinkEnd max;           // what the device can do
  std::string port_address;  // the upstream port ("0000:16:01.0"); empty at a root port
  PcieLinkEnd port_max;      // what that port can do
};

// The PCIe generation of a lane rate: 2.5 -> 1, 5 -> 2, 8 -> 3, 16 -> 4,
// 32 -> 5, 64 -> 6; 0 for a rate that is none of them.
int PcieGeneration(double speed_gts);
// Payload bytes per second one lane carries at `speed_gts` after line
// encoding (8b/10b up to 5 GT/s, 128b/130b at 8-32 GT/s, FLIT at 64 GT/s
// taken as 242/256): 16 GT/s -> 1.97e9.
double PcieLaneBytesPerSecond(double speed_gts);
// The link's copy ceiling: lanes x the lane's bytes per second; nullopt
// without both figures.
std::optional<double> PcieCeilingBytesPerSecond(const PcieLinkEnd& end);
// What the link could train at: the lower of the device's and the port's
// maximum, figure by figure (the device's alone without a port).
PcieLinkEnd PcieExpected(const PcieLink& link);
// "x8 16 GT/s (Gen4)", "x16", "8 GT/s (Gen3)", "unknown".
std::string PcieEndText(const PcieLinkEnd& end);

}  // namespace stallscope
