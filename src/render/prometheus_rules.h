// The Prometheus rules file of analyze/alert_rules.h as YAML, in the format
// `promtool check rules` reads: the recording groups, then the alerts, each
// with its `id` and `severity` labels and its summary and next check as
// annotations; a header lists the catalog ids that have no alert and what
// finds them instead. Every string is single-quoted, so PromQL's quotes and
// Go templates pass unchanged. Pure; thread-safe.
#pragma once

#include <string>

#include "analyze/alert_rules.h"

namespace stallscope {

std::string PrometheusRulesYaml(const PrometheusRuleOptions& options);

}  // namespace stallscope
