// libFuzzer target: the `ethtool -S` parser on any text, then the counter
// classification and sums over what it gives; a parse never keeps a
// counter without a name, and the sums never fail.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "probe/ethtool_stats.h"
#include "sample/nic_stats.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  stallscope::Result<stallscope::NicStats> stats = stallscope::ParseEthtoolStats(text, "fuzz");
  if (!stats.ok()) return 0;
  for (const stallscope::NicCounter& c : stats->counters) {
    if (c.name.empty()) std::abort();
    (void)stallscope::NicCounterKindName(stallscope::ClassifyNicCounter(c.name));
  }
  stallscope::NicCongestion sums = stallscope::SummarizeNicStats(*stats);
  stallscope::NicCongestion growth = stallscope::NicCongestionGrowth(sums, sums);
  if (growth.pause_rx != 0 || growth.buffer_drops != 0) std::abort();
  return 0;
}
