// Taking a Snapshot of a host: every probe, two samples an interval apart.
//
// The counters that every later step needs (meminfo, vmstat, /proc/stat) are
// required: without them TakeSnapshot fails with the probe's error. Every
// other probe degrades: a missing or unreadable source becomes a note in
// Snapshot::notes and the rest goes on (btop's rule: degrade, don't die).
// Thread-compatible; it sleeps for the interval.
#pragma once

#include <string>
#include <vector>

#include "core/file.h"
#include "core/status.h"
#include "sample/snapshot.h"

namespace stallscope {

struct SnapshotOptions {
  double interval_seconds = 1.0;
};

// One moment of the moving counters; optional probes add notes on failure.
Result<HostSample> TakeHostSample(const Root& root, std::vector<std::string>* notes);

// The static facts, then two host samples interval_seconds apart, and the
// rates between them. On a fixture root the sleep still happens but the
// counters do not move.
Result<Snapshot> TakeSnapshot(const Root& root, const SnapshotOptions& options);

// The rates between two samples (pure): fills vm_rates, cpu_usage,
// disk_rates, net_rates and interval_seconds from snapshot.before/after.
void ComputeSnapshotRates(Snapshot& snapshot);

}  // namespace stallscope
