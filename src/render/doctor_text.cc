#include "render/doctor_text.h"

#include <fmt/format.h>

#include "analyze/host/triage_table.h"
#include "render/report.h"

namespace stallscope {
namespace {

std::string StatusText(const LayerStatus& l, const DoctorTextInput& in) {
  if (!l.checked) {
    for (const auto& [layer, why] : in.not_checked_why) {
      if (layer == l.layer) return "not checked: " + why;
    }
    return "not checked";
  }
  if (!l.worst) return "ok";
  return std::string(SeverityWord(*l.worst));
}

}  // namespace

std::string RenderTriageTableText() {
  std::string out = "suspects and quick checks, per layer:\n";
  bool first = true;
  Layer current = Layer::kMemory;
  for (const Suspect& s : TriageTable()) {
    if (first || s.layer != current) {
      out += fmt::format("  {}\n", LayerName(s.layer));
      current = s.layer;
      first = false;
    }
    out += fmt::format("    - {}\n        check: {}\n        stallscope: {}   [{}]\n", s.suspect,
                       s.quick_check, s.stallscope, s.findings);
  }
  return out;
}

std::string RenderDoctorText(const DoctorTextInput& in) {
  static const Report kEmpty;
  const Report& report = in.report ? *in.report : kEmpty;
  std::string out = fmt::format("stallscope doctor on {} at {} (sampled {:.1f} s)\n\n", in.host,
                                in.time_utc, in.window_seconds);
  for (const LayerStatus& l : report.layers) {
    out += fmt::format("{:<12} {}\n", LayerName(l.layer), StatusText(l, in));
    for (const auto& [layer, fact] : in.layer_facts) {
      if (layer == l.layer) out += fmt::format("  . {}\n", fact);
    }
    for (const Finding& f : report.findings) {
      if (f.layer == l.layer) out += FindingText(f, /*with_next=*/false);
    }
  }
  out += "\n";
  out += VerdictText(report, "no layer checked holds the job back");
  // The next checks, in the order to run them: critical first, then
  // warnings, each group in triage order (the findings already are).
  std::vector<const Finding*> order;
  for (Severity s : {Severity::kCritical, Severity::kWarning, Severity::kInfo}) {
    for (const Finding& f : report.findings) {
      if (f.severity == s) order.push_back(&f);
    }
  }
  if (!order.empty()) {
    out += "\nnext checks, in order:\n";
    int n = 0;
    for (const Finding* f : order) out += fmt::format("  {}. {}: {}\n", ++n, f->id, f->next);
  }
  for (const std::string& note : report.notes) out += fmt::format("note: {}\n", note);
  out += "\n" + RenderTriageTableText();
  return out;
}

}  // namespace stallscope
