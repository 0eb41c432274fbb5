// The NCCL versions of a log's processes and distributed.nccl_version_mismatch
// (see versions.h).
#include "analyze/nccl_log/versions.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "analyze/nccl_log/causes.h"
#include "core/text.h"

namespace stallscope {
namespace {

// The versions that print each form: its first and last tag in NCCL's git
// history (init.cc, bootstrap.cc, transport/{p2p,shm,net}.cc at every tag
// from 2.3.5). A form is taken to start at the patch of its first tag and to
// run through every patch of its last tag's minor: the ranges shown are the
// tags', no wider.
struct FormVersions {
  NcclLineForm form;
  int lo;  // version code of the first tag that prints it
  int hi;  // of the last minor that prints it (kNcclLatest: still printed)
  const char* text;
};
constexpr int Upto(int minor) { return NcclVersionCode(minor, kAnyPatch); }
constexpr FormVersions kFormVersions[] = {
    // v2.3.5 .. v2.6.4 (v2.7.3 prints "Channel NN :")
    {NcclLineForm::kRingVia, NcclVersionCode(3), Upto(6), "'Ring NN : a -> b via'"},
    // v2.7.3 .. v2.13.4 (P2P's lines; NET's took "NN/M" at v2.12.7)
    {NcclLineForm::kChannelNoSubIndex, NcclVersionCode(7), Upto(13),
     "'Channel NN : a[..] -> b[..] via P2P|NET'"},
    {NcclLineForm::kChannelSubIndex, NcclVersionCode(12), kNcclLatest, "'Channel NN/M : ... via'"},
    // v2.3.5 .. v2.12.12; "via SHM/" from v2.13.4
    {NcclLineForm::kDirectSharedMemory, NcclVersionCode(3), Upto(12), "'via direct shared memory'"},
    {NcclLineForm::kShmSlash, NcclVersionCode(13), kNcclLatest, "'via SHM/'"},
    // v2.4.8 .. v2.7.8 (no bootstrap line before v2.4.8); v2.8.3 .. v2.23.4; v2.24.3 on
    {NcclLineForm::kBootstrapIndexed, NcclVersionCode(4, 8), Upto(7), "'Bootstrap : Using [0]IF'"},
    {NcclLineForm::kBootstrapSpaced, NcclVersionCode(8), Upto(23), "'Bootstrap : Using IF:ADDR'"},
    {NcclLineForm::kBootstrapUnspaced, NcclVersionCode(24), kNcclLatest, "'Bootstrap: Using'"},
    // v2.3.5 .. v2.3.7; "Using network" from v2.6.4
    {NcclLineForm::kInternalNetwork, NcclVersionCode(3), Upto(3), "'Using internal Network'"},
    {NcclLineForm::kUsingNetwork, NcclVersionCode(6), kNcclLatest, "'Using network'"},
    // v2.3.7 only; "- Init COMPLETE" from v2.4.2
    {NcclLineForm::kCompleteWithoutInit, NcclVersionCode(3), Upto(3), "'... - COMPLETE'"},
    // v2.18.3 on (v2.18.1 prints none)
    {NcclLineForm::kInitStart, NcclVersionCode(18, 3), kNcclLatest, "'Init START'"},
    {NcclLineForm::kCudaDriverVersion, NcclVersionCode(13), kNcclLatest, "'cudaDriverVersion'"},
    {NcclLineForm::kNodesLine, NcclVersionCode(20), kNcclLatest, "'nRanks N nNodes M'"},
    {NcclLineForm::kInitTimings, NcclVersionCode(22), kNcclLatest, "'Init timings'"},
};
static_assert(std::size(kFormVersions) == kNcclLineForms);

constexpr size_t kMaxNamesListed = 8;

std::string JoinCapped(const std::vector<std::string>& names, size_t cap = kMaxNamesListed) {
  std::string out = fmt::format(
      "{}",
      fmt::join(names.begin(),
                names.begin() + static_cast<std::ptrdiff_t>(std::min(cap, names.size())), ", "));
  if (names.size() > cap) out += fmt::format(" and {} more", names.size() - cap);
  return out;
}

// "2.18.1" of "2.18.1+cuda12.1": the part PyTorch prints too.
std::string_view VersionNumber(std::string_view v) { return v.substr(0, v.find('+')); }

// The version code of a 2.x version ("2.18.3+cuda12.2" -> 18003); -1 for
// another major. A version without a patch ("2.18") is its minor's first.
int CodeOf(std::string_view version) {
  if (!StartsWith(version, "2.")) return -1;
  std::string_view rest = VersionNumber(version.substr(2));
  size_t dot = rest.find('.');
  auto minor = ParseInt(rest.substr(0, dot));
  if (!minor || *minor < 0 || *minor >= 99) return -1;
  std::optional<int64_t> patch;
  if (dot != std::string_view::npos) patch = ParseInt(rest.substr(dot + 1));
  const int p = patch && *patch >= 0 && *patch < kAnyPatch ? static_cast<int>(*patch) : 0;
  return NcclVersionCode(static_cast<int>(*minor), p);
}

void AddOnce(std::vector<std::string>& list, std::string item) {
  if (std::find(list.begin(), list.end(), item) == list.end()) list.push_back(std::move(item));
}

}  // namespace

std::string NcclVersionRangeText(int lo, int hi) {
  const int lo_minor = lo / 1000;
  const int lo_patch = lo % 1000;
  const std::string from =
      lo_patch == 0 ? fmt::format("2.{}", lo_minor) : fmt::format("2.{}.{}", lo_minor, lo_patch);
  if (hi >= kNcclLatest) return from + " or later";
  const int hi_minor = hi / 1000;
  if (hi_minor == lo_minor) {
    return lo_patch == 0 ? from : fmt::format("{} or a later 2.{}", from, hi_minor);
  }
  return fmt::format("{}-2.{}", from, hi_minor);
}

NcclFormsVersion NcclVersionOfForms(const NcclProcess& p, std::string_view source) {
  NcclFormsVersion out;
  const FormVersions* lo_by = nullptr;
  const FormVersions* hi_by = nullptr;
  for (const FormVersions& f : kFormVersions) {
    if (!(p.line_forms & (uint32_t{1} << static_cast<unsigned>(f.form)))) continue;
    const int lo = f.lo;
    const int hi = f.hi;
    if (!lo_by || lo > out.lo) {
      out.lo = lo;
      lo_by = &f;
    }
    if (hi < out.hi) {
      out.hi = hi;
      hi_by = &f;
    }
  }
  if (!lo_by || out.lo > out.hi) return {};  // nothing seen, or forms of no one version
  for (const FormVersions* f : {lo_by, hi_by}) {
    if (!f) continue;
    uint64_t line = p.line_form_lines[static_cast<size_t>(f->form)];
    AddOnce(out.forms, fmt::format("{} ({}) at {}", f->text, NcclVersionRangeText(f->lo, f->hi),
                                   NcclLogPlace(source, line)));
    if (line != 0 && (out.first_line == 0 || line < out.first_line)) out.first_line = line;
  }
  return out;
}

void CheckNcclVersionMismatch(const NcclLogSummary& log, std::string_view source,
                              std::vector<Finding>& out) {
  // By version number; each with who printed it and which lines say so.
  struct Seen {
    std::string shown;  // the fullest form printed
    std::vector<std::string> names;
    std::set<std::string> from;
    std::vector<std::string> forms;  // the line forms a version was inferred from
    uint64_t line = 0;
  };
  std::map<std::string, Seen> by_version;
  std::vector<int> codes;  // of the versions printed
  auto add = [&](std::string_view version, std::string name, std::string from, uint64_t line) {
    Seen& seen = by_version[std::string(VersionNumber(version))];
    if (version.size() > seen.shown.size()) seen.shown = std::string(version);
    if (!name.empty()) AddOnce(seen.names, std::move(name));
    seen.from.insert(std::move(from));
    if (line != 0 && (seen.line == 0 || line < seen.line)) seen.line = line;
    codes.push_back(CodeOf(version));
  };
  for (const NcclProcess& p : log.processes) {
    if (!p.version.empty()) add(p.version, p.Name(), "NCCL's version line", p.version_line);
  }
  for (const std::string& v : log.unattributed_versions)
    add(v, "", "NCCL's version line, printed without a prefix", 0);
  for (const std::string& v : log.torch_error_versions)
    add(v, "", "PyTorch's error text", log.torch_error_version_line);
  for (const NcclTorchGroup& g : log.torch_groups) {
    if (!g.nccl_version.empty())
      add(g.nccl_version, g.process, "PyTorch's ProcessGroupNCCL line", 0);
  }
  // Processes that printed no version: the versions their line forms
  // allow, where no version printed in the log is among them; those that
  // allow a common version are taken for one.
  struct Inferred {
    NcclFormsVersion range;
    std::vector<std::string> names;
  };
  std::vector<Inferred> inferred;
  for (const NcclProcess& p : log.processes) {
    if (!p.version.empty()) continue;
    NcclFormsVersion range = NcclVersionOfForms(p, source);
    if (!range.Narrowed()) continue;
    if (std::any_of(codes.begin(), codes.end(),
                    [&](int c) { return c >= range.lo && c <= range.hi; })) {
      continue;
    }
    auto joins = std::find_if(inferred.begin(), inferred.end(), [&](const Inferred& i) {
      return std::max(i.range.lo, range.lo) <= std::min(i.range.hi, range.hi);
    });
    if (joins == inferred.end()) {
      inferred.push_back({std::move(range), {p.Name()}});
      continue;
    }
    joins->range.lo = std::max(joins->range.lo, range.lo);
    joins->range.hi = std::min(joins->range.hi, range.hi);
    for (std::string& f : range.forms) AddOnce(joins->range.forms, std::move(f));
    if (range.first_line != 0 &&
        (joins->range.first_line == 0 || range.first_line < joins->range.first_line)) {
      joins->range.first_line = range.first_line;
    }
    AddOnce(joins->names, p.Name());
  }
  // One group of versions alone, inferred, compares with nothing.
  if (!(by_version.empty() && inferred.size() < 2)) {
    for (Inferred& i : inferred) {
      std::string shown = NcclVersionRangeText(i.range.lo, i.range.hi);
      Seen& seen = by_version["~" + shown];
      seen.shown = shown;
      seen.names = std::move(i.names);
      seen.from.insert("NCCL's line forms");
      i.range.forms.resize(std::min<size_t>(i.range.forms.size(), 4));
      seen.forms = std::move(i.range.forms);
      seen.line = i.range.first_line;
    }
  }
  if (by_version.size() < 2 && log.version_mismatch_warnings == 0) return;
  std::vector<std::string> parts;
  std::set<std::string> how;
  for (const auto& [number, seen] : by_version) {
    std::string from = fmt::format("{}", fmt::join(seen.from, ", "));
    if (!seen.forms.empty()) from += fmt::format(": {}", fmt::join(seen.forms, ", "));
    how.insert(seen.from.begin(), seen.from.end());
    parts.push_back(seen.names.empty() ? fmt::format("{} (from {})", seen.shown, from)
                                       : fmt::format("{} on {} (from {})", seen.shown,
                                                     JoinCapped(seen.names, 4), from));
  }
  Finding f;
  f.id = "distributed.nccl_version_mismatch";
  f.layer = Layer::kDistributed;
  f.severity = Severity::kCritical;
  f.summary = by_version.size() >= 2
                  ? fmt::format("the ranks run {} different NCCL versions", by_version.size())
                  : "NCCL reported mismatched versions between ranks";
  f.evidence = {{"versions", fmt::format("{}", fmt::join(parts, "; "))},
                {"distinct_versions", static_cast<int64_t>(by_version.size())},
                {"nccl_mismatch_warnings", static_cast<int64_t>(log.version_mismatch_warnings)},
                {"inferred_from", fmt::format("{}", fmt::join(how, "; "))}};
  std::vector<std::string> places;
  for (const auto& [number, seen] : by_version) {
    if (seen.line != 0)
      places.push_back(fmt::format("{} ({})", NcclLogPlace(source, seen.line), seen.shown));
  }
  if (!places.empty())
    f.evidence.push_back({"version_lines", fmt::format("{}", fmt::join(places, "; "))});
  // NCCL's own WARN, quoted where it said so.
  for (const NcclWarning& w : log.warnings) {
    if (!StartsWith(w.text, "Mismatched NCCL version") &&
        w.text.find("version mismatch") == std::string::npos) {
      continue;
    }
    f.evidence.push_back({"warn", w.text});
    f.evidence.push_back({"first_at", NcclLogPlace(source, w.first_line)});
    break;
  }
  f.next =
      "run one image (or one torch wheel with its bundled NCCL) on every host; compare with "
      "`python3 -c 'import torch; print(torch.cuda.nccl.version())'` on each host";
  if (!inferred.empty()) {
    f.next +=
        "; a version told by line forms alone is a range: NCCL_DEBUG=VERSION prints each "
        "process's own";
  }
  out.push_back(std::move(f));
}

}  // namespace stallscope
