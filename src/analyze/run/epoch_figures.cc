#include "analyze/run/epoch_figures.h"

#include <algorithm>

#include "sample/counter_delta.h"

namespace stallscope {
namespace {

// A disk the recorder left out of a sample had read nothing since boot;
// one absent from every sample was not read at all (`seen` false).
std::optional<uint64_t> DiskBytes(const BoundarySample& b, const std::string& disk, bool seen) {
  for (const auto& [name, bytes] : b.disk_read_bytes) {
    if (name == disk) return bytes;
  }
  return seen ? std::optional<uint64_t>(0) : std::nullopt;
}

bool SeenIn(const std::vector<BoundarySample>& samples, const std::string& disk) {
  for (const BoundarySample& b : samples) {
    for (const auto& entry : b.disk_read_bytes) {
      if (entry.first == disk) return true;
    }
  }
  return false;
}

// b - a, when both are known and the counter did not go back (a process
// left the tree without a parent in it waiting for it, a disk re-created).
std::optional<double> Grew(std::optional<uint64_t> a, std::optional<uint64_t> b) {
  if (!a || !b) return std::nullopt;
  std::optional<uint64_t> grew = CounterDelta(*a, *b, OnReset::kUnknown);
  if (!grew) return std::nullopt;
  return static_cast<double>(*grew);
}

}  // namespace

std::string BoundaryDisk(const Timeline& timeline) {
  if (!timeline.info.data_device.empty()) return timeline.info.data_device;
  if (timeline.boundaries.size() < 2) return "";
  const BoundarySample& first = timeline.boundaries.front();
  const BoundarySample& last = timeline.boundaries.back();
  std::string busiest;
  double most = 0;
  for (const auto& [name, bytes] : last.disk_read_bytes) {
    std::optional<double> read = Grew(DiskBytes(first, name, true), bytes);
    if (read && *read > most) {
      most = *read;
      busiest = name;
    }
  }
  return busiest;
}

std::vector<BoundarySpan> BoundarySpans(const Timeline& timeline) {
  std::vector<BoundarySpan> spans;
  const std::vector<BoundarySample>& b = timeline.boundaries;
  const std::string disk = BoundaryDisk(timeline);
  const bool seen = !disk.empty() && SeenIn(b, disk);
  int last_marked = 0;
  for (const EpochEvent& e : timeline.epochs) last_marked = std::max(last_marked, e.epoch);
  for (size_t i = 0; i + 1 < b.size(); ++i) {
    if (!b[i].epoch) continue;  // nothing after the end reading
    BoundarySpan span;
    span.first_epoch = *b[i].epoch;
    span.last_epoch =
        b[i + 1].epoch ? std::max(span.first_epoch, *b[i + 1].epoch - 1) : last_marked;
    span.last_epoch = std::max(span.last_epoch, span.first_epoch);
    span.start_s = b[i].t;
    span.seconds = b[i + 1].t - b[i].t;
    std::optional<double> from_disk =
        seen ? Grew(DiskBytes(b[i], disk, seen), DiskBytes(b[i + 1], disk, seen)) : std::nullopt;
    std::optional<double> from_tree = b[i + 1].processes > 0
                                          ? Grew(b[i].tree_read_bytes, b[i + 1].tree_read_bytes)
                                          : std::nullopt;
    if (from_disk && from_tree) {
      span.read_bytes = std::min(*from_disk, *from_tree);
    } else {
      span.read_bytes = from_disk ? from_disk : from_tree;
    }
    if (b[i + 1].processes > 0 && b[i + 1].tree_cpu_seconds >= b[i].tree_cpu_seconds) {
      span.cpu_seconds = b[i + 1].tree_cpu_seconds - b[i].tree_cpu_seconds;
    }
    span.rss_bytes = std::max(b[i].tree_rss_bytes, b[i + 1].tree_rss_bytes);
    spans.push_back(span);
  }
  return spans;
}

}  // namespace stallscope
