// libFuzzer target: the sysfs PCI path parser and the path naming on any
// text. The input is two resolved paths on two lines; each that parses has a
// host bridge and a function, a device is X to itself, and the name of a
// pair is the same both ways.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string_view>

#include "sample/pci_path.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  size_t newline = text.find('\n');
  std::string_view first = text.substr(0, newline);
  std::string_view second = newline == std::string_view::npos ? first : text.substr(newline + 1);
  int numa = size > 0 ? static_cast<int>(data[0] % 4) - 1 : -1;
  std::optional<stallscope::PciPlace> a = stallscope::ParsePciPlace(first, numa);
  std::optional<stallscope::PciPlace> b = stallscope::ParsePciPlace(second, 0);
  for (const auto& place : {a, b}) {
    if (place && (place->host_bridge.empty() || place->functions.empty())) std::abort();
  }
  if (!a || !b) return 0;
  if (stallscope::NamePciPath(*a, *a, 2) != stallscope::PciPathKind::kSelf) std::abort();
  for (int nodes : {0, 1, 2}) {
    if (stallscope::NamePciPath(*a, *b, nodes) != stallscope::NamePciPath(*b, *a, nodes))
      std::abort();
  }
  (void)stallscope::PciPathKindName(stallscope::NamePciPath(*a, *b, 2));
  return 0;
}
