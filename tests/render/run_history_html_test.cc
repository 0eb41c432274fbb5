// render/run_history_html.h: the page of `history --html` is self-contained,
// escapes what the runs carry, marks the change points and dates its axis.
#include "render/run_history_html.h"

#include <gtest/gtest.h>

#include <regex>

#include "render/run_history.h"

namespace stallscope {
namespace {

std::vector<HistoryJob> Series(const std::string& command, size_t runs, double spacing_s) {
  std::vector<HistoryRun> files;
  for (size_t i = 0; i < runs; ++i) {
    HistoryRun r;
    r.files = {"run" + std::to_string(i) + ".db"};
    r.command = command;
    r.world_size = 1;
    r.master_addr = "127.0.0.1";
    r.master_port = 29500;
    r.start_s = 1772582400 + static_cast<double>(i) * spacing_s;
    r.end_s = r.start_s + 10;
    r.started_utc = "2026-03-04";
    r.step_median_s = (i < runs / 2 ? 0.1 : 0.3) + 0.001 * static_cast<double>(i % 3);
    r.step_p90_s = *r.step_median_s * 1.2;
    r.data_wait_s = *r.step_median_s - 0.09;
    r.steps_per_s = 1 / *r.step_median_s;
    r.loaders = {"num_workers=2 batch_size=8 pin_memory=false"};
    files.push_back(r);
  }
  return BuildHistory(files, HistoryMetric::kStep);
}

TEST(HistoryHtml, EscapesTheCommandAndNeedsNoNetwork) {
  auto jobs = Series("python3 t.py --tag '<script>alert(1)</script>' & \"x\"", 12, 3600);
  std::string html = RenderHistoryHtml(jobs, HistoryMetric::kStep, {"skipped <b>.db"});
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("&amp; &quot;x&quot;"), std::string::npos);
  EXPECT_NE(html.find("skipped &lt;b&gt;.db"), std::string::npos);
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
}

TEST(HistoryHtml, ChartsEachFigureWithTheChangeMarked) {
  auto jobs = Series("python3 t.py", 12, 3600);
  ASSERT_EQ(jobs[0].changes.size(), 1u);
  std::string html = RenderHistoryHtml(jobs, HistoryMetric::kStep, {});
  // step (median, p90), data wait, steps/s; no sync wait in these runs.
  EXPECT_EQ(html.find("chart-job1-sync-wait"), std::string::npos);
  for (const char* id : {"chart-job1-step", "chart-job1-data-wait", "chart-job1-steps-per-s"}) {
    EXPECT_NE(html.find(std::string("id=\"") + id + "\""), std::string::npos) << id;
  }
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = html.find(what); at != std::string::npos; at = html.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("<svg"), 3u);
  EXPECT_EQ(count("<g class=\"marker\"><title>run 7: step +"), 3u);  // on every chart
  EXPECT_NE(html.find("the change at run 7 matters most"), std::string::npos);
  // Within a day: the axis shows times, the title the day.
  EXPECT_NE(html.find("of each run), 2026-03-04 UTC</text>"), std::string::npos);
  // The axis in dates: 12 runs an hour apart, ticks as "03-04 02:00".
  EXPECT_TRUE(std::regex_search(html, std::regex("class=\"xlabel\"[^>]*>03-04 \\d\\d:00<")))
      << html.substr(0, 3000);
}

TEST(HistoryHtml, DateLabelsNeverTouchAt200Runs) {
  auto jobs = Series("python3 t.py", 200, 3 * 3600);
  std::string html = RenderHistoryHtml(jobs, HistoryMetric::kStep, {});
  EXPECT_NE(html.find("of each run), dates UTC</text>"), std::string::npos);
  std::regex tick("<text class=\"xlabel\" x=\"([0-9.]+)\"[^>]*>([^<]+)<");
  const std::string svg = html.substr(html.find("chart-job1-step"));
  const std::string first = svg.substr(0, svg.find("</svg>"));
  double last_end = -1e9;
  size_t ticks = 0;
  for (auto it = std::sregex_iterator(first.begin(), first.end(), tick);
       it != std::sregex_iterator(); ++it) {
    double x = std::stod((*it)[1]);
    double half = 7.0 * static_cast<double>((*it)[2].length()) / 2;
    EXPECT_GT(x - half, last_end) << (*it)[2];
    last_end = x + half;
    ++ticks;
  }
  EXPECT_GE(ticks, 3u);
}

}  // namespace
}  // namespace stallscope

namespace stallscope {
namespace {

// A change point's causes name the time row that moved most, where it moved
// a tenth of the wall time and a second at least.
TEST(HistoryCauses, TheTimeRowThatMovedMost) {
  HistoryChange change;
  change.diff.emplace();
  RankTime a, b;
  a.wall_s = 100;
  b.wall_s = 130;
  a.at(TimeRow::kCompute) = b.at(TimeRow::kCompute) = 80;
  a.at(TimeRow::kCheckpoints) = 2;
  b.at(TimeRow::kCheckpoints) = 30;
  b.at(TimeRow::kDataWait) = 2;
  change.diff->time_a.ranks = {a};
  change.diff->time_b.ranks = {b};
  EXPECT_EQ(ChangeCauses(change), "time in checkpoints 2.0 -> 30.0 s");
  // Under a tenth of the wall: not a cause.
  change.diff->time_b.ranks[0].at(TimeRow::kCheckpoints) = 9;
  EXPECT_EQ(ChangeCauses(change), "no cause beyond noise");
  // A side without steps: nothing to compare.
  change.diff->time_b.ranks.clear();
  EXPECT_EQ(ChangeCauses(change), "no cause beyond noise");
}

}  // namespace
}  // namespace stallscope
