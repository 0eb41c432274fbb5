// Rendering a Report (doctor, report, run): readable text for people and the
// `stallscope.report/1` JSON (docs/findings.md) for machines. Pure: a Report in, a
// string out. Thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "sample/finding.h"

namespace stallscope {

struct ReportHeader {
  std::string command;  // "doctor"
  std::string hostname;
  std::string time_utc;  // ISO 8601
  double window_seconds = 0;
};

std::string RenderReportText(const ReportHeader& header, const Report& report);
// The same under a "findings:" heading, without the opening line about the
// sampling, for reports of files (an NCCL log, Flight Recorder dumps) that
// were never sampled.
std::string RenderFindingsSection(const ReportHeader& header, const Report& report);
// One evidence value as the text report prints it (numbers to 4 significant digits).
std::string EvidenceText(const EvidenceValue& value);
// The word a text layer line prints for the worst severity among that layer's
// findings: "CRITICAL", "warning" or "ok (notes)" (doctor and report text share it).
std::string_view SeverityWord(Severity worst);
// One finding as the text outputs print it: "  [severity] id: summary", its
// evidence, its impact when measured, and its next check when with_next
// (doctor lists the next checks apart, in order).
std::string FindingText(const Finding& f, bool with_next);
// The verdict line: the verdict's finding, or none_reason when nothing is
// critical and nothing warns ("verdict: none — none_reason").
std::string VerdictText(const Report& report, std::string_view none_reason);
nlohmann::ordered_json ReportToJson(const ReportHeader& header, const Report& report);

}  // namespace stallscope
