#include "analyze/host/host_io_rules.h"

#include <fmt/format.h>

#include "analyze/run/rules.h"

namespace stallscope {

FindingsWithNotes CheckHostDisks(const std::vector<DiskRates>& rates,
                                 const std::vector<BlockDevice>& devices, double window_seconds) {
  std::vector<Finding> findings;
  for (const DiskRates& r : rates) {
    const BlockDevice* device = nullptr;
    for (const BlockDevice& d : devices) {
      if (d.name == r.name) device = &d;
    }
    if (!device || device->is_partition || device->is_virtual) continue;
    if (r.util_percent < kDiskSaturatedUtilPercent || r.await_ms < kDiskSaturatedAwaitMs) continue;
    Finding f;
    f.id = "io.device_saturated";
    f.layer = Layer::kIo;
    f.severity = Severity::kWarning;
    f.summary = fmt::format(
        "disk {} was {:.0f}% busy with {:.0f} ms await over the {:.1f} s window: it serves "
        "requests as fast as it can and they queue",
        r.name, r.util_percent, r.await_ms, window_seconds);
    f.evidence = {{"device", r.name},
                  {"util_percent", r.util_percent},
                  {"await_ms", r.await_ms},
                  {"reads_per_s", r.reads_per_second},
                  {"read_kib_per_s", r.read_kib_per_second},
                  {"writes_per_s", r.writes_per_second},
                  {"write_kib_per_s", r.write_kib_per_second},
                  {"average_queue_size", r.average_queue_size},
                  {"window_seconds", window_seconds}};
    if (device->rotational) f.evidence.push_back({"rotational", *device->rotational});
    f.next = fmt::format(
        "iostat -x {} 1 for a minute: sustained, or a burst (a checkpoint write)? then "
        "`stallscope run --data DATASET -- CMD` to see whether the job's steps wait for it",
        r.name);
    findings.push_back(std::move(f));
  }
  return FindingsWithNotes{std::move(findings), {}};
}

}  // namespace stallscope
