#include "record/epoch_boundaries.h"

#include <algorithm>

namespace stallscope {

void EpochBoundaryClock::Mark(const std::vector<EpochEvent>& marks) {
  for (const EpochEvent& e : marks) {
    if (!seen_.insert(e.epoch).second) continue;
    pending_ = pending_ ? std::max(*pending_, e.epoch) : e.epoch;
  }
}

std::optional<double> EpochBoundaryClock::DueAt() const {
  if (!pending_) return std::nullopt;
  return last_taken_ ? *last_taken_ + kMinBoundarySpacingSeconds : 0.0;
}

std::optional<int> EpochBoundaryClock::TakeDue(double now) {
  std::optional<double> due = DueAt();
  if (!due || now < *due) return std::nullopt;
  std::optional<int> epoch = pending_;
  pending_.reset();
  last_taken_ = now;
  return epoch;
}

BoundarySample MakeBoundarySample(double t, std::optional<int> epoch, const ProcessTree* tree,
                                  const DiskstatsSample& disks,
                                  const std::set<std::string>& whole_disks,
                                  double ticks_per_second) {
  BoundarySample b;
  b.t = t;
  b.epoch = epoch;
  if (tree) {
    uint64_t ticks = 0, read = 0;
    bool io_read = false;
    for (const ProcessSample& p : tree->processes) {
      ++b.processes;
      b.tree_rss_bytes += p.rss_bytes;
      ticks += p.cpu_ticks();
      if (p.io) {
        io_read = true;
        read += p.io->read_bytes;
      }
    }
    if (ticks_per_second > 0) b.tree_cpu_seconds = static_cast<double>(ticks) / ticks_per_second;
    if (io_read) b.tree_read_bytes = read;
  }
  for (const DiskCounters& d : disks.devices) {
    // A disk that has read nothing since boot (an idle loop device) is left
    // out: readers take its absence for 0.
    if (whole_disks.count(d.name) && d.sectors_read > 0) {
      b.disk_read_bytes.emplace_back(d.name, d.sectors_read * kDiskstatsSectorBytes);
    }
  }
  return b;
}

}  // namespace stallscope
