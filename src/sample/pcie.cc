// PCIe lane rates and the copy ceiling of a trained link (see pcie.h).
#include "sample/pcie.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace stallscope {

const char* PcieDeviceKindName(PcieDeviceKind kind) {
  switch (kind) {
    case PcieDeviceKind::kGpu:
      return "gpu";
    case PcieDeviceKind::kNic:
      return "nic";
    case PcieDeviceKind::kHca:
      return "hca";
  }
  return "device";
}

int PcieGeneration(double speed_gts) {
  static constexpr std::pair<double, int> kRates[] = {{2.5, 1}, {5, 2},  {8, 3},
                                                      {16, 4},  {32, 5}, {64, 6}};
  for (const auto& [rate, generation] : kRates) {
    if (std::fabs(speed_gts - rate) < 0.01) return generation;
  }
  return 0;
}

double PcieLaneBytesPerSecond(double speed_gts) {
  double efficiency = speed_gts <= 5.0   ? 8.0 / 10.0
                      : speed_gts < 64.0 ? 128.0 / 130.0
                                         : 242.0 / 256.0;
  return speed_gts * 1e9 * efficiency / 8.0;
}

std::optional<double> PcieCeilingBytesPerSecond(const PcieLinkEnd& end) {
  if (!end.speed_gts || !end.width || *end.width <= 0) return std::nullopt;
  return PcieLaneBytesPerSecond(*end.speed_gts) * *end.width;
}

PcieLinkEnd PcieExpected(const PcieLink& link) {
  PcieLinkEnd out = link.max;
  if (link.port_max.speed_gts && out.speed_gts)
    out.speed_gts = std::min(*out.speed_gts, *link.port_max.speed_gts);
  if (link.port_max.width && out.width) out.width = std::min(*out.width, *link.port_max.width);
  return out;
}

std::string PcieEndText(const PcieLinkEnd& end) {
  std::string speed;
  if (end.speed_gts) {
    int generation = PcieGeneration(*end.speed_gts);
    speed = generation ? fmt::format("{:g} GT/s (Gen{})", *end.speed_gts, generation)
                       : fmt::format("{:g} GT/s", *end.speed_gts);
  }
  if (end.width && !speed.empty()) return fmt::format("x{} {}", *end.width, speed);
  if (end.width) return fmt::format("x{}", *end.width);
  if (!speed.empty()) return speed;
  return "unknown";
}

}  // namespace stallscope
