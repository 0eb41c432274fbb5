// The run file's `findings` and `notes` tables: what a command concluded
// about a run from outside its timeline (today the job's NCCL logs, which
// `run` reads once the job ends), kept so that `report RUN.db` and
// `doctor --run RUN.db` print what `run` printed. Written by
// RunWriter::AppendFindings, read by ReadStoredFindings (run_file.h); the
// tables are created with their first rows, so a run without such findings
// has none, and readers treat missing tables as no rows. Columns are in
// docs/timeline-schema.md. This file holds the SQL and the codec of a
// finding's evidence and impact (JSON text, in the stallscope.report/1 form);
// internal to store/. Pure; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "sample/finding.h"

namespace stallscope::store {

inline constexpr std::string_view kCreateStoredFindings = R"sql(
CREATE TABLE IF NOT EXISTS findings (
  source TEXT NOT NULL,
  id TEXT NOT NULL,
  layer TEXT NOT NULL,
  severity TEXT NOT NULL,
  summary TEXT NOT NULL,
  evidence_json TEXT NOT NULL,
  next TEXT NOT NULL,
  impact_json TEXT
);
CREATE TABLE IF NOT EXISTS notes (
  source TEXT NOT NULL,
  text TEXT NOT NULL
);
)sql";

// {"name": value, ...} in evidence order; numbers stay integer or real.
std::string EvidenceToJsonText(const std::vector<Evidence>& evidence);
// `what` names the row in errors ("RUN.db: findings row 3").
Result<std::vector<Evidence>> EvidenceFromJsonText(std::string_view text, std::string_view what);

std::string ImpactToJsonText(const Impact& impact);
Result<Impact> ImpactFromJsonText(std::string_view text, std::string_view what);

}  // namespace stallscope::store
