// libFuzzer target: ParseDiskstats must return a value or a ParseError for any
// input, and the rate arithmetic must stay finite on whatever it parsed.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "probe/diskstats.h"
#include "sample/disk_rates.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  stallscope::Result<stallscope::DiskstatsSample> sample = stallscope::ParseDiskstats(text, "fuzz");
  if (!sample.ok() || sample->devices.empty()) return 0;
  // Every device against the first one, and the first against each: any two
  // sets of counters, including ones that fell or wrapped.
  const stallscope::DiskCounters& first = sample->devices.front();
  for (const stallscope::DiskCounters& device : sample->devices) {
    for (const stallscope::DiskRates& r : {stallscope::ComputeDiskRates(first, device, 1.5),
                                           stallscope::ComputeDiskRates(device, first, 1.5)}) {
      for (double value : {r.reads_per_second, r.read_await_ms, r.read_request_kib,
                           r.read_merge_percent, r.write_await_ms, r.await_ms, r.request_kib,
                           r.flush_await_ms, r.average_queue_size, r.util_percent}) {
        if (!std::isfinite(value) || value < 0) std::abort();
      }
      if (r.util_percent > 100 || r.read_merge_percent > 100) std::abort();
    }
  }
  return 0;
}
