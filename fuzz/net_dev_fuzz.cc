// libFuzzer target: /proc/net/dev parsing, the PCI-address scan of a device
// path, and the rate arithmetic over whatever two parses yield.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "probe/net_dev.h"
#include "sample/net_rates.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  stallscope::Result<std::vector<stallscope::NetDevCounters>> dev =
      stallscope::ParseNetDev(text, "fuzz");
  (void)stallscope::PciAddressFromDevicePath(text);
  (void)stallscope::IsDockerBridgeName(text);
  if (dev.ok()) {
    // The same sample as before and after, and reversed halves, so both the
    // normal and the counters-went-backwards paths run.
    auto same = stallscope::ComputeNetRates(*dev, *dev, 1.0);
    (void)same;
    std::vector<stallscope::NetDevCounters> reversed(dev->rbegin(), dev->rend());
    auto mixed = stallscope::ComputeNetRates(reversed, *dev, 0.5);
    (void)mixed;
  }
  return 0;
}
