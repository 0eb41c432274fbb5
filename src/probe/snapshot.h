// Taking a Snapshot of a host: every probe, two samples an interval apart.
//
// The counters that every later step needs (meminfo, vmstat, /proc/stat) are
// required: without them TakeSnapshot fails with the probe's error. Every
// other probe degrades: a missing or unreadable source becomes a note in
// Snapshot::notes and the rest goes on (btop's rule: degrade, don't die).
// Thread-compatible; it sleeps for the interval.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/file.h"
#include "core/status.h"
#include "sample/snapshot.h"

namespace stallscope {

// A capture read back (capture/capture_reader.h): the tree its first sample
// came from, the node's clock at both samples and its time; no wait.
struct SnapshotReplay {
  Root first_sample_root;
  double before_monotonic_seconds = 0;
  double after_monotonic_seconds = 0;
  std::string time_utc;
  std::vector<std::string> notes;  // where the capture came from, what it lacks
  // What the node's own snapshot noted ("kernel log: ... permission denied"):
  // each one whose source the read-back does not note itself is added as
  // "on the node: ...", so a probe that failed there still says so.
  std::vector<std::string> node_notes;
};

struct SnapshotOptions {
  SnapshotOptions() = default;
  explicit SnapshotOptions(double seconds) : interval_seconds(seconds) {}

  double interval_seconds = 1.0;
  // Called once the first sample is taken (a capture starts its second tree).
  std::function<void()> after_first_sample;
  std::optional<SnapshotReplay> replay;
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
