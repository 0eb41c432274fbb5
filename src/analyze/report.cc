#include "analyze/report.h"

#include <algorithm>

namespace stallscope {

Report MakeReport(std::vector<Finding> findings, const std::vector<Layer>& checked_layers,
                  std::vector<std::string> notes) {
  std::stable_sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
    if (a.layer != b.layer) return a.layer < b.layer;
    return a.severity > b.severity;
  });
  Report report;
  report.notes = std::move(notes);
  for (Layer layer : kTriageOrder) {
    LayerStatus status{layer, false, std::nullopt};
    status.checked =
        std::find(checked_layers.begin(), checked_layers.end(), layer) != checked_layers.end();
    for (const Finding& f : findings) {
      if (f.layer != layer) continue;
      status.checked = true;
      if (!status.worst || f.severity > *status.worst) status.worst = f.severity;
    }
    report.layers.push_back(status);
  }
  for (const Finding& f : findings) {
    if (f.severity == Severity::kCritical) {
      report.verdict = Verdict{f.layer, f.id, f.summary};
      break;
    }
  }
  report.findings = std::move(findings);
  return report;
}

}  // namespace stallscope
