// The Prometheus rules of analyze/alert_rules.h against the catalog: every
// id has alerts or a reason, the names and durations are what Prometheus
// users read, and the thresholds come from the rules' constants. promtool
// itself checks the rules (tests/e2e/prometheus_rules.py).
#include "analyze/alert_rules.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <set>

#include "analyze/catalog.h"
#include "analyze/run/io_rules.h"
#include "analyze/run/rank_rules.h"

namespace stallscope {
namespace {

std::vector<AlertRule> Alerts(const PrometheusRuleOptions& options = {}) {
  std::vector<AlertRule> out;
  for (const RuleGroup& g : PrometheusRules(options)) {
    out.insert(out.end(), g.alerts.begin(), g.alerts.end());
  }
  return out;
}

TEST(AlertRules, EveryCatalogIdHasAlertsOrAReason) {
  std::set<std::string> with_alert, without;
  for (const AlertRule& a : Alerts()) with_alert.insert(a.id);
  for (const RuleWithoutAlert& r : RulesWithoutAlerts()) {
    EXPECT_TRUE(without.insert(std::string(r.id)).second) << "twice: " << r.id;
    EXPECT_FALSE(r.why.empty());
  }
  for (const Rule& r : RuleCatalog()) {
    std::string id(r.id);
    EXPECT_NE(with_alert.count(id) + without.count(id), 0u) << id << " is in neither list";
    EXPECT_FALSE(with_alert.count(id) && without.count(id)) << id << " is in both";
  }
  for (const std::string& id : with_alert) EXPECT_NE(FindRule(id), nullptr) << id;
  for (const std::string& id : without) EXPECT_NE(FindRule(id), nullptr) << id;
}

TEST(AlertRules, NamesLabelsAndLevels) {
  EXPECT_EQ(AlertName("io.input_bound"), "StallscopeIoInputBound");
  EXPECT_EQ(AlertName("distributed.straggler"), "StallscopeDistributedStraggler");
  std::set<std::string> records;
  for (const RuleGroup& g : PrometheusRules()) {
    for (const RecordingRule& r : g.records) {
      EXPECT_TRUE(records.insert(r.record).second) << r.record;
      EXPECT_EQ(r.record.rfind("stallscope:", 0), 0u) << r.record;
    }
  }
  std::set<std::tuple<std::string, Severity, std::string>> seen;
  for (const AlertRule& a : Alerts()) {
    EXPECT_EQ(a.alert, AlertName(a.id));
    EXPECT_NE(a.severity, Severity::kInfo);
    EXPECT_TRUE(seen.insert({a.alert, a.severity, a.problem}).second)
        << a.alert << " " << SeverityName(a.severity) << " " << a.problem;
    EXPECT_FALSE(a.summary.empty());
    EXPECT_FALSE(a.next.empty());
  }
  // A warning and a critical level are two alerts.
  EXPECT_TRUE(seen.count({"StallscopeIoInputBound", Severity::kWarning, ""}));
  EXPECT_TRUE(seen.count({"StallscopeIoInputBound", Severity::kCritical, ""}));
}

TEST(AlertRules, ThresholdsAndWindowsComeFromTheConstants) {
  for (const AlertRule& a : Alerts()) {
    if (a.id == "io.input_bound") {
      double t = a.severity == Severity::kWarning ? kInputBoundWarningFraction
                                                  : kInputBoundCriticalFraction;
      EXPECT_NE(a.expr.find(fmt::format(">= {}", t)), std::string::npos) << a.expr;
      EXPECT_EQ(a.for_seconds, kDefaultAlertWindowSeconds);
    }
    if (a.id == "distributed.straggler" && a.severity == Severity::kCritical) {
      EXPECT_NE(a.expr.find(fmt::format("> {}", kStragglerCriticalFraction)), std::string::npos);
    }
    if (a.id == "io.device_saturated" && a.severity == Severity::kCritical) {
      EXPECT_NE(a.expr.find("[30m:1m]"), std::string::npos) << a.expr;
    }
  }
  // The short variant scales every duration.
  for (const AlertRule& a : Alerts({.window_seconds = 4})) {
    EXPECT_EQ(a.expr.find("[5m]"), std::string::npos) << a.expr;
    EXPECT_LE(a.for_seconds, 8);
  }
}

TEST(AlertRules, Durations) {
  EXPECT_EQ(PrometheusDuration(300), "5m");
  EXPECT_EQ(PrometheusDuration(3600), "1h");
  EXPECT_EQ(PrometheusDuration(90), "90s");
  EXPECT_EQ(PrometheusDuration(4), "4s");
  EXPECT_EQ(*ParseAlertWindow("5m"), 300);
  EXPECT_EQ(*ParseAlertWindow("30s"), 30);
  EXPECT_EQ(*ParseAlertWindow("2h"), 7200);
  EXPECT_EQ(*ParseAlertWindow("45"), 45);
  for (const char* bad : {"", "m", "0s", "5x", "-5m", "1.5m", "25h", "5 m", "9999999"}) {
    Result<double> w = ParseAlertWindow(bad);
    ASSERT_FALSE(w.ok()) << bad;
    EXPECT_NE(w.status().message().find(bad), std::string::npos);
  }
}

}  // namespace
}  // namespace stallscope
