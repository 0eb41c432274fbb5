// The NCCL versions of a log's processes and distributed.nccl_version_mismatch
// (see nccl_log_versions.h).
#include "analyze/nccl_log_versions.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "analyze/nccl_log_causes.h"
#include "core/text.h"

namespace stallscope {
namespace {

// The versions that print each form, read in NCCL's sources at every tag
// from 2.3 (init.cc, bootstrap.cc, transport/{p2p,shm,net,net_ib}.cc). Wide
// where a form changed inside a release series: a form only ever widens the
// versions a process may run, so a wrong guess misses a mismatch, never
// makes one. Builds between tags (a container's NCCL, a patch release)
// may print a form one minor early or late: each range is widened by
// kSlack minors on each side before ranges are compared.
constexpr int kSlack = 1;
struct FormVersions {
  NcclLineForm form;
  int lo;
  int hi;
  const char* text;
};
constexpr FormVersions kFormVersions[] = {
    {NcclLineForm::kRingVia, 3, 6, "'Ring NN : a -> b via'"},
    {NcclLineForm::kChannelNoSubIndex, 7, 13, "'Channel NN : a[..] -> b[..] via P2P|NET'"},
    {NcclLineForm::kChannelSubIndex, 12, kNcclLatestMinor, "'Channel NN/M : ... via'"},
    {NcclLineForm::kDirectSharedMemory, 3, 12, "'via direct shared memory'"},
    {NcclLineForm::kShmSlash, 13, kNcclLatestMinor, "'via SHM/'"},
    {NcclLineForm::kBootstrapIndexed, 4, 7, "'Bootstrap : Using [0]IF'"},
    {NcclLineForm::kBootstrapSpaced, 8, 23, "'Bootstrap : Using IF:ADDR'"},
    {NcclLineForm::kBootstrapUnspaced, 24, kNcclLatestMinor, "'Bootstrap: Using'"},
    {NcclLineForm::kInternalNetwork, 3, 3, "'Using internal Network'"},
    {NcclLineForm::kUsingNetwork, 6, kNcclLatestMinor, "'Using network'"},
    {NcclLineForm::kCompleteWithoutInit, 3, 3, "'... - COMPLETE'"},
    {NcclLineForm::kInitStart, 18, kNcclLatestMinor, "'Init START'"},
    {NcclLineForm::kCudaDriverVersion, 13, kNcclLatestMinor, "'cudaDriverVersion'"},
    {NcclLineForm::kNodesLine, 20, kNcclLatestMinor, "'nRanks N nNodes M'"},
    {NcclLineForm::kInitTimings, 22, kNcclLatestMinor, "'Init timings'"},
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

// The minor of a 2.x version ("2.18.3+cuda12.2" -> 18); -1 for another major.
int MinorOf(std::string_view version) {
  if (!StartsWith(version, "2.")) return -1;
  std::string_view rest = version.substr(2);
  auto minor = ParseInt(rest.substr(0, rest.find('.')));
  return minor && *minor >= 0 && *minor < kNcclLatestMinor ? static_cast<int>(*minor) : -1;
}

void AddOnce(std::vector<std::string>& list, std::string item) {
  if (std::find(list.begin(), list.end(), item) == list.end()) list.push_back(std::move(item));
}

}  // namespace

std::string NcclVersionRangeText(int lo, int hi) {
  if (hi >= kNcclLatestMinor) return fmt::format("2.{} or later", lo);
  if (lo == hi) return fmt::format("2.{}", lo);
  return fmt::format("2.{}-2.{}", lo, hi);
}

NcclFormsVersion NcclVersionOfForms(const NcclProcess& p, std::string_view source) {
  NcclFormsVersion out;
  const FormVersions* lo_by = nullptr;
  const FormVersions* hi_by = nullptr;
  for (const FormVersions& f : kFormVersions) {
    if (!(p.line_forms & (uint32_t{1} << static_cast<unsigned>(f.form)))) continue;
    const int lo = f.lo - kSlack;
    const int hi = f.hi >= kNcclLatestMinor ? kNcclLatestMinor : f.hi + kSlack;
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
  std::vector<int> minors;  // of the versions printed
  auto add = [&](std::string_view version, std::string name, std::string from, uint64_t line) {
    Seen& seen = by_version[std::string(VersionNumber(version))];
    if (version.size() > seen.shown.size()) seen.shown = std::string(version);
    if (!name.empty()) AddOnce(seen.names, std::move(name));
    seen.from.insert(std::move(from));
    if (line != 0 && (seen.line == 0 || line < seen.line)) seen.line = line;
    minors.push_back(MinorOf(version));
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
    if (std::any_of(minors.begin(), minors.end(),
                    [&](int m) { return m >= range.lo && m <= range.hi; })) {
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
