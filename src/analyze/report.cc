#include <algorithm>

#include "analyze/finding.h"

namespace stallscope {

std::string_view LayerName(Layer layer) {
  switch (layer) {
    case Layer::kMemory:
      return "memory";
    case Layer::kIo:
      return "io";
    case Layer::kNetwork:
      return "network";
    case Layer::kDistributed:
      return "distributed";
    case Layer::kCode:
      return "code";
  }
  return "unknown";
}

std::string_view SeverityName(Severity severity) {
  switch (severity) {
    case Severity::kInfo:
      return "info";
    case Severity::kWarning:
      return "warning";
    case Severity::kCritical:
      return "critical";
  }
  return "unknown";
}

std::optional<Layer> LayerFromName(std::string_view name) {
  for (Layer layer : kTriageOrder) {
    if (LayerName(layer) == name) return layer;
  }
  return std::nullopt;
}

std::optional<Severity> SeverityFromName(std::string_view name) {
  for (Severity severity : {Severity::kInfo, Severity::kWarning, Severity::kCritical}) {
    if (SeverityName(severity) == name) return severity;
  }
  return std::nullopt;
}

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
