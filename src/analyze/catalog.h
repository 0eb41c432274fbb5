// The rule catalog: every finding id stallscope can raise, its layer, its
// threshold in words, the reasoning behind that threshold and a public
// reference for it where there is one, as one constant table (catalog.cc).
// The ids are stable (scripts and dashboards key on them); `stallscope doctor
// --rules` prints the table (render/doctor_json.h), and each id has a
// Prometheus alert or a reason for none (alert_rules.h). The rules' code and
// their named threshold constants live in the rule files under analyze/
// (host/, run/, nccl_log/, fleet/, trace/, flight_recorder/), and
// catalog_thresholds_test.cc holds the words here to those constants.
// Immutable; thread-safe.
#pragma once

#include <span>
#include <string_view>

#include "sample/finding.h"

namespace stallscope {

struct Rule {
  std::string_view id;
  Layer layer;
  std::string_view checks;     // what it looks at
  std::string_view threshold;  // when it fires, with severities
  std::string_view reasoning;  // why that threshold, in its own words
  // A public source for it (kernel, NCCL or PyTorch docs, a paper), or empty.
  std::string_view reference = {};
};

std::span<const Rule> RuleCatalog();
const Rule* FindRule(std::string_view id);

}  // namespace stallscope
