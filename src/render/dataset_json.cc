#include "render/dataset.h"

namespace stallscope {

nlohmann::ordered_json DatasetCensusToJson(const DatasetCensus& c) {
  nlohmann::ordered_json out;
  out["path"] = c.path;
  out["resolved_path"] = c.resolved_path;
  out["files"] = c.files;
  out["bytes"] = c.bytes;
  out["directories"] = c.directories;
  out["symlinks_not_followed"] = c.symlinks;
  out["other_entries"] = c.other_entries;
  out["empty_files"] = c.empty_files;
  out["largest_file_bytes"] = c.largest_file_bytes;
  out["small_files"] = c.SmallFiles();
  out["small_bytes"] = c.SmallBytes();
  nlohmann::ordered_json histogram = nlohmann::ordered_json::array();
  for (size_t b = 0; b < kSizeBuckets; ++b) {
    nlohmann::ordered_json bucket;
    bucket["bucket"] = SizeBucketLabel(b);
    bucket["min_bytes"] = b == 0 ? 0 : kSizeBucketUpper[b - 1];
    if (b + 1 < kSizeBuckets) {
      bucket["max_bytes_exclusive"] = kSizeBucketUpper[b];
    } else {
      bucket["max_bytes_exclusive"] = nullptr;
    }
    bucket["files"] = c.histogram[b].files;
    bucket["bytes"] = c.histogram[b].bytes;
    histogram.push_back(bucket);
  }
  out["size_histogram"] = histogram;
  out["max_depth"] = c.max_depth;
  out["deepest_path"] = c.deepest_path;
  out["unreadable"] = c.unreadable;
  out["unreadable_examples"] = c.unreadable_examples;

  nlohmann::ordered_json fs;
  fs["type"] = c.fs_type;
  fs["statfs_type"] = c.statfs_name;
  if (c.statfs_type) {
    fs["statfs_magic"] = static_cast<uint32_t>(*c.statfs_type);
  } else {
    fs["statfs_magic"] = nullptr;
  }
  fs["mount_point"] = c.mount_point;
  fs["source"] = c.source;
  fs["device"] = c.device;
  fs["disk"] = c.disk;
  fs["backing_disks"] = c.backing_disks;
  fs["remote"] = c.remote;
  out["file_system"] = fs;

  nlohmann::ordered_json residency;
  residency["sampled"] = c.residency.sampled;
  residency["files_checked"] = c.residency.files_checked;
  residency["files_failed"] = c.residency.files_failed;
  residency["bytes_checked"] = c.residency.bytes_checked;
  residency["resident_bytes"] = c.residency.resident_bytes;
  residency["resident_fraction"] = c.residency.resident_fraction;
  out["page_cache"] = residency;

  if (c.latency) {
    out["metadata_latency"] = {{"files", c.latency->files},
                               {"stat_p50_us", c.latency->stat_p50_us},
                               {"stat_p99_us", c.latency->stat_p99_us},
                               {"open_p50_us", c.latency->open_p50_us},
                               {"open_p99_us", c.latency->open_p99_us}};
  } else {
    out["metadata_latency"] = nullptr;
  }
  out["walk"] = {{"threads", c.threads}, {"seconds", c.walk_seconds}};
  return out;
}

nlohmann::ordered_json DatasetToJson(const ReportHeader& header, const DatasetCensus& census,
                                     const Report& report) {
  nlohmann::ordered_json out = ReportToJson(header, report);
  out["dataset"] = DatasetCensusToJson(census);
  return out;
}

}  // namespace stallscope
