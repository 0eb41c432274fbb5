#include "render/dataset.h"

#include <fmt/format.h>

#include <variant>

#include "core/units.h"
#include "render/report.h"

namespace stallscope {
namespace {

std::string Share(uint64_t part, uint64_t whole) {
  return whole == 0 ? "-" : FormatPercent(static_cast<double>(part) / static_cast<double>(whole));
}

}  // namespace

std::string RenderDatasetText(const DatasetCensus& c, const Report& report) {
  std::string out = fmt::format("dataset {}", c.path);
  if (c.resolved_path != c.path) out += fmt::format(" ({})", c.resolved_path);
  out += fmt::format("\n  files        {} ({}), {} directories, walked in {:.2f} s by {} threads\n",
                     c.files, FormatBytes(c.bytes), c.directories, c.walk_seconds, c.threads);
  if (c.symlinks + c.other_entries + c.empty_files > 0) {
    out +=
        fmt::format("               {} symlinks not followed, {} other entries, {} empty files\n",
                    c.symlinks, c.other_entries, c.empty_files);
  }
  out +=
      fmt::format("  small        {} files under 1 MiB ({} of files, {} of bytes)\n",
                  c.SmallFiles(), Share(c.SmallFiles(), c.files), Share(c.SmallBytes(), c.bytes));
  out += "  sizes        bucket        files   share      bytes\n";
  for (size_t b = 0; b < kSizeBuckets; ++b) {
    out += fmt::format("               {:<9} {:>9} {:>7} {:>10}\n", SizeBucketLabel(b),
                       c.histogram[b].files, Share(c.histogram[b].files, c.files),
                       FormatBytes(c.histogram[b].bytes));
  }
  out += fmt::format("  deepest      depth {}: {}\n", c.max_depth,
                     c.deepest_path.empty() ? "-" : c.deepest_path);
  std::string where = c.fs_type.empty() ? "unknown" : c.fs_type;
  if (!c.statfs_name.empty() && c.statfs_name != c.fs_type) {
    where += fmt::format(" (statfs: {})", c.statfs_name);
  }
  out += fmt::format("  file system  {}{} on {}", where, c.remote ? ", remote" : "",
                     c.source.empty() ? "-" : c.source);
  if (!c.mount_point.empty()) out += fmt::format(" mounted at {}", c.mount_point);
  out += "\n";
  std::string device = c.device.empty() ? "none (no block device)" : c.device;
  if (!c.disk.empty() && c.disk != c.device) device += fmt::format(" on disk {}", c.disk);
  if (!c.backing_disks.empty()) {
    device += " over";
    for (const std::string& d : c.backing_disks) device += " " + d;
  }
  out += fmt::format("  device       {}\n", device);
  const ResidencyCensus& r = c.residency;
  if (r.files_checked > 0) {
    out += fmt::format("  page cache   {} resident ({} of {} in {} files{})\n",
                       FormatPercent(r.resident_fraction), FormatBytes(r.resident_bytes),
                       FormatBytes(r.bytes_checked), r.files_checked,
                       r.sampled ? fmt::format(", a random sample of {}", c.files) : ", all");
  } else {
    out += "  page cache   - (no file could be looked at)\n";
  }
  if (c.latency && c.latency->files > 0) {
    out += fmt::format(
        "  metadata     open p50 {:.1f} us, p99 {:.1f} us; stat p50 {:.1f} us, p99 {:.1f} us "
        "({} files)\n",
        c.latency->open_p50_us, c.latency->open_p99_us, c.latency->stat_p50_us,
        c.latency->stat_p99_us, c.latency->files);
  }
  if (c.unreadable > 0) {
    out += fmt::format("  unreadable   {}\n", c.unreadable);
    for (const std::string& e : c.unreadable_examples) out += fmt::format("               {}\n", e);
  }
  out += "\n";
  if (report.findings.empty()) {
    out += "io           ok: no small-files, remote or cold-cache problem\n";
  } else {
    out += "io\n";
  }
  for (const Finding& f : report.findings) out += FindingText(f, /*with_next=*/true);
  for (const std::string& note : report.notes) out += fmt::format("note: {}\n", note);
  return out;
}

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
                               {"open_p99_us", c.latency->open_p99_us},
                               {"fetch_p50_us", c.latency->fetch_p50_us},
                               {"fetch_p99_us", c.latency->fetch_p99_us}};
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
