#include "analyze/host/dataset_rules.h"

#include <fmt/format.h>

#include <algorithm>

#include "analyze/host/remote_fs_knobs.h"
#include "core/units.h"

namespace stallscope {
namespace {

bool ManySmallFiles(const DatasetCensus& c) {
  const uint64_t small = c.SmallFiles();
  return small >= kSmallFilesMinCount && c.files > 0 &&
         static_cast<double>(small) / static_cast<double>(c.files) >= kSmallFilesMinShare;
}

std::string PackedOut(const std::string& path) {
  std::string base = path;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  if (base.empty() || base == "/" || base == "." || base == "..") return "packed-wds";
  return base + "-wds";
}

std::string PackCommand(const DatasetCensus& c) {
  return fmt::format("stallscope pack {} {} --format wds", ShellQuote(c.path),
                     ShellQuote(PackedOut(c.path)));
}

void SmallFiles(const DatasetCensus& c, std::vector<Finding>& out) {
  if (!ManySmallFiles(c)) return;
  const uint64_t small = c.SmallFiles();
  const double share = static_cast<double>(small) / static_cast<double>(c.files);
  Finding f;
  f.id = "io.small_files";
  f.layer = Layer::kIo;
  f.severity =
      small >= kSmallFilesCriticalCount || c.remote ? Severity::kCritical : Severity::kWarning;
  const double seconds = static_cast<double>(small) / kFloorRandomIops;
  f.summary = fmt::format(
      "{} of {} files ({}) are under 1 MiB, {} on average: each is a separate open and "
      "random read, {:.0f} s per epoch at 5000 IOPS",
      small, c.files, FormatPercent(share), FormatBytes(c.SmallBytes() / small), seconds);
  f.evidence = {{"small_files", static_cast<int64_t>(small)},
                {"files", static_cast<int64_t>(c.files)},
                {"small_files_share", share},
                {"small_bytes", static_cast<int64_t>(c.SmallBytes())},
                {"mean_small_file_bytes", static_cast<int64_t>(c.SmallBytes() / small)},
                {"seconds_per_epoch_at_5000_iops", seconds},
                {"remote_fs", c.remote}};
  f.next = fmt::format(
      "{}  (packs them into 256 MiB tar shards read sequentially; then stallscope dataset {})",
      PackCommand(c), ShellQuote(PackedOut(c.path)));
  out.push_back(std::move(f));
}

void AddLatency(const DatasetCensus& c, const DatasetContext& context, Finding& f,
                std::string& latency) {
  const MetadataLatency& l = *c.latency;
  const int workers = context.loader_workers.value_or(kAssumedLoaderWorkers);
  // A loader pays a whole fetch per file (open, read, close): measured where
  // the census fetched, else the open alone (a lower bound).
  const bool fetched = l.fetch_p50_us > 0;
  const double per_file_us = fetched ? l.fetch_p50_us : l.open_p50_us;
  const RemoteEpochCost cost = RemoteCostPerEpoch(c.files, c.bytes, per_file_us, workers);
  latency = fmt::format(
      "open p50 {:.2f} ms, p99 {:.2f} ms{} (measured on a sample of {} files); over the {} "
      "files and {} of the walk, a loader with {} workers{} pays {:.1f} s per epoch in {} "
      "against {:.1f} s on a local disk at {:.0f} IOPS; packed into {} shards it would pay "
      "{:.2f} s, saving {:.1f} s per epoch",
      l.open_p50_us / 1e3, l.open_p99_us / 1e3,
      fetched
          ? fmt::format(", a whole fetch (open, read, close) p50 {:.2f} ms", l.fetch_p50_us / 1e3)
          : "",
      l.files, c.files, FormatBytes(c.bytes), workers,
      context.loader_workers ? "" : " (--workers N for yours)", cost.remote_seconds,
      fetched ? "fetches" : "opens", cost.local_seconds, kFloorRandomIops, cost.shards,
      cost.packed_seconds, cost.saved_seconds);
  f.evidence.push_back({"open_p50_ms", l.open_p50_us / 1e3});
  f.evidence.push_back({"open_p99_ms", l.open_p99_us / 1e3});
  if (fetched) f.evidence.push_back({"fetch_p50_ms", l.fetch_p50_us / 1e3});
  f.evidence.push_back({"stat_p50_ms", l.stat_p50_us / 1e3});
  f.evidence.push_back({"stat_p99_ms", l.stat_p99_us / 1e3});
  f.evidence.push_back({"latency_sample_files", static_cast<int64_t>(l.files)});
  f.evidence.push_back(
      {"open_seconds_per_epoch", static_cast<double>(c.files) * l.open_p50_us / 1e6});
  f.evidence.push_back({"loader_workers", static_cast<int64_t>(workers)});
  f.evidence.push_back({"loader_seconds_per_epoch", cost.remote_seconds});
  f.evidence.push_back({"local_disk_seconds_per_epoch", cost.local_seconds});
  f.evidence.push_back({"packed_shards", static_cast<int64_t>(cost.shards)});
  f.evidence.push_back({"packed_seconds_per_epoch", cost.packed_seconds});
  f.evidence.push_back({"pack_saves_seconds_per_epoch", cost.saved_seconds});
}

void RemoteFs(const DatasetCensus& c, const DatasetContext& context, std::vector<Finding>& out) {
  if (!c.remote) return;
  Finding f;
  f.id = "io.remote_fs";
  f.layer = Layer::kIo;
  f.severity = ManySmallFiles(c)                ? Severity::kCritical
               : c.files >= kRemoteWarningFiles ? Severity::kWarning
                                                : Severity::kInfo;
  f.evidence = {{"fs_type", c.fs_type},
                {"source", c.source},
                {"files", static_cast<int64_t>(c.files)},
                {"bytes", static_cast<int64_t>(c.bytes)}};
  std::string latency = "latency not measured (no files)";
  if (c.latency && c.latency->files > 0) AddLatency(c, context, f, latency);
  f.summary = fmt::format("the data is on {} ({}): every open/stat/readdir is a round trip; {}",
                          c.fs_type, c.source.empty() ? "no block device" : c.source, latency);
  f.next = fmt::format(
      "copy it once to a local disk of each node (rsync -a {} /local/nvme/) or pack it ({}); "
      "stallscope bench io {}",
      ShellQuote(c.path), PackCommand(c), ShellQuote(c.path));
  const std::string knob = RemoteFsKnob(c.fs_type, c.source, c.mount_options);
  if (!knob.empty()) {
    f.next += "; or cache its metadata on the client: " + knob;
    f.evidence.push_back({"mount_options", c.mount_options});
  }
  out.push_back(std::move(f));
}

void ColdCache(const DatasetCensus& c, const DatasetContext& context, std::vector<Finding>& out) {
  const ResidencyCensus& r = c.residency;
  if (r.files_checked == 0 || r.bytes_checked == 0) return;
  if (r.resident_fraction >= kColdResidentFraction) return;
  const double cold = 1.0 - r.resident_fraction;
  const double seconds = cold * (static_cast<double>(c.bytes) / kFloorSequentialBytesPerSecond +
                                 static_cast<double>(c.SmallFiles()) / kFloorRandomIops);
  if (seconds < kColdMinSecondsAtFloor) return;
  const bool fits = !context.memory_total_bytes ||
                    static_cast<double>(c.bytes) <=
                        kCacheFitsMemoryFraction * static_cast<double>(*context.memory_total_bytes);
  Finding f;
  f.id = "io.cold_cache";
  f.layer = Layer::kIo;
  f.severity = fits ? Severity::kWarning : Severity::kInfo;
  f.summary =
      fmt::format("{} of the data is in the page cache ({}{} files looked at): {}",
                  FormatPercent(r.resident_fraction), r.sampled ? "a random sample of " : "all ",
                  r.files_checked,
                  fits ? "the first epoch reads it all from storage and runs slower than the next"
                       : "it is larger than the cache can hold, so every epoch reads from storage");
  f.evidence = {{"resident_fraction", r.resident_fraction},
                {"files_checked", static_cast<int64_t>(r.files_checked)},
                {"sampled", r.sampled},
                {"bytes", static_cast<int64_t>(c.bytes)},
                {"cold_read_seconds_at_floor", seconds}};
  if (context.memory_total_bytes) {
    f.evidence.push_back({"memory_total_bytes", static_cast<int64_t>(*context.memory_total_bytes)});
  }
  f.next = fits ? fmt::format(
                      "expect epoch 1 to be slower, or warm the cache before the job: find {} "
                      "-type f -print0 | xargs -0 -n 256 -P 8 cat > /dev/null; then stallscope "
                      "dataset {}",
                      ShellQuote(c.path), ShellQuote(c.path))
                : fmt::format(
                      "stallscope bench io {}  (every epoch runs at the storage's speed); "
                      "{}",
                      ShellQuote(c.path), PackCommand(c));
  out.push_back(std::move(f));
}

}  // namespace

RemoteEpochCost RemoteCostPerEpoch(uint64_t files, uint64_t bytes, double open_p50_us,
                                   int workers) {
  RemoteEpochCost cost;
  cost.workers = std::max(1, workers);
  const double per_file = open_p50_us / 1e6;
  cost.remote_seconds = static_cast<double>(files) * per_file / cost.workers;
  cost.local_seconds = static_cast<double>(files) / kFloorRandomIops;
  cost.shards =
      files == 0 ? 0 : std::max<uint64_t>(1, (bytes + kPackShardBytes - 1) / kPackShardBytes);
  cost.packed_seconds = static_cast<double>(cost.shards) * per_file /
                        std::min<double>(cost.workers, std::max<uint64_t>(1, cost.shards));
  cost.saved_seconds = std::max(0.0, cost.remote_seconds - cost.packed_seconds);
  return cost;
}

std::string ShellQuote(const std::string& text) {
  const bool plain = !text.empty() && std::all_of(text.begin(), text.end(), [](char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '/' || ch == '.' || ch == '_' || ch == '-' || ch == '+' || ch == ':' ||
           ch == ',' || ch == '@' || ch == '%' || ch == '=';
  });
  if (plain) return text;
  std::string out = "'";
  for (char ch : text) {
    if (ch == '\'') {
      out += "'\\''";
    } else {
      out += ch;
    }
  }
  return out + "'";
}

FindingsWithNotes CheckDataset(const DatasetCensus& census, const DatasetContext& context) {
  std::vector<Finding> out;
  SmallFiles(census, out);
  RemoteFs(census, context, out);
  ColdCache(census, context, out);
  return FindingsWithNotes{std::move(out), {}};
}

}  // namespace stallscope
