#include <variant>

#include "render/report.h"

namespace stallscope {
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

}  // namespace stallscope
