// libFuzzer target: the sysfs link-speed and link-width parsers on any text;
// a speed is positive and at most 1024 GT/s, a width 0..64, and the ceiling
// and the text of what they give never fail.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "probe/pcie_link.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::optional<double> speed = stallscope::ParseLinkSpeed(text);
  std::optional<int> width = stallscope::ParseLinkWidth(text);
  if (speed && !(*speed > 0 && *speed <= 1024)) std::abort();
  if (width && (*width < 0 || *width > 64)) std::abort();
  stallscope::PcieLinkEnd end{speed, width};
  if (std::optional<double> ceiling = stallscope::PcieCeilingBytesPerSecond(end);
      ceiling && !(*ceiling > 0))
    std::abort();
  (void)stallscope::PcieEndText(end);
  return 0;
}
