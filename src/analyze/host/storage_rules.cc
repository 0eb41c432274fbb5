#include "analyze/host/storage_rules.h"

#include <fmt/format.h>

namespace stallscope {

FindingsWithNotes CheckStorageSpeed(const StorageSpeed& s, const StorageThresholds& t) {
  bool sequential_slow = s.sequential_bytes_per_second < t.sequential_bytes_per_second;
  bool random_slow = s.random_iops < t.random_iops;
  if (!sequential_slow && !random_slow) return {};
  Finding f;
  f.id = "io.storage_slow";
  f.layer = Layer::kIo;
  f.severity = Severity::kCritical;
  std::vector<std::string> parts;
  if (sequential_slow) {
    parts.push_back(fmt::format("sequential 1 MiB reads at {:.0f} MB/s (threshold {:.0f})",
                                s.sequential_bytes_per_second / 1e6,
                                t.sequential_bytes_per_second / 1e6));
  }
  if (random_slow) {
    parts.push_back(fmt::format("random 4 KiB reads at {:.0f} IOPS (threshold {:.0f})",
                                s.random_iops, t.random_iops));
  }
  f.summary =
      fmt::format("{}{}{}: too slow to feed training directly from {}", parts[0],
                  parts.size() > 1 ? " and " : "", parts.size() > 1 ? parts[1] : "", s.path);
  f.evidence = {
      {"sequential_read_mb_per_s", s.sequential_bytes_per_second / 1e6},
      {"sequential_threshold_mb_per_s", t.sequential_bytes_per_second / 1e6},
      {"sequential_p99_ms", s.sequential_p99_ms},
      {"random_read_iops", s.random_iops},
      {"random_threshold_iops", t.random_iops},
      {"random_p99_ms", s.random_p99_ms},
      {"jobs", static_cast<int64_t>(s.jobs)},
      {"iodepth", static_cast<int64_t>(s.iodepth)},
      {"reads", std::string(s.direct ? "O_DIRECT" : "buffered")},
      {"fs_type", s.fs_type},
  };
  if (s.remote) {
    f.next = fmt::format(
        "copy the data set to a local SSD/NVMe disk once before training (remote reads pay a round "
        "trip per open), or pack it "
        "into large shards to cut round trips: stallscope pack SRC OUT --format wds; then "
        "stallscope bench io LOCAL_DIR");
  } else if (random_slow && !sequential_slow) {
    f.next = fmt::format(
        "random small reads are the weak spot: pack small files into large shards read "
        "sequentially: stallscope pack SRC OUT --format wds; stallscope dataset {}",
        s.path);
  } else {
    f.next = fmt::format(
        "watch the disk while this runs: iostat -x 1 (%util, r_await); see what a deeper queue "
        "gets: stallscope bench io --iodepth 32 {}; else move the data to a local NVMe disk",
        s.path);
  }
  return FindingsWithNotes{{f}, {}};
}

StorageSpeed SpeedOf(const IoBenchResult& r) {
  StorageSpeed s;
  s.path = r.path;
  s.fs_type = r.fs_type;
  s.remote = r.remote;
  s.direct = r.direct;
  s.jobs = r.jobs;
  s.iodepth = r.iodepth;
  s.sequential_bytes_per_second = r.sequential.bytes_per_second();
  s.sequential_p99_ms = static_cast<double>(r.sequential.latency.Percentile(0.99)) / 1e6;
  s.random_iops = r.random.iops();
  s.random_p99_ms = static_cast<double>(r.random.latency.Percentile(0.99)) / 1e6;
  return s;
}

}  // namespace stallscope
