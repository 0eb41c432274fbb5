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

namespace stallscope {
namespace {

// Skipped files listed by name in text output; --json lists them all.
constexpr size_t kSkippedShown = 20;

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

nlohmann::ordered_json ToJson(const PackOptions& o, const PackSummary& s) {
  nlohmann::ordered_json j;
  j["schema"] = "stallscope.pack_result/1";
  j["src"] = o.src;
  j["out"] = o.out;
  j["format"] = PackFormatName(o.format);
  j["samples"] = s.manifest.samples;
  j["records"] = s.manifest.records;
  j["files"] = s.files;
  j["bytes_in"] = s.bytes_in;
  j["bytes_out"] = s.bytes_out;
  j["shards"] = s.manifest.shards.size();
  j["classes"] = s.manifest.classes;
  j["seconds"] = s.seconds;
  j["bytes_per_second"] = s.seconds > 0 ? s.bytes_in / s.seconds : 0.0;
  j["verified"] = s.verified;
  j["hidden_skipped"] = s.hidden_skipped;
  j["samples_skipped"] = s.samples_skipped;
  j["skipped"] = nlohmann::ordered_json::array();
  for (const SkippedFile& f : s.skipped)
    j["skipped"].push_back({{"path", f.path}, {"reason", f.reason}});
  return j;
}

std::string ToText(const PackOptions& o, const PackSummary& s) {
  const Manifest& m = s.manifest;
  std::string out = fmt::format(
      "packed {} files ({} samples, {}) from {} into {} {} shard{} in {} ({})\n", s.files,
      m.samples, FormatBytes(s.bytes_in), o.src, m.shards.size(), PackFormatName(o.format),
      m.shards.size() == 1 ? "" : "s", o.out, FormatBytes(s.bytes_out));
  out += fmt::format("  {:.2f} s, {}", s.seconds,
                     FormatRate(s.seconds > 0 ? s.bytes_in / s.seconds : 0.0));
  if (m.shuffle) out += fmt::format(", shuffled with seed {}", m.seed);
  out += "\n";
  if (!m.classes.empty()) {
    std::string names;
    for (size_t i = 0; i < m.classes.size() && i < 5; ++i)
      names += fmt::format("{}{}={}", i ? ", " : "", m.classes[i], i);
    out += fmt::format("  labels from {} class folders ({}{})\n", m.classes.size(), names,
                       m.classes.size() > 5 ? ", ..." : "");
  }
  if (s.verified)
    out += fmt::format("  verified: {} records read back, {} match what was written\n", m.records,
                       o.format == PackFormat::kTfRecord ? "framing CRCs ok, bytes and names"
                                                         : "tar headers ok, bytes and names");
  if (s.hidden_skipped)
    out += fmt::format("  {} names starting with '.' not packed\n", s.hidden_skipped);
  if (!s.skipped.empty()) {
    out += fmt::format("  skipped {} unreadable file{} ({} samples):\n", s.skipped.size(),
                       s.skipped.size() == 1 ? "" : "s", s.samples_skipped);
    for (size_t i = 0; i < s.skipped.size() && i < kSkippedShown; ++i)
      out += fmt::format("    {}\n", s.skipped[i].reason);
    if (s.skipped.size() > kSkippedShown)
      out +=
          fmt::format("    ... and {} more (--json lists all)\n", s.skipped.size() - kSkippedShown);
  }
  out += fmt::format("  manifest: {}/manifest.json\n", o.out);
  return out;
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
    std::string out = flags->json ? JsonText(ToJson(o, *summary)) + "\n" : ToText(o, *summary);
    std::fputs(out.c_str(), stdout);
    return kExitOk;
  };
}

}  // namespace stallscope
