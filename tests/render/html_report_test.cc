#include "render/html_report.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <regex>
#include <tuple>

#include "analyze/host/baseline.h"
#include "analyze/report.h"
#include "core/atomic_file.h"
#include "core/file.h"
#include "process_points.h"
#include "render/svg_chart.h"

namespace stallscope {
namespace {

size_t Count(const std::string& text, std::string_view what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Whether a tag (not text: "&lt;img src=" is text) carries one of `names`.
bool AnyTagHasAttribute(const std::string& html, std::initializer_list<std::string_view> names) {
  for (size_t open = html.find('<'); open != std::string::npos; open = html.find('<', open + 1)) {
    size_t close = html.find('>', open);
    if (close == std::string::npos) return false;
    std::string_view tag(html.data() + open, close - open);
    for (std::string_view n : names) {
      if (tag.find(n) != std::string_view::npos) return true;
    }
  }
  return false;
}

// Two ranks, 60 samples, a leak, two epochs.
Timeline LeakyRun() {
  Timeline t;
  t.info.command = "python3 train.py";
  t.info.hostname = "n1";
  t.info.mem_total_bytes = 16ull << 30;
  t.info.data_device = "vda";
  for (int i = 1; i <= 60; ++i) {
    TimelineSample s;
    s.t = i;
    s.tree_rss_bytes = (1ull << 30) + static_cast<uint64_t>(i) * (8ull << 20);
    s.mem_available_bytes = 8ull << 30;
    s.disk_util_percent = i % 7 * 10;
    s.disk_await_ms = 1.5;
    s.cpu_busy_percent = 40;
    t.samples.push_back(s);
    for (int rank = 0; rank < 2; ++rank) {
      StepEvent step;
      step.rank = rank;
      step.step = i;
      step.t = s.t;
      step.wait_seconds = 0.01 * rank;
      step.step_seconds = 0.1 + 0.01 * rank;
      t.steps.push_back(step);
    }
  }
  for (auto [rank, epoch, at] : {std::tuple{0, 0, 0.5}, std::tuple{1, 0, 0.6},
                                 std::tuple{0, 1, 30.2}, std::tuple{1, 1, 30.1}}) {
    EpochEvent e;
    e.rank = rank;
    e.epoch = epoch;
    e.t = at;
    t.epochs.push_back(e);
  }
  return t;
}

Finding Leak() {
  Finding f;
  f.id = "memory.rss_growth";
  f.layer = Layer::kMemory;
  f.severity = Severity::kCritical;
  f.summary = "the tree's RSS grows 8 MiB/s";
  f.evidence = {{"slope_bytes_per_s", 8.0 * (1 << 20)}, {"projected_oom_s", 120.0}};
  f.next = "py-spy dump --pid PID";
  return f;
}

TEST(SvgChart, OnePolylinePerSeriesAndEscapedText) {
  Chart c{"chart-x", "a <b> & c", ChartUnit::kPercent, {}, {{5, "epoch <1>"}}, std::nullopt, 100.0};
  c.series.push_back({"first", {{0, 1}, {10, 50}}, false, std::nullopt});
  c.series.push_back({"second\"", {{0, 2}, {10, 3}}, true, std::nullopt});
  std::string svg = RenderSvgChart(c);
  EXPECT_EQ(Count(svg, "<svg"), 1u);
  EXPECT_EQ(Count(svg, "<polyline"), 2u);
  EXPECT_EQ(Count(svg, "stroke-dasharray=\"6 4\""), 2u);  // the dashed series and its legend
  EXPECT_NE(svg.find("a &lt;b&gt; &amp; c"), std::string::npos);
  EXPECT_NE(svg.find("epoch &lt;1&gt;"), std::string::npos);
  EXPECT_NE(svg.find("second&quot;"), std::string::npos);
  EXPECT_EQ(svg.find("<b>"), std::string::npos);
  EXPECT_NE(svg.find("100%"), std::string::npos) << "the y axis reaches y_max";
}

TEST(SvgChart, LongSeriesAreReduced) {
  Chart c{"chart-long", "long", ChartUnit::kPlain, {}, {}, std::nullopt, std::nullopt};
  ChartSeries s{"s", {}, false, std::nullopt};
  for (int i = 0; i < 36000; ++i) s.points.emplace_back(i, i % 100);
  c.series.push_back(s);
  std::string svg = RenderSvgChart(c);
  // Found by hand: std::regex recurses per character and overflows the
  // stack on a long attribute under ASan.
  const size_t start = svg.find("points=\"");
  ASSERT_NE(start, std::string::npos);
  const size_t end = svg.find('"', start + 8);
  ASSERT_NE(end, std::string::npos);
  EXPECT_LE(Count(svg.substr(start + 8, end - start - 8), ","), kMaxChartPoints);
  EXPECT_EQ(Count(svg, "<circle"), 0u) << "no per-point tooltips on long series";
}

TEST(HtmlReport, ChartsOfARunWithProjectionRanksAndEpochs) {
  Timeline t = LeakyRun();
  std::vector<Finding> findings = {Leak()};
  std::vector<Chart> charts = TimelineCharts(t, findings);
  std::vector<std::string> ids;
  for (const Chart& c : charts) ids.push_back(c.id);
  EXPECT_EQ(ids,
            (std::vector<std::string>{"chart-memory", "chart-host-memory", "chart-swap",
                                      "chart-swap-traffic", "chart-disk-util", "chart-disk-await",
                                      "chart-cpu", "chart-step-time", "chart-data-wait"}));
  // The tree on its own axis: only the tree's series (and its projection).
  const Chart& memory = charts[0];
  ASSERT_EQ(memory.series.size(), 2u);
  EXPECT_EQ(memory.series[0].name, "tree RSS");
  EXPECT_EQ(memory.series[1].name, "leak projection");
  EXPECT_TRUE(memory.series[1].dashed);
  // From the last sample to the projected OOM 120 s on, at 8 MiB/s.
  ASSERT_EQ(memory.series[1].points.size(), 2u);
  EXPECT_DOUBLE_EQ(memory.series[1].points[1].first, 60 + 120);
  EXPECT_DOUBLE_EQ(memory.series[1].points[1].second - memory.series[1].points[0].second,
                   120.0 * 8 * (1 << 20));
  // An OOM far away is drawn only up to four times the run's length.
  findings[0].evidence[1].value = 90000.0;
  EXPECT_DOUBLE_EQ(TimelineCharts(t, findings)[0].series[1].points[1].first, 60 + 4 * 59);
  // 16 GiB of MemTotal is far above a tree of 1-2.4 GiB: on the host's chart only.
  EXPECT_FALSE(memory.limit);
  const Chart& host = charts[1];
  ASSERT_EQ(host.series.size(), 1u);
  EXPECT_EQ(host.series[0].name, "host available");
  ASSERT_TRUE(host.limit);
  EXPECT_DOUBLE_EQ(host.limit->first, 16.0 * (1ull << 30));
  // Epochs marked at each epoch's earliest start over the ranks.
  ASSERT_EQ(memory.markers.size(), 2u);
  EXPECT_DOUBLE_EQ(memory.markers[1].x, 30.1);
  // Per rank.
  EXPECT_EQ(charts[7].series.size(), 2u);
  EXPECT_EQ(charts[7].series[1].name, "rank 1 step");
}

TEST(HtmlReport, TheLimitJoinsTheTreeChartWhenNear) {
  Timeline t = LeakyRun();
  t.info.cgroup_limit_bytes = 2ull << 30;  // the tree reaches 1.47 GiB of 2 GiB
  std::vector<Chart> charts = TimelineCharts(t, {});
  ASSERT_TRUE(charts[0].limit);
  EXPECT_EQ(charts[0].limit->second, "cgroup limit");
  EXPECT_DOUBLE_EQ(charts[0].limit->first, 2.0 * (1ull << 30));
}

TEST(HtmlReport, ProcessCpuChartPutsRanksFirstThenTheBusiestWorkers) {
  Timeline t = LeakyRun();
  t.info.root_pid = 100;
  t.ranks.push_back({200, 1, 1, 2, "n1"});
  t.ranks.push_back({100, 0, 0, 2, "n1"});
  for (int i = 1; i <= 10; ++i) {
    double at = i;
    t.processes.push_back(Point(at, 100, 1, "python3", 1 << 30, 95));
    t.processes.push_back(Point(at, 200, 1, "python3", 1 << 30, 90));
    for (int w = 0; w < 10; ++w) {  // ten workers: six are drawn
      t.processes.push_back(
          Point(at, 300 + w, 100, "pt_data_worker", 1 << 28, 10.0 + w));  // 4 folded
    }
  }
  std::vector<Chart> charts = TimelineCharts(t, {});
  auto cpu = std::find_if(charts.begin(), charts.end(),
                          [](const Chart& c) { return c.id == "chart-process-cpu"; });
  ASSERT_NE(cpu, charts.end());
  ASSERT_EQ(cpu->series.size(), 9u);  // 8 processes and "other processes"
  EXPECT_EQ(cpu->series[0].name, "rank 0 (pid 100)");
  EXPECT_EQ(cpu->series[1].name, "rank 1 (pid 200)");
  EXPECT_EQ(cpu->series[2].name, "worker pt_data_worker (pid 309)");  // the busiest worker
  EXPECT_EQ(cpu->series[8].name, "other processes");
  ASSERT_EQ(cpu->series[8].points.size(), 10u);
  EXPECT_DOUBLE_EQ(cpu->series[8].points[0].second, 10.0 + 11 + 12 + 13);  // workers 300-303
  EXPECT_EQ(cpu->markers.size(), 2u);
}

// 40 epochs on a 760 px chart: every epoch has its line, and the labels that
// are drawn never overlap (by the width bound the renderer uses) and stay in
// the plot; the end-to-end test checks the same in Chromium's layout.
TEST(SvgChart, EpochLabelsAreThinnedSoNoneOverlap) {
  Chart c{"chart-e", "epochs", ChartUnit::kPlain, {}, {}, std::nullopt, std::nullopt};
  c.series.push_back({"s", {{0, 1}, {400, 2}}, false, std::nullopt});
  for (int e = 0; e < 40; ++e) c.markers.push_back({e * 10.0, "epoch " + std::to_string(e)});
  std::string svg = RenderSvgChart(c);
  EXPECT_EQ(Count(svg, "<g class=\"marker\">"), 40u);
  std::regex label("<text x=\"([0-9.]+)\" y=\"38\">(epoch [0-9]+)</text>");
  double free_from = -1;
  size_t labels = 0;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), label); it != std::sregex_iterator();
       ++it) {
    double x = std::stod((*it)[1]);
    double width = 7.0 * (*it)[2].length();
    EXPECT_GE(x, free_from) << (*it)[2];
    EXPECT_LE(x + width, 760 - 16 + 0.1) << (*it)[2];
    free_from = x + width;
    ++labels;
  }
  EXPECT_GE(labels, 5u);                                              // some are labelled
  EXPECT_LT(labels, 40u);                                             // not all: they would overlap
  EXPECT_NE(svg.find("<title>epoch 17</title>"), std::string::npos);  // unlabelled, still named
  // Few epochs: every one labelled.
  c.markers = {{0, "epoch 0"}, {150, "epoch 1"}, {300, "epoch 2"}};
  EXPECT_EQ(Count(RenderSvgChart(c), "\">epoch "), 3u);
}

TEST(HtmlReport, GpuChartWhenTheRunSampledGpus) {
  Timeline t = LeakyRun();
  for (int i = 0; i < 5; ++i) {
    GpuPoint p;
    p.t = i;
    p.gpu.index = 0;
    p.gpu.utilization_gpu_percent = 95;
    p.gpu.gpm = GpmMetrics{};
    p.gpu.gpm->sm_active_percent = 30;
    t.gpus.push_back(p);
  }
  std::vector<Chart> charts = TimelineCharts(t, {});
  auto gpu = std::find_if(charts.begin(), charts.end(),
                          [](const Chart& c) { return c.id == "chart-gpu"; });
  ASSERT_NE(gpu, charts.end());
  ASSERT_EQ(gpu->series.size(), 2u);
  EXPECT_EQ(gpu->series[1].name, "GPU 0 SM active");
}

TEST(HtmlReport, PageIsSelfContainedAndEscapesEvidence) {
  Timeline t = LeakyRun();
  Finding evil;
  evil.id = "io.small_files";
  evil.layer = Layer::kIo;
  evil.severity = Severity::kWarning;
  evil.summary = "300000 files under /data/<script>alert(1)</script>";
  evil.evidence = {{"path", std::string("/data/<script>alert(\"x\")</script>&")}};
  evil.next = "stallscope pack '/data/<img src=x onerror=alert(1)>' /out";
  Report report = MakeReport({Leak(), evil}, {Layer::kMemory, Layer::kIo}, {"a <note>"});
  HostBaseline baseline;
  baseline.metrics = {{"memory.total_bytes", Layer::kMemory, 1e9, "bytes"}};
  HtmlReportInput in;
  in.command = "report";
  in.host = "n1<>";
  in.time_utc = "2026-11-29T10:00:00Z";
  in.report = &report;
  in.timeline = &t;
  in.run_file = "/tmp/run.db";
  in.host_baseline = &baseline;
  in.snapshot_json = R"({"hostname": "n1", "note": "</pre><script>x</script>"})";
  in.not_checked_why = {{Layer::kCode, "needs a <run>"}};
  std::string html = RenderHtmlReport(in);

  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  // One SVG per chart, each with its polylines.
  EXPECT_EQ(Count(html, "<svg"), TimelineCharts(t, report.findings).size());
  EXPECT_EQ(Count(html, "<svg"), 9u);
  EXPECT_GE(Count(html, "<polyline"), 8u);
  // Exactly one script: ours; every outside text escaped.
  EXPECT_EQ(Count(html, "<script"), 1u);
  EXPECT_NE(html.find("/data/&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;"),
            std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_NE(html.find("&lt;/pre&gt;&lt;script&gt;"), std::string::npos);
  EXPECT_NE(html.find("a &lt;note&gt;"), std::string::npos);
  EXPECT_NE(html.find("needs a &lt;run&gt;"), std::string::npos);
  EXPECT_NE(html.find("n1&lt;&gt;"), std::string::npos);
  // Nothing leaves the page: no URL of any scheme, no external resource.
  EXPECT_EQ(html.find("http:"), std::string::npos);
  EXPECT_EQ(html.find("https:"), std::string::npos);
  EXPECT_EQ(html.find("//"), html.find("// ")) << "no protocol-relative URL";
  EXPECT_FALSE(AnyTagHasAttribute(html, {" src=", " href="})) << "an element that loads something";
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  EXPECT_EQ(html.find("url("), std::string::npos);
  // The findings, the triage table, the baseline, the verdict.
  EXPECT_NE(html.find("data-id=\"memory.rss_growth\""), std::string::npos);
  EXPECT_NE(html.find("class=\"triage\""), std::string::npos);
  EXPECT_NE(html.find("<code>memory.total_bytes</code>"), std::string::npos);
  EXPECT_NE(html.find("verdict: <b>memory</b>"), std::string::npos);
  EXPECT_NE(html.find("</html>"), std::string::npos);
}

TEST(HtmlReport, NoTimelineNoCharts) {
  Report report = MakeReport({}, {Layer::kMemory}, {});
  HtmlReportInput in;
  in.command = "doctor";
  in.report = &report;
  std::string html = RenderHtmlReport(in);
  EXPECT_EQ(Count(html, "<svg"), 0u);
  EXPECT_NE(html.find("verdict: none"), std::string::npos);
}

TEST(AtomicFile, ReplacesWholeAndLeavesNoTemporary) {
  char dir[] = "/tmp/stallscope-atomic-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string path = std::string(dir) + "/out.html";
  ASSERT_TRUE(WriteFileAtomically(path, "first").ok());
  ASSERT_TRUE(WriteFileAtomically(path, "second").ok());
  EXPECT_EQ(*ReadFile(path), "second");
  Result<std::vector<std::string>> names = ListDirectory(dir);
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(names->size(), 1u) << "a temporary file was left behind";
  // A directory that does not exist: an error naming the path, nothing written.
  Status s = WriteFileAtomically(std::string(dir) + "/no/such/out.html", "x");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("no/such/out.html"), std::string::npos) << s.message();
  unlink(path.c_str());
  rmdir(dir);
}

}  // namespace
}  // namespace stallscope
