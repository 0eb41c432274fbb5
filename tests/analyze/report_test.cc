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

TEST(Report, AJobThatStoppedPutsItsStopFirst) {
  // A rank died: that is the verdict, before a memory or io critical.
  Report r = MakeReport({Make("io.device_saturated", Layer::kIo, Severity::kCritical),
                         Make("memory.swap_active", Layer::kMemory, Severity::kCritical),
                         Make("distributed.rank_died", Layer::kDistributed, Severity::kCritical)},
                        {Layer::kMemory, Layer::kIo}, {});
  EXPECT_EQ(r.verdict.finding, "distributed.rank_died");
  EXPECT_EQ(*r.verdict.layer, Layer::kDistributed);
  // The findings keep their layer order.
  EXPECT_EQ(r.findings.front().id, "memory.swap_active");
  r = MakeReport({Make("network.comm_ratio_high", Layer::kNetwork, Severity::kCritical),
                  Make("distributed.hang", Layer::kDistributed, Severity::kCritical)},
                 {}, {});
  EXPECT_EQ(r.verdict.finding, "distributed.hang");
  EXPECT_TRUE(IsJobStop("memory.oom_killed"));
  EXPECT_FALSE(IsJobStop("distributed.straggler"));
  // A stop that is not critical does not jump the queue.
  r = MakeReport({Make("io.device_saturated", Layer::kIo, Severity::kCritical),
                  Make("distributed.hang", Layer::kDistributed, Severity::kWarning)},
                 {}, {});
  EXPECT_EQ(r.verdict.finding, "io.device_saturated");
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
    EXPECT_FALSE(rule.reasoning.empty()) << rule.id;
  }
  EXPECT_NE(FindRule("memory.available_low"), nullptr);
  EXPECT_EQ(FindRule("memory.nonexistent"), nullptr);
}

}  // namespace
}  // namespace stallscope

namespace stallscope {
namespace {

Finding Made(std::string id, Severity severity, std::string summary, std::string next) {
  Finding f;
  f.id = std::move(id);
  f.layer = Layer::kIo;
  f.severity = severity;
  f.summary = std::move(summary);
  f.next = std::move(next);
  return f;
}

TEST(MergeFinding, OneFindingPerIdWithEverySourceInItsEvidence) {
  Finding hook = Made("io.input_bound", Severity::kWarning, "hook words", "hook next");
  hook.evidence = {{"data_wait_fraction", 0.2}};
  Finding trace = Made("io.input_bound", Severity::kCritical, "trace words", "trace next");
  trace.evidence = {
      {"rank", int64_t{0}}, {"source", std::string("trace")}, {"data_wait_fraction", 0.4}};
  std::vector<Finding> findings = {hook};
  MergeFinding(findings, trace, "trace", "hook");
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.severity, Severity::kCritical);  // the worse one leads
  EXPECT_EQ(f.summary, "trace words");
  EXPECT_EQ(f.next, "trace next");
  ASSERT_EQ(f.evidence.size(), 5u);
  EXPECT_EQ(f.evidence[0].name, "data_wait_fraction");  // the hook's, first
  EXPECT_EQ(f.evidence[1].name, "sources");
  EXPECT_EQ(std::get<std::string>(f.evidence[1].value), "hook, trace");
  EXPECT_EQ(f.evidence[2].name, "trace.rank");
  EXPECT_EQ(f.evidence[3].name, "trace.data_wait_fraction");
  EXPECT_EQ(f.evidence[4].name, "hook.summary");  // the words replaced, named by their source
  EXPECT_EQ(std::get<std::string>(f.evidence[4].value), "hook words");
  // A third source extends the list; another id is appended as it is.
  Finding log = Made("io.input_bound", Severity::kInfo, "log", "");
  MergeFinding(findings, log, "nccl-log", "run");
  EXPECT_EQ(std::get<std::string>(findings[0].evidence[1].value), "hook, trace, nccl-log");
  EXPECT_EQ(findings[0].evidence.back().name, "nccl_log.summary");
  MergeFinding(findings, Made("io.small_files", Severity::kInfo, "", ""), "trace", "hook");
  EXPECT_EQ(findings.size(), 2u);
  EXPECT_TRUE(findings[1].evidence.empty());
}

}  // namespace
}  // namespace stallscope
