// The report of a triage: findings sorted into triage order (memory, io,
// network, distributed, code), each layer's status and the verdict. Pure;
// thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sample/finding.h"

namespace stallscope {

// Sorts findings into triage order and picks the verdict: a critical
// finding that says the job stopped (IsJobStop), else the first critical
// finding in layer order, or "none".
Report MakeReport(std::vector<Finding> findings, const std::vector<Layer>& checked_layers,
                  std::vector<std::string> notes);
// The findings of a job that did not finish: a rank that died, a hang, the
// OOM killer. They are the verdict whatever else is critical (what went
// wrong before the stop is listed, in layer order).
bool IsJobStop(std::string_view id);

// The same for what a set of rules concluded: `notes` first, then the rules'.
Report ReportOf(FindingsWithNotes judged, const std::vector<Layer>& checked_layers,
                std::vector<std::string> notes);

// One finding per id across sources: `more`, from `source` ("trace",
// "nccl-log"), joins the finding of its id already in `findings` (raised by
// `existing_source`, "hook" or "run"): the more severe of the two leads
// (summary and next), the other's evidence follows with its names prefixed
// by the source ("trace.", "nccl_log."), and "sources" lists both. Without
// such a finding `more` is appended as it is.
void MergeFinding(std::vector<Finding>& findings, Finding more, std::string_view source,
                  std::string_view existing_source);

}  // namespace stallscope
