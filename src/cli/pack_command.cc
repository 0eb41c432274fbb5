// `stallscope pack SRC OUT --format tfrecord|wds`: wires the flags to
// data/packer.h and prints what was packed (docs/pack-format.md).
#include <fmt/format.h>
#include <malloc.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/progress.h"
#include "core/byte_size.h"
#include "core/json_text.h"
#include "core/units.h"
#include "data/packer.h"
#include "render/pack.h"

namespace stallscope {
namespace {

std::string Bar(const PackProgress& p, double seconds) {
  double frac = p.bytes_total
                    ? static_cast<double>(p.bytes_done) / p.bytes_total
                    : static_cast<double>(p.samples_done) / std::max<uint64_t>(1, p.samples_total);
  constexpr int kWidth = 30;
  int filled = static_cast<int>(frac * kWidth);
  return fmt::format("packing [{}{}] {:5.1f}% {}/{} samples {} of {} {}", std::string(filled, '#'),
                     std::string(kWidth - filled, '.'), 100 * frac, p.samples_done, p.samples_total,
                     FormatBytes(p.bytes_done), FormatBytes(p.bytes_total),
                     seconds > 0 ? FormatRate(p.bytes_done / seconds) : "");
}

}  // namespace

CommandRunner SetupPack(CLI::App& app) {
  struct Flags {
    PackOptions options;
    std::string format;
    std::string shard_size = "256MiB";
    bool json = false;
  };
  auto flags = std::make_shared<Flags>();
  PackOptions& o = flags->options;
  app.add_option("SRC", o.src, "folder of files to pack (class folders give labels)")->required();
  app.add_option("OUT", o.out, "folder for the shards, their indexes and manifest.json")
      ->required();
  app.add_option("--format", flags->format, "tfrecord or wds (WebDataset tar)")
      ->required()
      ->check(CLI::IsMember({"tfrecord", "wds"}));
  app.add_option("--shard-size", flags->shard_size,
                 "upper bound of a shard (a bigger sample gets a shard of its own)")
      ->capture_default_str();
  app.add_option("--jobs", o.jobs, "threads reading source files")->capture_default_str();
  CLI::Option* shuffle = app.add_flag("--shuffle", o.shuffle, "samples in a seeded random order");
  app.add_option("--seed", o.seed, "seed of --shuffle")->needs(shuffle)->capture_default_str();
  app.add_flag("--force", o.force, "replace the pack already in OUT");
  app.add_flag("--verify", o.verify,
               "read every record back and check it against what was written");
  app.add_flag("--skip-unreadable", o.skip_unreadable,
               "go on past files that cannot be read or change while packed; list them at the end");
  app.add_flag("--json", flags->json, "machine output (schema stallscope.pack_result/1)");

  return [flags]() {
    PackOptions& o = flags->options;
    o.format = flags->format == "wds" ? PackFormat::kWds : PackFormat::kTfRecord;
    std::optional<uint64_t> size = ParseByteSize(flags->shard_size);
    if (!size || *size == 0) {
      std::fprintf(stderr, "stallscope pack: --shard-size \"%s\" is not a size (e.g. 256MiB)\n",
                   flags->shard_size.c_str());
      return kExitUsage;
    }
    o.shard_size = *size;
    // Every source file is read into a fresh buffer (~100 KB for images) on
    // a reading thread and freed by the writer. glibc gives an arena's top
    // back to the kernel once it passes the trim threshold (128 KiB, raised
    // only as a side effect of freeing a large mmapped block: the old
    // one-thread census did so by chance, the parallel walk does not), and
    // the next read faults those pages in again: 20,000 files of ~100 KB
    // took 70,000 minor faults, 16,000 with this (bench/pack_vs_tar.sh's
    // tree). What is kept is bounded by the read-ahead, and the process
    // ends with the pack.
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
    Result<PackSummary> summary = [&] {
      ProgressLine line("packing: census of the source folder...");
      auto start = std::chrono::steady_clock::now();
      auto last = start - std::chrono::seconds(1);
      o.progress = [&](const PackProgress& p) {
        auto now = std::chrono::steady_clock::now();
        if (now - last < std::chrono::milliseconds(100) && p.samples_done != p.samples_total)
          return;
        last = now;
        line.Update(Bar(p, std::chrono::duration<double>(now - start).count()));
      };
      return Pack(o);
    }();
    o.progress = nullptr;
    if (!summary.ok()) {
      std::fprintf(stderr, "stallscope pack: %s\n", summary.status().message().c_str());
      return summary.status().code() == Status::Code::kInvalidArgument ? kExitUsage
                                                                       : kExitCouldNotRun;
    }
    std::string out = flags->json
                          ? JsonText(PackResultJson(o.src, o.out, o.format, *summary)) + "\n"
                          : PackResultText(o.src, o.out, o.format, *summary);
    std::fputs(out.c_str(), stdout);
    return kExitOk;
  };
}

}  // namespace stallscope
