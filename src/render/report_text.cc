#include <fmt/format.h>

#include <variant>

#include "render/report.h"

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

}  // namespace stallscope
