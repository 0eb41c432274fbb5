#include "render/report.h"

#include <fmt/format.h>

#include <variant>

#include "core/version.h"

namespace stallscope {

std::string EvidenceText(const EvidenceValue& value) {
  struct Visitor {
    std::string operator()(double v) const { return fmt::format("{:.4g}", v); }
    std::string operator()(int64_t v) const { return std::to_string(v); }
    std::string operator()(const std::string& v) const { return v.empty() ? "\"\"" : v; }
    std::string operator()(bool v) const { return v ? "true" : "false"; }
  };
  return std::visit(Visitor{}, value);
}

std::string_view SeverityWord(Severity worst) {
  switch (worst) {
    case Severity::kCritical:
      return "CRITICAL";
    case Severity::kWarning:
      return "warning";
    case Severity::kInfo:
      return "ok (notes)";
  }
  return "";
}

std::string FindingText(const Finding& f, bool with_next) {
  std::string out = fmt::format("  [{}] {}: {}\n", SeverityName(f.severity), f.id, f.summary);
  std::string evidence;
  for (const Evidence& e : f.evidence) {
    evidence += fmt::format("{}{}={}", evidence.empty() ? "" : ", ", e.name, EvidenceText(e.value));
  }
  if (!evidence.empty()) out += fmt::format("      evidence: {}\n", evidence);
  if (f.impact) {
    out += fmt::format("      impact:   {:.1f}% of wall time ({})\n", f.impact->wall_fraction * 100,
                       f.impact->basis);
  }
  if (with_next) out += fmt::format("      next:     {}\n", f.next);
  return out;
}

std::string VerdictText(const Report& report, std::string_view none_reason) {
  if (report.verdict.layer) {
    return fmt::format("verdict: {} — {}: {}\n", LayerName(*report.verdict.layer),
                       report.verdict.finding, report.verdict.summary);
  }
  size_t warnings = 0;
  for (const Finding& f : report.findings) warnings += f.severity == Severity::kWarning;
  return warnings == 0 ? fmt::format("verdict: none — {}\n", none_reason)
                       : fmt::format("verdict: none critical — {} warning(s) above\n", warnings);
}

namespace {

std::string LayerStatusText(const LayerStatus& l) {
  if (!l.checked) return "not checked yet";
  if (!l.worst) return "ok";
  return std::string(SeverityWord(*l.worst));
}

}  // namespace

std::string RenderReportText(const ReportHeader& header, const Report& report) {
  std::string out = fmt::format("stallscope {} on {} at {} (sampled {:.1f} s)\n\n", header.command,
                                header.hostname, header.time_utc, header.window_seconds);
  for (const LayerStatus& l : report.layers) {
    out += fmt::format("{:<12} {}\n", LayerName(l.layer), LayerStatusText(l));
    for (const Finding& f : report.findings) {
      if (f.layer == l.layer) out += FindingText(f, /*with_next=*/true);
    }
  }
  out += "\n";
  out += VerdictText(report, "no layer checked so far holds the job back");
  for (const std::string& note : report.notes) out += fmt::format("note: {}\n", note);
  return out;
}

namespace {

nlohmann::ordered_json EvidenceToJson(const std::vector<Evidence>& evidence) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const Evidence& e : evidence) {
    std::visit([&](const auto& v) { out[e.name] = v; }, e.value);
  }
  return out;
}

}  // namespace

nlohmann::ordered_json ReportToJson(const ReportHeader& header, const Report& report) {
  nlohmann::ordered_json out;
  out["schema"] = "stallscope.report/1";
  out["version"] = Version();
  out["command"] = header.command;
  out["host"] = header.hostname;
  out["time"] = header.time_utc;
  out["window_seconds"] = header.window_seconds;
  nlohmann::ordered_json verdict;
  if (report.verdict.layer) {
    verdict["layer"] = LayerName(*report.verdict.layer);
    verdict["finding"] = report.verdict.finding;
    verdict["summary"] = report.verdict.summary;
  } else {
    verdict["layer"] = "none";
  }
  out["verdict"] = verdict;
  nlohmann::ordered_json layers = nlohmann::ordered_json::array();
  for (const LayerStatus& l : report.layers) {
    layers.push_back({{"layer", LayerName(l.layer)},
                      {"status", !l.checked ? "not_checked"
                                 : l.worst  ? std::string(SeverityName(*l.worst))
                                            : "ok"}});
  }
  out["layers"] = layers;
  nlohmann::ordered_json findings = nlohmann::ordered_json::array();
  for (const Finding& f : report.findings) {
    nlohmann::ordered_json j;
    j["id"] = f.id;
    j["layer"] = LayerName(f.layer);
    j["severity"] = SeverityName(f.severity);
    j["summary"] = f.summary;
    j["evidence"] = EvidenceToJson(f.evidence);
    j["next"] = f.next;
    if (f.impact) {
      nlohmann::ordered_json impact;
      impact["wall_fraction"] = f.impact->wall_fraction;
      if (f.impact->seconds_per_epoch) impact["seconds_per_epoch"] = *f.impact->seconds_per_epoch;
      impact["basis"] = f.impact->basis;
      j["impact"] = impact;
    }
    findings.push_back(j);
  }
  out["findings"] = findings;
  out["notes"] = report.notes;
  return out;
}

std::string RenderFindingsSection(const ReportHeader& header, const Report& report) {
  const std::string text = RenderReportText(header, report);
  const size_t first_line = text.find('\n');
  return "findings:\n" + (first_line == std::string::npos ? text : text.substr(first_line + 1));
}

}  // namespace stallscope
