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
  // A job that stopped: its stop first, whatever the layer.
  for (int pass = 0; pass < 2 && !report.verdict.layer; ++pass) {
    for (const Finding& f : findings) {
      if (f.severity == Severity::kCritical && (pass == 1 || IsJobStop(f.id))) {
        report.verdict = Verdict{f.layer, f.id, f.summary};
        break;
      }
    }
  }
  report.findings = std::move(findings);
  return report;
}

bool IsJobStop(std::string_view id) {
  return id == "distributed.rank_died" || id == "distributed.hang" || id == "memory.oom_killed";
}

Report ReportOf(FindingsWithNotes judged, const std::vector<Layer>& checked_layers,
                std::vector<std::string> notes) {
  for (std::string& n : judged.notes) notes.push_back(std::move(n));
  return MakeReport(std::move(judged.findings), checked_layers, std::move(notes));
}

void MergeFinding(std::vector<Finding>& findings, Finding more, std::string_view source,
                  std::string_view existing_source) {
  auto same = std::find_if(findings.begin(), findings.end(),
                           [&](const Finding& f) { return f.id == more.id; });
  if (same == findings.end()) {
    findings.push_back(std::move(more));
    return;
  }
  Finding& kept = *same;
  // The summary that does not lead is kept in the evidence, named by the
  // source whose words it is.
  std::string summary_source(source);
  if (more.severity > kept.severity) {
    std::swap(kept.summary, more.summary);
    std::swap(kept.next, more.next);
    kept.severity = more.severity;
    summary_source = existing_source;
  }
  std::string summary = std::move(more.summary);
  auto sources = std::find_if(kept.evidence.begin(), kept.evidence.end(),
                              [](const Evidence& e) { return e.name == "sources"; });
  std::string* listed =
      sources == kept.evidence.end() ? nullptr : std::get_if<std::string>(&sources->value);
  if (listed != nullptr) {
    *listed += ", " + std::string(source);
  } else {
    kept.evidence.push_back({"sources", std::string(existing_source) + ", " + std::string(source)});
  }
  std::string prefix(source);
  std::replace(prefix.begin(), prefix.end(), '-', '_');
  prefix += ".";
  for (Evidence& e : more.evidence) {
    if (e.name == "source") continue;
    kept.evidence.push_back({prefix + e.name, std::move(e.value)});
  }
  std::replace(summary_source.begin(), summary_source.end(), '-', '_');
  kept.evidence.push_back({summary_source + ".summary", std::move(summary)});
}

}  // namespace stallscope
