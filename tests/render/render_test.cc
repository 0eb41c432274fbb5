#include <gtest/gtest.h>

#include "analyze/host/memory_rules.h"
#include "analyze/report.h"
#include "core/units.h"
#include "render/report.h"

namespace stallscope {
namespace {

Report SwappingHost() {
  MemoryObservation m;
  m.total_bytes = 16ull << 30;
  m.available_bytes = 1ull << 30;
  m.window_seconds = 1;
  m.swap_in_pages = 300;
  m.swap_total_bytes = 4ull << 30;
  m.swap_used_bytes = 1ull << 30;
  m.memory_pressure_some_pct = 30;
  return MakeReport(CheckMemory(m).findings, {Layer::kMemory}, {"no GPU probe yet"});
}

const ReportHeader kHeader{"doctor", "node-1", "2026-11-29T12:00:00Z", 1.0};

TEST(RenderJson, FollowsTheReportContract) {
  nlohmann::ordered_json j = ReportToJson(kHeader, SwappingHost());
  EXPECT_EQ(j["schema"], "stallscope.report/1");
  EXPECT_EQ(j["verdict"]["layer"], "memory");
  EXPECT_EQ(j["verdict"]["finding"], "memory.available_low");
  ASSERT_EQ(j["findings"].size(), 2u);
  const auto& f = j["findings"][0];
  EXPECT_EQ(f["layer"], "memory");
  EXPECT_EQ(f["severity"], "critical");
  EXPECT_EQ(f["evidence"]["available_bytes"], 1ll << 30);
  EXPECT_DOUBLE_EQ(f["impact"]["wall_fraction"].get<double>(), 0.30);
  EXPECT_TRUE(f["next"].is_string());
  EXPECT_EQ(j["layers"][1]["status"], "not_checked");
  EXPECT_EQ(j["notes"][0], "no GPU probe yet");
}

TEST(RenderJson, HealthyHostHasVerdictNone) {
  nlohmann::ordered_json j = ReportToJson(kHeader, MakeReport({}, {Layer::kMemory}, {}));
  EXPECT_EQ(j["verdict"], nlohmann::ordered_json({{"layer", "none"}}));
  EXPECT_TRUE(j["findings"].empty());
  EXPECT_EQ(j["layers"][0]["status"], "ok");
}

TEST(RenderText, ShowsLayersEvidenceNextAndVerdict) {
  std::string text = RenderReportText(kHeader, SwappingHost());
  EXPECT_NE(text.find("memory       CRITICAL"), std::string::npos) << text;
  EXPECT_NE(text.find("io           not checked yet"), std::string::npos) << text;
  EXPECT_NE(text.find("evidence: available_bytes=1073741824"), std::string::npos) << text;
  EXPECT_NE(text.find("next:"), std::string::npos);
  EXPECT_NE(text.find("impact:   30.0% of wall time"), std::string::npos) << text;
  EXPECT_NE(text.find("verdict: memory"), std::string::npos);
}

TEST(Units, HumanFormats) {
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(3ull << 30), "3.0 GiB");
  EXPECT_EQ(FormatRate(48e6), "48.0 MB/s");
  EXPECT_EQ(FormatPercent(0.125), "12.5%");
}

}  // namespace
}  // namespace stallscope
