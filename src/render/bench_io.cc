#include "render/bench_io.h"

#include <fmt/format.h>

#include "core/units.h"
#include "core/version.h"

namespace stallscope {
namespace {

double Micros(uint64_t nanoseconds) { return static_cast<double>(nanoseconds) / 1e3; }

nlohmann::ordered_json LatencyJson(const LatencyHistogram& h) {
  return {{"count", h.count()},
          {"mean", Micros(static_cast<uint64_t>(h.mean()))},
          {"p50", Micros(h.Percentile(0.50))},
          {"p99", Micros(h.Percentile(0.99))},
          {"max", Micros(h.max())}};
}

nlohmann::ordered_json PhaseJson(const ReadPhaseResult& p) {
  return {{"block_bytes", p.block_bytes},
          {"ios", p.ios},
          {"bytes", p.bytes},
          {"seconds", p.seconds},
          {"mb_per_s", p.bytes_per_second() / 1e6},
          {"iops", p.iops()},
          {"latency_us", LatencyJson(p.latency)},
          {"buffer_bytes", p.buffer_bytes},
          {"buffer_huge_page_bytes", p.buffer_huge_bytes}};
}

// Whether the 1 MiB reads' buffers got the huge pages they asked for: in
// 4 KiB pages a read can go out as two device requests (docs/bench-io.md).
std::string BuffersText(const IoBenchResult& r) {
  const ReadPhaseResult& p = r.sequential;
  if (p.buffer_bytes == 0) return "";
  std::string mode =
      r.thp_mode.empty() ? "" : fmt::format(" (transparent huge pages: {})", r.thp_mode);
  if (p.buffer_huge_bytes >= p.buffer_bytes) {
    return fmt::format("buffers     {} for the 1 MiB reads, all in 2 MiB huge pages{}\n",
                       FormatBytes(p.buffer_bytes), mode);
  }
  std::string why = r.thp_mode == "never"
                        ? ": huge pages are off, so each 1 MiB read may go out as "
                          "more than one device request; as root: echo madvise > "
                          "/sys/kernel/mm/transparent_hugepage/enabled"
                        : ": the kernel had none free to give; a 1 MiB read may "
                          "go out as more than one device request";
  return fmt::format("buffers     {} for the 1 MiB reads, {} of it in 2 MiB huge pages{}{}\n",
                     FormatBytes(p.buffer_bytes), FormatBytes(p.buffer_huge_bytes), mode, why);
}

std::string LatencyText(const LatencyHistogram& h) {
  auto ms = [](uint64_t ns) {
    double v = static_cast<double>(ns) / 1e6;
    return v >= 10    ? fmt::format("{:.1f} ms", v)
           : v >= 0.1 ? fmt::format("{:.2f} ms", v)
                      : fmt::format("{:.1f} us", v * 1e3);
  };
  return fmt::format("p50 {:>9}  p99 {:>9}", ms(h.Percentile(0.50)), ms(h.Percentile(0.99)));
}

std::string Mark(bool pass) { return pass ? "ok" : "BELOW THRESHOLD"; }

}  // namespace

std::string RenderIoBenchText(const IoBenchResult& r, const StorageThresholds& t) {
  std::string out;
  out += fmt::format("storage under {} ({}{}{})\n", r.path, r.fs_type.empty() ? "?" : r.fs_type,
                     r.device.empty() ? "" : " on " + r.device, r.remote ? ", remote" : "");
  out += fmt::format("test file   {} {} ({}{})\n", r.file, FormatBytes(r.plan.bytes),
                     r.plan.reuse ? "reused" : fmt::format("written in {:.1f} s", r.write_seconds),
                     r.file_kept ? ", kept" : ", removed");
  out += fmt::format("reads       {}, {} jobs x iodepth {}, {}, {:.1f} s per phase\n",
                     r.direct ? "O_DIRECT" : "BUFFERED", r.jobs, r.iodepth,
                     ReadEngineName(r.engine), r.runtime_seconds);
  if (!r.direct) out += fmt::format("            {}\n", r.read_mode);
  out += BuffersText(r);
  out += "\n";
  out += fmt::format("sequential 1 MiB  {:>12}  {:>9.0f} IOPS   {}   {} (>= {:.0f} MB/s)\n",
                     FormatRate(r.sequential.bytes_per_second()), r.sequential.iops(),
                     LatencyText(r.sequential.latency),
                     Mark(r.sequential.bytes_per_second() >= t.sequential_bytes_per_second),
                     t.sequential_bytes_per_second / 1e6);
  out += fmt::format("random 4 KiB      {:>12}  {:>9.0f} IOPS   {}   {} (>= {:.0f} IOPS)\n",
                     FormatRate(r.random.bytes_per_second()), r.random.iops(),
                     LatencyText(r.random.latency), Mark(r.random.iops() >= t.random_iops),
                     t.random_iops);
  if (r.metadata) {
    out += fmt::format("metadata, {} files of {}:\n", r.metadata->files,
                       FormatBytes(r.metadata->file_bytes));
    for (const MetadataOp& op : r.metadata->ops) {
      out += fmt::format("  {:<8} {:>10.0f} {:<9}   {}{}\n", op.op, op.per_second(),
                         op.op == "readdir" ? "entries/s" : "files/s", LatencyText(op.latency),
                         op.op == "readdir" ? "  (per listing)" : "");
    }
  }
  return out;
}

nlohmann::ordered_json IoBenchToJson(const IoBenchResult& r, const StorageThresholds& t) {
  nlohmann::ordered_json out;
  out["schema"] = "stallscope.bench_io/1";
  out["version"] = Version();
  out["path"] = r.path;
  out["fs_type"] = r.fs_type;
  out["device"] = r.device;
  out["remote"] = r.remote;
  out["free_bytes"] = r.free_bytes;
  out["file"] = {
      {"path", r.file},         {"bytes", r.plan.bytes},   {"requested_bytes", r.requested_bytes},
      {"reused", r.plan.reuse}, {"capped", r.plan.capped}, {"write_seconds", r.write_seconds},
      {"kept", r.file_kept}};
  out["direct"] = r.direct;
  out["read_mode"] = r.read_mode;
  if (!r.direct) {
    out["cached_after_drop"] = {{"sequential", r.cached_after_drop_sequential.value_or(0)},
                                {"random", r.cached_after_drop_random.value_or(0)}};
  }
  out["engine"] = ReadEngineName(r.engine);
  out["transparent_huge_pages"] = r.thp_mode;
  out["jobs"] = r.jobs;
  out["iodepth"] = r.iodepth;
  out["runtime_seconds"] = r.runtime_seconds;
  out["sequential"] = PhaseJson(r.sequential);
  out["random"] = PhaseJson(r.random);
  if (r.metadata) {
    nlohmann::ordered_json ops = nlohmann::ordered_json::object();
    for (const MetadataOp& op : r.metadata->ops) {
      ops[op.op] = {{"ops", op.ops},
                    {"seconds", op.seconds},
                    {"per_s", op.per_second()},
                    {"latency_us", LatencyJson(op.latency)}};
    }
    out["metadata"] = {
        {"files", r.metadata->files}, {"file_bytes", r.metadata->file_bytes}, {"ops", ops}};
  } else {
    out["metadata"] = nullptr;
  }
  out["thresholds"] = {{"sequential_mb_per_s", t.sequential_bytes_per_second / 1e6},
                       {"random_iops", t.random_iops}};
  out["total_seconds"] = r.total_seconds;
  return out;
}

}  // namespace stallscope
