#include "render/doctor_json.h"

#include <fmt/format.h>

#include <algorithm>

#include "analyze/alert_rules.h"
#include "analyze/catalog.h"
#include "analyze/host/triage_table.h"
#include "core/json_text.h"
#include "core/version.h"
#include "render/html_report.h"
#include "render/prometheus_rules.h"
#include "render/report.h"

namespace stallscope {

namespace {

// Where a catalog id stands in the fleet's rules: the alert's name with its
// levels, "none: why" when it has none for a reason, or "none".
std::string PrometheusLine(std::string_view id) {
  std::vector<std::string> levels;
  for (const RuleGroup& g : PrometheusRules()) {
    for (const AlertRule& a : g.alerts) {
      std::string level(SeverityName(a.severity));
      if (a.id == id && std::find(levels.begin(), levels.end(), level) == levels.end()) {
        levels.push_back(level);
      }
    }
  }
  if (!levels.empty()) return fmt::format("{} ({})", AlertName(id), fmt::join(levels, ", "));
  for (const RuleWithoutAlert& r : RulesWithoutAlerts()) {
    if (r.id == id) return fmt::format("none: {}", r.why);
  }
  return "none";
}

// The terms a reader meets first, explained once above the rules.
constexpr std::string_view kRulesPreface =
    "stallscope's rules, one per finding it can raise.\n"
    "\n"
    "Each finding belongs to a layer: memory, io, network, distributed or code, the\n"
    "parts of a training job that can slow it down. A rule looks at evidence: numbers\n"
    "read from the kernel, the GPU driver, NCCL's log, or the hook (the small Python\n"
    "module that `stallscope run` loads into a PyTorch job to time its steps and data\n"
    "waits). When the evidence crosses the threshold below, the finding is raised with\n"
    "a severity (info, warning, critical) and a next step: the command or change that\n"
    "confirms or fixes it. `doctor --rules --json` gives the same catalog to scripts.\n"
    "\n";

// A catalog field as a sentence: its own full stop, or one added.
std::string Sentence(std::string_view text) {
  std::string out(text);
  if (!out.ends_with('.')) out += '.';
  return out;
}

}  // namespace

std::string RulesText() {
  std::string out(kRulesPreface);
  for (const Rule& r : RuleCatalog()) {
    out += fmt::format("{}  [{} layer]\n  It looks at {}\n  Raised {}\n  Why: {}\n", r.id,
                       LayerName(r.layer), Sentence(r.checks), Sentence(r.threshold),
                       Sentence(r.reasoning));
    if (!r.reference.empty()) out += fmt::format("  Reference: {}\n", r.reference);
    std::string alert = PrometheusLine(r.id);
    if (alert.starts_with("none: ")) {
      out += fmt::format("  No Prometheus alert: {}\n", Sentence(alert.substr(6)));
    } else if (alert != "none") {
      out += fmt::format("  Prometheus alert: {}\n", Sentence(alert));
    }
    out += "\n";
  }
  return out;
}

nlohmann::ordered_json RulesJson() {
  nlohmann::ordered_json rules = nlohmann::ordered_json::array();
  for (const Rule& r : RuleCatalog()) {
    rules.push_back({{"id", r.id},
                     {"layer", LayerName(r.layer)},
                     {"checks", r.checks},
                     {"threshold", r.threshold},
                     {"reasoning", r.reasoning},
                     {"reference", r.reference.empty() ? nlohmann::ordered_json(nullptr)
                                                       : nlohmann::ordered_json(r.reference)},
                     {"prometheus", PrometheusLine(r.id)}});
  }
  nlohmann::ordered_json out;
  out["schema"] = "stallscope.rules/1";
  out["version"] = Version();
  out["rules"] = rules;
  return out;
}

nlohmann::ordered_json DoctorJson(const DoctorJsonInput& in) {
  const Snapshot& snapshot = *in.snapshot;
  const Report& report = *in.report;
  const Triage& t = *in.triage;
  const std::vector<std::pair<Layer, std::string>>& why = *in.why;
  ReportHeader header{"doctor", snapshot.hostname, snapshot.time_utc, snapshot.interval_seconds};
  nlohmann::ordered_json j = ReportToJson(header, report);
  for (auto& layer : j["layers"]) {
    if (layer["status"] != "not_checked") continue;
    for (const auto& [l, text] : why) {
      if (LayerName(l) == layer["layer"].get<std::string>()) layer["why"] = text;
    }
  }
  nlohmann::ordered_json facts = nlohmann::ordered_json::array();
  for (const auto& [l, text] : t.facts) facts.push_back({{"layer", LayerName(l)}, {"fact", text}});
  j["facts"] = facts;
  if (t.census) {
    j["data"] = {{"path", t.census->path},
                 {"files", t.census->files},
                 {"bytes", t.census->bytes},
                 {"fs_type", t.census->fs_type},
                 {"remote", t.census->remote}};
  }
  if (t.bench) {
    j["bench"] = {{"path", t.bench->path},
                  {"sequential_bytes_per_s", t.bench->sequential_bytes_per_second},
                  {"random_iops", t.bench->random_iops},
                  {"direct", t.bench->direct}};
  }
  if (!in.baseline_file.empty()) {
    j["baseline"] = {{"file", in.baseline_file},
                     {"drift_percent", in.drift_percent},
                     {"not_compared", t.not_compared}};
  }
  if (!in.saved_baseline.empty()) j["saved_baseline"] = in.saved_baseline;
  if (t.run) j["run_file"] = t.run->path;
  nlohmann::ordered_json triage = nlohmann::ordered_json::array();
  for (const Suspect& s : TriageTable()) {
    triage.push_back({{"layer", LayerName(s.layer)},
                      {"suspect", s.suspect},
                      {"quick_check", s.quick_check},
                      {"stallscope", s.stallscope},
                      {"findings", s.findings}});
  }
  j["triage"] = triage;
  return j;
}

std::string RenderDoctorHtml(const Snapshot& snapshot, const Report& report, const Triage& t,
                             const std::vector<std::pair<Layer, std::string>>& why,
                             const HostBaseline& now) {
  HtmlReportInput in;
  in.command = "doctor";
  in.host = snapshot.hostname;
  in.time_utc = snapshot.time_utc;
  in.report = &report;
  in.not_checked_why = why;
  if (t.run) {
    in.timeline = &t.run->timeline;
    in.run_file = t.run->path;
  }
  for (const auto& [layer, fact] : t.facts) {
    in.facts.push_back({std::string(LayerName(layer)), fact});
  }
  in.host_baseline = &now;
  return RenderHtmlReport(in);
}

Result<std::string> RulesOutput(const std::string& asked, bool json, const std::string& window) {
  std::string format = asked.empty() ? (json ? "json" : "text") : asked;
  if (json && format != "json") {
    return Status::InvalidArgument("--json and --format " + format + ": give one of them");
  }
  if (!window.empty() && format != "prometheus") {
    return Status::InvalidArgument("--window is for --format prometheus");
  }
  if (format == "text") return RulesText();
  if (format == "json") return JsonText(RulesJson()) + "\n";
  if (format == "prometheus") {
    PrometheusRuleOptions options;
    if (!window.empty()) {
      Result<double> seconds = ParseAlertWindow(window);
      if (!seconds.ok()) return Status::InvalidArgument("--window " + seconds.status().message());
      options.window_seconds = *seconds;
    }
    return PrometheusRulesYaml(options);
  }
  return Status::InvalidArgument("--format " + format + ": expected text, json or prometheus");
}

}  // namespace stallscope
