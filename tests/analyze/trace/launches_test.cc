// Kernel launch statistics (analyze/trace/launches.h), user annotations
// (analyze/trace/annotations.h) and the copies' bandwidth figures: by hand on
// small traces, and against HTA's own figures on its test traces
// (fixtures/traces/hta_launch_reference.json, made by
// bench/hta_launch_reference.py; HTA's commit is in the file). The real
// traces are read in place from ../shared/traces/hta (or
// $STALLSCOPE_SHARED/traces/hta): missing, the test skips outside CI and
// fails with CI=true.
#include "analyze/trace/launches.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "analyze/trace/annotations.h"
#include "analyze/trace/breakdown.h"
#include "analyze/trace/rules.h"
#include "formats/trace/file.h"
#include "hta_traces.h"

namespace stallscope {
namespace {

TraceEvent Row(double ts, double dur, int64_t correlation, int stream, uint32_t name) {
  TraceEvent e;
  e.ts = ts;
  e.dur = dur;
  e.correlation = correlation;
  e.stream = stream;
  e.name = name;
  return e;
}

LaunchRowFilter KeepAll() {
  return {[](double) { return true; }, false};
}

TEST(TraceLaunches, PairsCallsWithTheirGpuRowsAndCountsOutliers) {
  TraceFile t;
  t.names = {"cudaLaunchKernel", "gemm", "relu", "cudaStreamSynchronize", "cuLaunchKernel"};
  t.events = {Row(0, 10, 1, -1, 0),  Row(5, 2, 1, 7, 1),  // GPU row before the call ends: delay 0
              Row(20, 60, 2, -1, 0), Row(300, 100, 2, 7, 1),  // a slow call, delay 220
              Row(400, 5, 3, -1, 0), Row(406, 1, 3, 7, 2),    // short GPU row, delay 1
              Row(500, 5, 4, -1, 3), Row(600, 1, 4, 7, 2),    // not a launch call
              Row(700, 5, 5, -1, 4), Row(800, 1, 5, 7, 2),    // HTA leaves cuLaunchKernel out
              Row(900, 5, 6, -1, 0)};                         // no GPU row
  LaunchStats s = SummarizeLaunches(t, KeepAll());
  EXPECT_EQ(s.launches, 3u);
  EXPECT_EQ(s.short_gpu, 2u);  // 2 < 10 and 1 < 5; the 60 µs call is over the cut-off
  EXPECT_EQ(s.runtime_outliers, 1u);
  EXPECT_EQ(s.delay_outliers, 1u);
  ASSERT_EQ(s.kernels.size(), 2u);
  EXPECT_EQ(s.kernels[0].name, "gemm");
  EXPECT_EQ(s.kernels[0].launches, 2u);
  EXPECT_DOUBLE_EQ(s.kernels[0].p50_us, 110);  // of 0 and 220
  EXPECT_DOUBLE_EQ(s.kernels[0].p99_us, 0.99 * 220);
  EXPECT_DOUBLE_EQ(s.kernels[1].p50_us, 1);
  std::vector<KernelLaunchDelay> top = TopLaunchDelays(s, 1);
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(top[0].name, "gemm");
}

TEST(TraceLaunches, KeepsOnlyKeptCallsAndDuplicatesAsHtasJoin) {
  TraceFile t;
  t.names = {"cudaLaunchKernel", "gemm", "aten::mm"};
  t.events = {Row(0, 10, 1, -1, 0), Row(1, 1, 1, -1, 2), Row(50, 2, 1, 7, 1),
              Row(100, 10, 2, -1, 0), Row(200, 2, 2, 7, 1)};
  LaunchStats cut = SummarizeLaunches(t, {[](double ts) { return ts < 100; }, true});
  // HTA's inner joins: the call and the op share correlation 1, so the cut
  // trace holds its GPU row twice, each paired with both CPU rows; the
  // second call is cut
  EXPECT_EQ(cut.launches, 4u);
  EXPECT_EQ(cut.delay_outliers, 0u);
  LaunchStats all = SummarizeLaunches(t, KeepAll());
  EXPECT_EQ(all.launches, 3u);  // correlation 1 twice (one GPU row), correlation 2
}

TEST(TraceAnnotations, DescribesEachNameByItsRows) {
  std::vector<std::pair<std::string_view, double>> rows = {
      {"forward", 10}, {"forward", 30}, {"backward", 50}};
  std::vector<UserAnnotationTime> a = SummarizeUserAnnotations(rows);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].name, "backward");  // by name, as HTA
  EXPECT_DOUBLE_EQ(a[0].std_us, 0);  // one row: HTA fills 0
  EXPECT_EQ(a[1].count, 2u);
  EXPECT_DOUBLE_EQ(a[1].sum_us, 40);
  EXPECT_DOUBLE_EQ(a[1].mean_us, 20);
  EXPECT_DOUBLE_EQ(a[1].std_us, std::sqrt(200.0));
}

TEST(TraceAnnotations, PastTheNameLimitTheRestIsOthersOfTheSums) {
  std::vector<std::pair<std::string_view, double>> rows = {
      {"a", 100}, {"b", 50}, {"c", 30}, {"d", 15}, {"e", 5}};
  // running sums 100 150 180 195 200; their 0.8 quantile is 195
  std::vector<UserAnnotationTime> a = SummarizeUserAnnotations(rows, 3, 0.8);
  std::map<std::string, UserAnnotationTime> by;
  for (const UserAnnotationTime& x : a) by[x.name] = x;
  ASSERT_EQ(a.size(), 4u);
  EXPECT_TRUE(by.contains("c"));
  ASSERT_TRUE(by.contains("others"));  // d past the 3rd, e past the quantile
  EXPECT_DOUBLE_EQ(by["others"].sum_us, 20);
  EXPECT_DOUBLE_EQ(by["others"].max_us, 15);  // of the names' sums, as HTA
  EXPECT_EQ(by["others"].count, 2u);
}

TEST(TraceCopies, BandwidthIsTheConcurrentSumOncePerTime) {
  TraceFile t;
  t.names = {"Memcpy DtoD (Device -> Device)"};
  auto copy = [](double ts, double dur, float gbps) {
    TraceEvent e = Row(ts, dur, -1, 7, 0);
    e.cat = TraceCategory::kMemcpy;
    e.bandwidth_gbps = gbps;
    return e;
  };
  // 10 alone, then 10+20, then 20 alone; the third starts as the second ends
  t.events = {copy(0, 10, 10), copy(5, 10, 20), copy(15, 5, 40)};
  Result<TraceRankBreakdown> r = BreakDownTrace(t, TraceOptions{});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r.value().copies.size(), 1u);
  const CopyStats& c = r.value().copies[0];
  // values: 10 (0), 30 (5), 20 (10), 40 (15: 20 ends, 40 starts; once)
  EXPECT_DOUBLE_EQ(c.mean_gbps, 25);
  EXPECT_DOUBLE_EQ(c.max_gbps, 40);
  EXPECT_DOUBLE_EQ(c.p25_gbps, 17.5);
  EXPECT_DOUBLE_EQ(c.p50_gbps, 25);
  EXPECT_DOUBLE_EQ(c.p75_gbps, 32.5);
  ASSERT_TRUE(c.std_gbps);
  EXPECT_NEAR(*c.std_gbps, std::sqrt(500.0 / 3), 1e-9);
}

// A rank at the edges of code.launch_bound: `kernels` launched, `short_kernels`
// of them under 10 µs, the GPU busy `busy_pct` of its window, kernels in
// `windows` of the 1/6 s windows.
TraceRankBreakdown LaunchRank(uint64_t kernels, uint64_t short_kernels, double busy_pct,
                              double windows) {
  TraceRankBreakdown r;
  r.rank = 2;
  r.temporal = TemporalBreakdown{};
  r.temporal->idle_pct = 100 - busy_pct;
  r.busy_window_share = windows;
  TraceStepFigures step;
  step.step = 1;
  step.kernels = kernels;
  step.short_kernels = short_kernels;
  r.step_figures = {step};
  r.launches.launches = kernels;
  r.launches.short_gpu = short_kernels;
  r.launches.kernels = {{"relu", 40, 2, 9, 300}, {"gemm", 60, 1, 3, 100}, {"add", 5, 50, 60, 400}};
  return r;
}

const Finding* Find(const std::vector<Finding>& findings, const std::string& id) {
  for (const Finding& f : findings) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

TEST(TraceRules, LaunchBoundIsItsOwnIdWithHtasLaunchStatistics) {
  std::vector<Finding> f = CheckTraces({LaunchRank(100, 50, 49.9, 0.8)}).findings;
  const Finding* l = Find(f, "code.launch_bound");
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(Find(f, "code.util_misleading"), nullptr);  // one id per finding
  EXPECT_EQ(l->severity, Severity::kWarning);
  std::map<std::string, EvidenceValue> ev;
  for (const Evidence& e : l->evidence) ev[e.name] = e.value;
  EXPECT_EQ(std::get<int64_t>(ev["launches"]), 100);
  EXPECT_DOUBLE_EQ(std::get<double>(ev["gpu_shorter_than_launch_share"]), 0.5);
  // the kernels with the most summed launch delay, largest first
  EXPECT_EQ(std::get<std::string>(ev["top_kernel_1"]), "add");
  EXPECT_EQ(std::get<std::string>(ev["top_kernel_2"]), "relu");
  EXPECT_EQ(std::get<std::string>(ev["top_kernel_3"]), "gemm");
  EXPECT_NE(l->next.find("add"), std::string::npos);
  // The findings are kept: Find points into them.
  FindingsWithNotes judged = CheckTraces({LaunchRank(100, 50, 24.9, 0.8)});
  const Finding* critical = Find(judged.findings, "code.launch_bound");
  ASSERT_NE(critical, nullptr);
  EXPECT_EQ(critical->severity, Severity::kCritical);
}

TEST(TraceRules, LaunchBoundEdges) {
  auto fires = [](TraceRankBreakdown r) {
    return Find(CheckTraces({std::move(r)}).findings, "code.launch_bound") != nullptr;
  };
  EXPECT_FALSE(fires(LaunchRank(99, 99, 10, 1)));      // too few kernels to judge
  EXPECT_FALSE(fires(LaunchRank(100, 49, 10, 1)));     // under half are short
  EXPECT_FALSE(fires(LaunchRank(100, 50, 50, 1)));     // the GPU busy half the time
  EXPECT_FALSE(fires(LaunchRank(100, 50, 10, 0.79)));  // utilization would not read busy
  EXPECT_TRUE(fires(LaunchRank(100, 50, 10, 0.8)));
}

void ExpectNear(double got, const nlohmann::json& want, const std::string& what) {
  if (want.is_null()) return;
  const double w = want.get<double>();
  EXPECT_NEAR(got, w, std::max(1e-9, std::abs(w) * 1e-3)) << what;
}

void ExpectCopies(const TraceRankBreakdown& got, const nlohmann::json& want,
                  const std::string& where) {
  std::map<std::string, const CopyStats*> by_kind;
  for (const CopyStats& c : got.copies) by_kind[c.kind] = &c;
  for (const nlohmann::json& w : want) {
    const std::string at = where + " " + w.at("kind").get<std::string>();
    ASSERT_TRUE(by_kind.contains(w.at("kind"))) << at;
    const CopyStats& c = *by_kind[w.at("kind")];
    EXPECT_EQ(c.count > 0, true) << at;
    ExpectNear(c.mean_gbps, w.at("mean"), at + " mean");
    if (c.std_gbps) ExpectNear(*c.std_gbps, w.at("std"), at + " std");
    EXPECT_EQ(c.std_gbps.has_value(), !w.at("std").is_null()) << at;
    ExpectNear(c.min_gbps, w.at("min"), at + " min");
    ExpectNear(c.p25_gbps, w.at("p25"), at + " p25");
    ExpectNear(c.p50_gbps, w.at("p50"), at + " p50");
    ExpectNear(c.p75_gbps, w.at("p75"), at + " p75");
    ExpectNear(c.max_gbps, w.at("max"), at + " max");
  }
}

void ExpectLaunches(const LaunchStats& got, const nlohmann::json& want, const std::string& where) {
  EXPECT_EQ(got.launches, want.at("launches").get<uint64_t>()) << where;
  EXPECT_EQ(got.short_gpu, want.at("short_gpu").get<uint64_t>()) << where;
  EXPECT_EQ(got.runtime_outliers, want.at("runtime_outliers").get<uint64_t>()) << where;
  EXPECT_EQ(got.delay_outliers, want.at("delay_outliers").get<uint64_t>()) << where;
  ASSERT_EQ(got.kernels.size(), want.at("kernels").size()) << where;
  for (const KernelLaunchDelay& k : got.kernels) {
    const std::string at = where + " " + k.name;
    ASSERT_TRUE(want.at("kernels").contains(k.name)) << at;
    const nlohmann::json& w = want.at("kernels").at(k.name);
    EXPECT_EQ(k.launches, w.at("count").get<uint64_t>()) << at;
    ExpectNear(k.p50_us, w.at("p50"), at + " p50");
    ExpectNear(k.p99_us, w.at("p99"), at + " p99");
  }
}

void ExpectAnnotations(const std::vector<UserAnnotationTime>& got, const nlohmann::json& want,
                       const std::string& where) {
  ASSERT_EQ(got.size(), want.size()) << where;
  for (size_t i = 0; i < got.size(); ++i) {
    const nlohmann::json& w = want[i];
    const std::string at = where + " " + got[i].name;
    EXPECT_EQ(got[i].name, w.at("name").get<std::string>()) << where;
    ExpectNear(got[i].sum_us, w.at("sum"), at + " sum");
    ExpectNear(got[i].max_us, w.at("max"), at + " max");
    ExpectNear(got[i].min_us, w.at("min"), at + " min");
    ExpectNear(got[i].mean_us, w.at("mean"), at + " mean");
    ExpectNear(got[i].std_us, w.at("std"), at + " std");
  }
}

// HTA's memory bandwidth series sorts starts and ends by time with an
// unstable sort and keeps float residues (1e-17 GB/s) as "above zero": the
// reference's memory_bw_by_definition is HTA's own series with one value
// per time, the residues left out (docs/commands/trace.md).
TEST(TraceLaunches, MatchesHtaOnItsTestTraces) {
  const std::filesystem::path root = SharedTraces();
  STALLSCOPE_REQUIRE_SHARED_TRACES(root);
  int compared = 0;
  auto compare = [&](const std::string& dir, const nlohmann::json& want, const TraceFile& trace,
                     const std::string& rank) {
    const std::string where = dir + " rank " + rank;
    Result<TraceRankBreakdown> figures = BreakDownTrace(trace, TraceOptions{});
    ASSERT_TRUE(figures.ok()) << where;
    const TraceRankBreakdown& got = figures.value();
    const nlohmann::json& bw = want.at("memory_bw_by_definition");
    if (bw.contains(rank)) ExpectCopies(got, bw.at(rank), where);
    const nlohmann::json& launches = want.at("launches");
    if (launches.contains(rank)) ExpectLaunches(got.launches, launches.at(rank), where);
    const nlohmann::json& notes = want.at("user_annotations");
    ExpectAnnotations(got.user_annotations,
                      notes.contains(rank) ? notes.at(rank) : nlohmann::json::array(), where);
    ++compared;
  };
  ForEachHtaTrace(root, HtaReference("hta_launch_reference.json").at("traces"), compare);
  EXPECT_GT(compared, 10);
}

}  // namespace
}  // namespace stallscope
