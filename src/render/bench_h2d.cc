// `bench h2d` text and JSON; see bench_h2d.h.
#include "render/bench_h2d.h"

#include <fmt/format.h>

#include "core/units.h"
#include "core/version.h"

namespace stallscope {
namespace {

std::string NodeLabel(const H2dSample& s) {
  std::string where = s.local ? "local" : "remote";
  if (!s.numa_node) return s.local ? "unbound" : "remote (unbound)";
  return fmt::format("node {} ({})", *s.numa_node, where);
}

std::string RatioText(const std::optional<double>& r) {
  return r ? fmt::format("{:.2f}x", *r) : "n/a";
}

}  // namespace

std::string SizeLabel(uint64_t bytes) {
  if (bytes >= (1ull << 30) && bytes % (1ull << 30) == 0) return fmt::format("{} GiB", bytes >> 30);
  if (bytes >= (1ull << 20) && bytes % (1ull << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  if (bytes >= (1ull << 10) && bytes % (1ull << 10) == 0) return fmt::format("{} KiB", bytes >> 10);
  return fmt::format("{} B", bytes);
}

std::string RenderH2dText(const H2dResult& result) {
  std::string out = fmt::format("CUDA runtime {} ({}), driver {}\n",
                                result.runtime_version.empty() ? "?" : result.runtime_version,
                                result.runtime_library,
                                result.driver_version.empty() ? "?" : result.driver_version);
  for (const H2dGpu& gpu : result.gpus) {
    out += fmt::format("\nGPU {}  {}  {}  NUMA node {}\n", gpu.index,
                       gpu.name.empty() ? "?" : gpu.name,
                       gpu.pci_bus_id.empty() ? "?" : gpu.pci_bus_id,
                       gpu.numa_node ? fmt::format("{}", *gpu.numa_node) : "none");
    if (!gpu.samples.empty()) {
      out += fmt::format("  {:<34}", "GB/s");
      for (uint64_t size : result.sizes) out += fmt::format("{:>9}", SizeLabel(size));
      out += "\n";
      // One row per (direction, memory, node) in the order measured.
      for (size_t i = 0; i < gpu.samples.size();) {
        const H2dSample& first = gpu.samples[i];
        out += fmt::format("  {} {:<8} {:<20}", CopyDirectionName(first.direction),
                           HostMemoryName(first.memory), NodeLabel(first));
        size_t j = i;
        for (; j < gpu.samples.size(); ++j) {
          const H2dSample& s = gpu.samples[j];
          if (s.direction != first.direction || s.memory != first.memory || s.local != first.local)
            break;
          out += fmt::format("{:>9.1f}", s.bytes_per_second / 1e9);
        }
        out += "\n";
        i = j;
      }
      out += fmt::format(
          "  at {}: pinned/pageable h2d {}, d2h {}; remote/local node (pinned h2d) {}\n",
          SizeLabel(result.sizes.back()), RatioText(gpu.verdict.pinned_over_pageable_h2d),
          RatioText(gpu.verdict.pinned_over_pageable_d2h),
          gpu.verdict.remote_over_local_h2d ? FormatPercent(*gpu.verdict.remote_over_local_h2d)
                                            : "n/a");
      for (const std::string& line : gpu.verdict.lines) out += "  -> " + line + "\n";
    }
    for (const std::string& note : gpu.notes) out += "  note: " + note + "\n";
  }
  for (const std::string& note : result.notes) out += "note: " + note + "\n";
  return out;
}

nlohmann::ordered_json H2dToJson(const H2dResult& result) {
  using json = nlohmann::ordered_json;
  json out;
  out["schema"] = "stallscope.bench_h2d/1";
  out["runtime_library"] = result.runtime_library;
  out["runtime_version"] = result.runtime_version;
  out["driver_version"] = result.driver_version;
  out["sizes_bytes"] = result.sizes;
  out["thresholds"] = {{"pinned_clear_win_ratio", kPinnedClearWinRatio},
                       {"pinned_no_win_ratio", kPinnedNoWinRatio},
                       {"numa_remote_share", kNumaRemoteShare}};
  json gpus = json::array();
  for (const H2dGpu& gpu : result.gpus) {
    json g;
    g["index"] = gpu.index;
    g["name"] = gpu.name;
    g["pci_bus_id"] = gpu.pci_bus_id;
    g["numa_node"] = gpu.numa_node ? json(*gpu.numa_node) : json(nullptr);
    json samples = json::array();
    for (const H2dSample& s : gpu.samples) {
      samples.push_back({{"size_bytes", s.size_bytes},
                         {"direction", CopyDirectionName(s.direction)},
                         {"memory", HostMemoryName(s.memory)},
                         {"numa_node", s.numa_node ? json(*s.numa_node) : json(nullptr)},
                         {"local", s.local},
                         {"copies", s.copies},
                         {"seconds", s.seconds},
                         {"bytes_per_second", s.bytes_per_second}});
    }
    g["samples"] = samples;
    auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
    g["pinned_over_pageable_h2d"] = opt(gpu.verdict.pinned_over_pageable_h2d);
    g["pinned_over_pageable_d2h"] = opt(gpu.verdict.pinned_over_pageable_d2h);
    g["remote_over_local_h2d"] = opt(gpu.verdict.remote_over_local_h2d);
    g["pinned_h2d_over_link_ceiling"] = opt(gpu.verdict.pinned_h2d_over_link_ceiling);
    g["verdict"] = gpu.verdict.lines;
    g["notes"] = gpu.notes;
    gpus.push_back(g);
  }
  out["gpus"] = gpus;
  out["notes"] = result.notes;
  out["total_seconds"] = result.total_seconds;
  return out;
}

}  // namespace stallscope
