// Which NCCL versions the processes of a log run, and the finding when they
// differ (distributed.nccl_version_mismatch): from NCCL's version lines,
// PyTorch's lines that name a version, NCCL's own mismatch WARN, and, for a
// process that printed no version line (an NCCL_DEBUG_FILE log before 2.22,
// where the version went to stdout; an excerpt), the line forms it printed,
// each of which only some versions print (sample/nccl_log.h NcclLineForm).
// Pure; called by CheckNcclLog (rules.h). The catalog holds the
// rule under its id.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sample/finding.h"
#include "sample/nccl_log.h"

namespace stallscope {

// A 2.x version as one number, minor * 1000 + patch ("2.18.3" -> 18003);
// a range's upper end is the last patch of its minor (NcclVersionCode(M, kAnyPatch)).
inline constexpr int kAnyPatch = 999;
constexpr int NcclVersionCode(int minor, int patch = 0) { return minor * 1000 + patch; }
inline constexpr int kNcclLatest = NcclVersionCode(99, kAnyPatch);

// The NCCL 2.x versions a process's line forms allow: lo..hi (version codes;
// hi = kNcclLatest when open-ended), exactly the tags that print each form.
// `forms`: each form that narrowed it, as "'Bootstrap : Using [0]IF' (2.4.8-2.7)
// at FILE:LINE".
struct NcclFormsVersion {
  int lo = 0;
  int hi = kNcclLatest;
  std::vector<std::string> forms;
  uint64_t first_line = 0;  // the first line of a form that narrowed it
  bool Narrowed() const { return lo > 0 || hi < kNcclLatest; }
};
// Empty (not Narrowed) when the process printed no version-bound form, or
// forms no one version prints together (then they tell nothing).
NcclFormsVersion NcclVersionOfForms(const NcclProcess& p, std::string_view source);
// "2.3", "2.4.8-2.7", "2.18.3 or later" (version codes; a patch shown only where
// a form starts inside a minor).
std::string NcclVersionRangeText(int lo, int hi);

// distributed.nccl_version_mismatch (see the header paragraph).
void CheckNcclVersionMismatch(const NcclLogSummary& log, std::string_view source,
                              std::vector<Finding>& out);

}  // namespace stallscope
