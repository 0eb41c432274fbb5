// Which NCCL versions the processes of a log run, and the finding when they
// differ (distributed.nccl_version_mismatch): from NCCL's version lines,
// PyTorch's lines that name a version, NCCL's own mismatch WARN, and, for a
// process that printed no version line (an NCCL_DEBUG_FILE log before 2.22,
// where the version went to stdout; an excerpt), the line forms it printed,
// each of which only some versions print (sample/nccl_log.h NcclLineForm).
// Pure; called by CheckNcclLog (nccl_log_rules.h). The catalog holds the
// rule under its id.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sample/finding.h"
#include "sample/nccl_log.h"

namespace stallscope {

// The NCCL 2.x versions a process's line forms allow: minors lo..hi
// (hi = kNcclLatestMinor when open-ended), each form's versions widened by
// one minor on each side (a build between tags may print a form early). `forms`: each form that
// narrowed it, as "'Bootstrap : Using [0]...' (2.4-2.7) at FILE:LINE".
inline constexpr int kNcclLatestMinor = 99;
struct NcclFormsVersion {
  int lo = 0;
  int hi = kNcclLatestMinor;
  std::vector<std::string> forms;
  uint64_t first_line = 0;  // the first line of a form that narrowed it
  bool Narrowed() const { return lo > 0 || hi < kNcclLatestMinor; }
};
// Empty (not Narrowed) when the process printed no version-bound form, or
// forms no one version prints together (then they tell nothing).
NcclFormsVersion NcclVersionOfForms(const NcclProcess& p, std::string_view source);
// "2.7", "2.4-2.7", "2.18 or later".
std::string NcclVersionRangeText(int lo, int hi);

// distributed.nccl_version_mismatch (see the header paragraph).
void CheckNcclVersionMismatch(const NcclLogSummary& log, std::string_view source,
                              std::vector<Finding>& out);

}  // namespace stallscope
