#include "sample/disk_rates.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <unordered_map>

#include "sample/counter_delta.h"

namespace stallscope {
namespace {

// A 64-bit counter that fell (a reset the device check did not catch) adds
// nothing, as in iostat.
double CountDelta(uint64_t before, uint64_t after) {
  return static_cast<double>(*CounterDelta(before, after, OnReset::kZero));
}

// The kernel prints millisecond fields with %u: they wrap at 2^32. A value
// above 32 bits cannot have come from such a field, so a fall there is a reset.
double MillisecondsDelta(uint64_t before, uint64_t after) {
  return static_cast<double>(*CounterDelta(before, after, OnReset::kWrap32));
}

uint64_t TotalRequests(const DiskCounters& c) {
  return c.reads_completed + c.writes_completed + c.discards_completed + c.flushes_completed;
}

// iostat's test for a device that disappeared and came back between samples.
bool LooksReset(const DiskCounters& before, const DiskCounters& after) {
  auto fell_or_zero = [](uint64_t b, uint64_t a) { return b == 0 || a < b; };
  return TotalRequests(after) < TotalRequests(before) &&
         fell_or_zero(before.sectors_read, after.sectors_read) &&
         fell_or_zero(before.sectors_written, after.sectors_written) &&
         fell_or_zero(before.sectors_discarded, after.sectors_discarded);
}

double Ratio(double numerator, double denominator) {
  return denominator > 0 ? numerator / denominator : 0.0;
}

// kiB from 512-byte sectors: iostat divides sectors by 2.
constexpr double kSectorsPerKib = 1024.0 / kDiskstatsSectorBytes;

}  // namespace

DiskRates ComputeDiskRates(const DiskCounters& before_in, const DiskCounters& after,
                           double interval_seconds) {
  static const DiskCounters kZero;
  const DiskCounters& before = LooksReset(before_in, after) ? kZero : before_in;

  DiskRates rates;
  rates.name = after.name;
  rates.interval_seconds = interval_seconds;
  rates.has_discard = after.has_discard;
  rates.has_flush = after.has_flush;

  const double reads = CountDelta(before.reads_completed, after.reads_completed);
  const double reads_merged = CountDelta(before.reads_merged, after.reads_merged);
  const double sectors_read = CountDelta(before.sectors_read, after.sectors_read);
  const double read_ms = MillisecondsDelta(before.read_ms, after.read_ms);
  const double writes = CountDelta(before.writes_completed, after.writes_completed);
  const double writes_merged = CountDelta(before.writes_merged, after.writes_merged);
  const double sectors_written = CountDelta(before.sectors_written, after.sectors_written);
  const double write_ms = MillisecondsDelta(before.write_ms, after.write_ms);
  const double discards = CountDelta(before.discards_completed, after.discards_completed);
  const double discards_merged = CountDelta(before.discards_merged, after.discards_merged);
  const double sectors_discarded = CountDelta(before.sectors_discarded, after.sectors_discarded);
  const double discard_ms = MillisecondsDelta(before.discard_ms, after.discard_ms);
  const double flushes = CountDelta(before.flushes_completed, after.flushes_completed);
  const double flush_ms = MillisecondsDelta(before.flush_ms, after.flush_ms);
  const double io_ms = MillisecondsDelta(before.io_ms, after.io_ms);
  const double weighted_io_ms = MillisecondsDelta(before.weighted_io_ms, after.weighted_io_ms);

  // Per request: independent of the interval.
  rates.read_merge_percent = 100.0 * Ratio(reads_merged, reads_merged + reads);
  rates.read_await_ms = Ratio(read_ms, reads);
  rates.read_request_kib = Ratio(sectors_read, reads) / kSectorsPerKib;
  rates.write_merge_percent = 100.0 * Ratio(writes_merged, writes_merged + writes);
  rates.write_await_ms = Ratio(write_ms, writes);
  rates.write_request_kib = Ratio(sectors_written, writes) / kSectorsPerKib;
  rates.discard_merge_percent = 100.0 * Ratio(discards_merged, discards_merged + discards);
  rates.discard_await_ms = Ratio(discard_ms, discards);
  rates.discard_request_kib = Ratio(sectors_discarded, discards) / kSectorsPerKib;
  rates.flush_await_ms = Ratio(flush_ms, flushes);
  // Flushes are left out of await and areq-sz: iostat counts the requests that
  // caused them as writes already.
  const double requests = reads + writes + discards;
  rates.await_ms = Ratio(read_ms + write_ms + discard_ms, requests);
  rates.request_kib =
      Ratio(sectors_read + sectors_written + sectors_discarded, requests) / kSectorsPerKib;

  if (!(interval_seconds > 0) || !std::isfinite(interval_seconds)) return rates;
  const double s = interval_seconds;
  rates.reads_per_second = reads / s;
  rates.read_kib_per_second = sectors_read / s / kSectorsPerKib;
  rates.read_merges_per_second = reads_merged / s;
  rates.writes_per_second = writes / s;
  rates.write_kib_per_second = sectors_written / s / kSectorsPerKib;
  rates.write_merges_per_second = writes_merged / s;
  rates.discards_per_second = discards / s;
  rates.discard_kib_per_second = sectors_discarded / s / kSectorsPerKib;
  rates.discard_merges_per_second = discards_merged / s;
  rates.flushes_per_second = flushes / s;
  rates.average_queue_size = weighted_io_ms / s / 1000.0;
  rates.util_percent = std::min(100.0, io_ms / (s * 1000.0) * 100.0);
  return rates;
}

std::vector<DiskRates> ComputeAllDiskRates(const DiskstatsSample& before,
                                           const DiskstatsSample& after, double interval_seconds) {
  std::unordered_map<std::string, const DiskCounters*> by_name;
  for (const DiskCounters& device : before.devices) by_name.emplace(device.name, &device);
  std::vector<DiskRates> out;
  out.reserve(after.devices.size());
  for (const DiskCounters& device : after.devices) {
    auto it = by_name.find(device.name);
    if (it == by_name.end()) continue;
    const DiskCounters& old = *it->second;
    if (old.major != device.major || old.minor != device.minor) continue;
    out.push_back(ComputeDiskRates(old, device, interval_seconds));
  }
  return out;
}

}  // namespace stallscope
