#include "render/pack.h"

#include <fmt/format.h>

#include "core/units.h"
#include "core/version.h"

namespace stallscope {
namespace {

// Unreadable files listed in the text; --json lists all.
constexpr size_t kSkippedShown = 20;

}  // namespace

nlohmann::ordered_json PackResultJson(const std::string& src, const std::string& out_dir,
                                      PackFormat format, const PackSummary& s) {
  nlohmann::ordered_json j;
  j["schema"] = "stallscope.pack_result/1";
  j["version"] = Version();
  j["src"] = src;
  j["out"] = out_dir;
  j["format"] = PackFormatName(format);
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

std::string PackResultText(const std::string& src, const std::string& out_dir, PackFormat format,
                           const PackSummary& s) {
  const Manifest& m = s.manifest;
  std::string out = fmt::format(
      "packed {} files ({} samples, {}) from {} into {} {} shard{} in {} ({})\n", s.files,
      m.samples, FormatBytes(s.bytes_in), src, m.shards.size(), PackFormatName(format),
      m.shards.size() == 1 ? "" : "s", out_dir, FormatBytes(s.bytes_out));
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
                       format == PackFormat::kTfRecord ? "framing CRCs ok, bytes and names"
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
  out += fmt::format("  manifest: {}/manifest.json\n", out_dir);
  return out;
}

}  // namespace stallscope
