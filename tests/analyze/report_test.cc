#include "analyze/report.h"

#include <gtest/gtest.h>

#include <set>

#include "analyze/catalog.h"
#include "sample/finding.h"

namespace stallscope {
namespace {

Finding Make(std::string id, Layer layer, Severity severity) {
  Finding f;
  f.id = std::move(id);
  f.layer = layer;
  f.severity = severity;
  f.summary = f.id + " summary";
  return f;
}

TEST(Report, VerdictIsFirstCriticalInTriageOrder) {
  // An io critical listed before a memory critical: memory still decides.
  Report r = MakeReport({Make("io.device_saturated", Layer::kIo, Severity::kCritical),
                         Make("memory.swap_active", Layer::kMemory, Severity::kCritical)},
                        {Layer::kMemory, Layer::kIo}, {});
  ASSERT_TRUE(r.verdict.layer.has_value());
  EXPECT_EQ(*r.verdict.layer, Layer::kMemory);
  EXPECT_EQ(r.verdict.finding, "memory.swap_active");
  EXPECT_EQ(r.findings.front().id, "memory.swap_active");
}

TEST(Report, WarningsAloneGiveNoVerdict) {
  Report r = MakeReport({Make("memory.available_low", Layer::kMemory, Severity::kWarning)},
                        {Layer::kMemory}, {});
  EXPECT_FALSE(r.verdict.layer.has_value());
  EXPECT_EQ(r.layers[0].worst, Severity::kWarning);
}

TEST(Report, LayersNotCheckedAreSaidSo) {
  Report r = MakeReport({}, {Layer::kMemory}, {"no /proc/pressure"});
  ASSERT_EQ(r.layers.size(), 5u);
  EXPECT_TRUE(r.layers[0].checked);
  EXPECT_FALSE(r.layers[0].worst.has_value());
  EXPECT_FALSE(r.layers[1].checked);
  EXPECT_EQ(r.notes.size(), 1u);
}

TEST(Report, MostSevereFirstWithinALayer) {
  Report r = MakeReport({Make("memory.swap_active", Layer::kMemory, Severity::kInfo),
                         Make("memory.pinned_excess", Layer::kMemory, Severity::kCritical)},
                        {Layer::kMemory}, {});
  EXPECT_EQ(r.findings[0].id, "memory.pinned_excess");
}

TEST(Catalog, IdsAreUniqueAndPrefixedByTheirLayer) {
  std::set<std::string_view> seen;
  for (const Rule& rule : RuleCatalog()) {
    EXPECT_TRUE(seen.insert(rule.id).second) << rule.id;
    std::string prefix = std::string(LayerName(rule.layer)) + ".";
    EXPECT_EQ(rule.id.substr(0, prefix.size()), prefix) << rule.id;
    EXPECT_FALSE(rule.threshold.empty()) << rule.id;
    EXPECT_FALSE(rule.source.empty()) << rule.id;
  }
  EXPECT_NE(FindRule("memory.available_low"), nullptr);
  EXPECT_EQ(FindRule("memory.nonexistent"), nullptr);
}

}  // namespace
}  // namespace stallscope
