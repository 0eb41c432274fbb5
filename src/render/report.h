// Rendering a Report (doctor, report, run): readable text for people and the
// `stallscope.report/1` JSON of DESIGN.md for machines. Pure: a Report in, a
// string out. Thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "analyze/finding.h"

namespace stallscope {

struct ReportHeader {
  std::string command;  // "doctor"
  std::string hostname;
  std::string time_utc;  // ISO 8601
  double window_seconds = 0;
};

std::string RenderReportText(const ReportHeader& header, const Report& report);
// One evidence value as the text report prints it (numbers to 4 significant digits).
std::string EvidenceText(const EvidenceValue& value);
// The word a text layer line prints for the worst severity among that layer's
// findings: "CRITICAL", "warning" or "ok (notes)" (doctor and report text share it).
std::string_view SeverityWord(Severity worst);
nlohmann::ordered_json ReportToJson(const ReportHeader& header, const Report& report);

}  // namespace stallscope
