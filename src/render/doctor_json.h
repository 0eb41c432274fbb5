// The doctor's JSON (schema stallscope.report/1 plus facts, data, bench,
// baseline, run_file, triage and a why on each layer not checked), its HTML
// page, and the rule catalog as `doctor --rules` prints it (text and JSON).
// Pure.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "analyze/host/doctor_triage.h"
#include "core/status.h"
#include "sample/finding.h"
#include "sample/snapshot.h"

namespace stallscope {

struct DoctorJsonInput {
  const Snapshot* snapshot = nullptr;
  const Report* report = nullptr;
  const Triage* triage = nullptr;
  const std::vector<std::pair<Layer, std::string>>* why = nullptr;
  std::string baseline_file;  // --baseline; "" when none
  double drift_percent = 0;
  std::string saved_baseline;  // --save-baseline; "" when none
};

nlohmann::ordered_json DoctorJson(const DoctorJsonInput& in);

// The doctor's HTML page (render/html_report.h): the report, the facts, the
// host's figures and, with --run, the run's charts.
std::string RenderDoctorHtml(const Snapshot& snapshot, const Report& report, const Triage& t,
                             const std::vector<std::pair<Layer, std::string>>& why,
                             const HostBaseline& now);

// `doctor --rules`: the terms explained once, then per rule its id, layer,
// what it checks, threshold, reasoning, public reference and alert, as prose.
// The JSON is {"schema": "stallscope.rules/1", "version", "rules": [...]},
// each rule with "reasoning", "reference" (or null) and "prometheus".
std::string RulesText();
nlohmann::ordered_json RulesJson();
// `doctor --rules` in the format asked for: text (the default), json (also
// with --json alone), or prometheus (the triage as recording and alerting
// rules, every duration a multiple of `window`, default 5m). InvalidArgument
// naming the flag for --json with another format, --window without
// prometheus, a bad window or an unknown format.
Result<std::string> RulesOutput(const std::string& format, bool json, const std::string& window);

}  // namespace stallscope
