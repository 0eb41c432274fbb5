// The triage as Prometheus rules: the recording rules and alerts that give a
// fleet the catalog's checks (analyze/catalog.cc) from the series
// `stallscope exporter` serves, with the same thresholds (the named
// constants of the rule files, never a copy of their values) and the
// catalog's sustained conditions as `for:` windows and subqueries.
// `stallscope doctor --rules --format prometheus` prints them through
// render/prometheus_rules.h; deploy/prometheus/stallscope.rules.yml is that
// output, committed.
//
// Every duration is a multiple of one window (the rate() window, 5 minutes
// by default), so a short-window variant for tests comes from the same code.
// Catalog ids that need what a node's series cannot give (a dataset walk, an
// NCCL log, two runs) are listed with the reason instead. Pure; thread-safe.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "sample/finding.h"

namespace stallscope {

inline constexpr double kDefaultAlertWindowSeconds = 300;
// Page size the swap rules turn bytes into pages with (the exporter serves
// bytes; the catalog counts 4 KiB pages).
inline constexpr double kAlertPageBytes = 4096;

struct PrometheusRuleOptions {
  double window_seconds = kDefaultAlertWindowSeconds;
};

struct RecordingRule {
  std::string record;
  std::string expr;
};

struct AlertRule {
  std::string alert;  // "Stallscope" + the id in CamelCase
  std::string id;     // the catalog id, the `id` label
  Severity severity = Severity::kWarning;
  std::string problem;  // a `problem` label when one id has several conditions
  std::string expr;
  double for_seconds = 0;
  std::string summary;  // annotations: Go templates over $labels and $value
  std::string next;
};

struct RuleGroup {
  std::string name;
  std::vector<RecordingRule> records;
  std::vector<AlertRule> alerts;
};

struct RuleWithoutAlert {
  std::string_view id;
  std::string_view why;
};

std::vector<RuleGroup> PrometheusRules(const PrometheusRuleOptions& options = {});
// Every catalog id that has no alert, with the reason; together with the
// alerts' ids, this is the whole catalog (a unit test checks it).
std::span<const RuleWithoutAlert> RulesWithoutAlerts();

// "io.input_bound" -> "StallscopeIoInputBound".
std::string AlertName(std::string_view id);
// "5m", "30s", "1h" or whole seconds ("300") -> seconds; between 1 s and
// 24 h. InvalidArgument naming the text otherwise.
Result<double> ParseAlertWindow(std::string_view text);
// 300 -> "5m", 3600 -> "1h", 4 -> "4s", 90 -> "90s".
std::string PrometheusDuration(double seconds);

}  // namespace stallscope
