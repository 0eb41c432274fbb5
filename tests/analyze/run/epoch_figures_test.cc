// The per-epoch arithmetic on timelines built by hand: a first epoch that
// reads its files from a slow disk (8 MiB/s for 12.5 s) and later epochs
// served from the page cache. Wherever the 1 s ticks fall against the epoch
// boundaries, and however short the later epochs, the boundary samples give
// the same epoch bytes and the same finding; a first epoch slow from CPU
// alone, or from reads off another disk, gives none.
#include "analyze/run/epoch_figures.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "analyze/run/loader_rules.h"
#include "analyze/run/rules.h"
#include "finding_matchers.h"

namespace stallscope {
namespace {

constexpr double kRate = 8.0 * 1024 * 1024;  // bytes per second in epoch 0
constexpr double kEpoch0 = 12.5;
constexpr double kLatency = 0.002;  // the hook's mark to the recorder's reading

struct Story {
  double offset = 0;     // of epoch 0's start inside a 1 s interval, in intervals
  double later_s = 0.1;  // each later epoch
  int later_epochs = 3;
  bool data_disk_reads = true;     // epoch 0 reads loop7 (the data disk)
  bool system_disk_reads = false;  // epoch 0 reads vda instead (a compiler's files)
};

// What the job read from `disk` by time t.
double ReadBy(double start, double t, bool from_this_disk) {
  if (!from_this_disk) return 0;
  return kRate * std::clamp(t - start, 0.0, kEpoch0);
}

Timeline Make(const Story& story) {
  Timeline tl;
  tl.info.interval_seconds = 1;
  tl.info.cpu_count = 4;
  tl.info.data_device = "loop7";
  tl.inputs_recorded = true;
  const double start = 3 + story.offset;
  const double end0 = start + kEpoch0;
  const double job_end = end0 + story.later_epochs * story.later_s;
  tl.info.duration_seconds = job_end;
  const bool any_reads = story.data_disk_reads || story.system_disk_reads;
  auto data = [&](double t) { return ReadBy(start, t, story.data_disk_reads); };
  auto system = [&](double t) { return ReadBy(start, t, story.system_disk_reads); };
  auto tree = [&](double t) { return ReadBy(start, t, any_reads); };
  // Interval samples every second, and the last one when the job ended.
  std::vector<double> ticks;
  for (double t = 1; t < job_end; t += 1) ticks.push_back(t);
  ticks.push_back(job_end);
  double before = 0;
  for (double t : ticks) {
    TimelineSample s;
    s.t = t;
    const bool alive = t < job_end;
    s.processes = alive ? 3 : 0;
    s.tree_rss_bytes = alive ? 1ull << 30 : 0;
    s.disk_read_kib_per_s = (data(t) - data(before)) / 1024 / (t - before);
    tl.samples.push_back(s);
    if (alive) {
      ProcessPoint p;
      p.t = t;
      p.pid = 100;
      p.rss_bytes = s.tree_rss_bytes;
      p.read_kib_per_s = (tree(t) - tree(before)) / 1024 / (t - before);
      tl.processes.push_back(p);
    }
    before = t;
  }
  // The hook: epoch marks, and 5 steps in each epoch, the last at its end.
  std::vector<double> starts = {start};
  for (int k = 0; k < story.later_epochs; ++k) starts.push_back(end0 + k * story.later_s);
  for (size_t k = 0; k < starts.size(); ++k) {
    tl.epochs.push_back({0, static_cast<int>(k), starts[k]});
    const double end = k + 1 < starts.size() ? starts[k + 1] : job_end;
    for (int i = 1; i <= 5; ++i) {
      const double step = (end - starts[k]) / 5;
      tl.steps.push_back({0, static_cast<int64_t>(k * 5 + i), starts[k] + i * step,
                          k == 0 ? step * 0.99 : 0.0, step});
    }
  }
  // Boundary samples at each mark and at the end; counters since boot.
  auto reading = [&](double t, std::optional<int> epoch) {
    BoundarySample b;
    b.t = t;
    b.epoch = epoch;
    b.processes = epoch ? 3 : 1;
    b.tree_rss_bytes = 1ull << 30;
    b.tree_cpu_seconds = t;
    b.tree_read_bytes = static_cast<uint64_t>(5e6 + tree(t));
    b.disk_read_bytes = {{"loop7", static_cast<uint64_t>(1e9 + data(t))},
                         {"vda", static_cast<uint64_t>(7e9 + system(t))}};
    return b;
  };
  for (size_t k = 0; k < starts.size(); ++k) {
    tl.boundaries.push_back(reading(starts[k] + kLatency, static_cast<int>(k)));
  }
  tl.boundaries.push_back(reading(job_end + kLatency, std::nullopt));
  return tl;
}

std::optional<Finding> ColdCache(const Timeline& tl) {
  return CheckColdCache(tl, SummarizeEpochs(tl));
}

TEST(EpochFigures, EpochZeroReadsTheSameWhereverTheTicksFall) {
  // Epoch 0: 12.5 s at 8 MiB/s, less what was read in the reading's latency
  // after the mark: the same for every story.
  const double expected = (kEpoch0 - kLatency) * kRate;
  for (double later_s : {0.05, 0.5, 5.0}) {
    for (int tenth = 0; tenth < 10; ++tenth) {
      Story story;
      story.offset = tenth / 10.0;
      story.later_s = later_s;
      SCOPED_TRACE(testing::Message() << "offset " << story.offset << ", later " << later_s);
      const Timeline tl = Make(story);
      const std::vector<EpochSummary> epochs = SummarizeEpochs(tl);
      ASSERT_EQ(epochs.size(), 4u);
      ASSERT_TRUE(epochs[0].read_bytes.has_value());
      EXPECT_NEAR(*epochs[0].read_bytes, expected, 1.0);
      for (size_t k = 1; k < epochs.size(); ++k) {
        ASSERT_TRUE(epochs[k].read_bytes.has_value()) << k;
        EXPECT_NEAR(*epochs[k].read_bytes, 0, 1.0) << k;
        // An epoch shorter than an interval still has its RSS.
        EXPECT_EQ(epochs[k].peak_tree_rss_bytes, 1ull << 30) << k;
      }
      std::optional<Finding> f = ColdCache(tl);
      ASSERT_TRUE(f.has_value());
      EXPECT_EQ(EvidenceOf<std::string>(*f, "measured_from"), "boundary samples");
      EXPECT_NEAR(static_cast<double>(EvidenceOf<int64_t>(*f, "epoch0_read_bytes")), expected, 1.0);
      EXPECT_NEAR(EvidenceDouble(*f, "epoch0_read_bytes_per_s"), kRate, kRate * 0.001);
      EXPECT_NEAR(EvidenceDouble(*f, "later_read_bytes_per_s"), 0, 1.0);
      EXPECT_EQ(EvidenceOf<std::string>(*f, "device"), "loop7");
      EXPECT_NE(f->summary.find("epoch 0 read 100.0 MiB from loop7"), std::string::npos)
          << f->summary;
    }
  }
}

TEST(EpochFigures, AFirstEpochSlowFromCpuAloneIsNoColdCache) {
  for (double later_s : {0.05, 0.5, 5.0}) {
    for (int tenth = 0; tenth < 10; ++tenth) {
      Story story;
      story.offset = tenth / 10.0;
      story.later_s = later_s;
      story.data_disk_reads = false;
      SCOPED_TRACE(testing::Message() << "offset " << story.offset << ", later " << later_s);
      const Timeline tl = Make(story);
      EXPECT_EQ(SummarizeEpochs(tl)[0].read_bytes, std::optional<double>(0));
      EXPECT_FALSE(ColdCache(tl).has_value());
      // Nor when what it read came off another disk than the data's (a
      // compiler loading its files from the system disk).
      story.system_disk_reads = true;
      const Timeline compiling = Make(story);
      EXPECT_EQ(SummarizeEpochs(compiling)[0].read_bytes, std::optional<double>(0));
      EXPECT_FALSE(ColdCache(compiling).has_value());
    }
  }
}

TEST(EpochFigures, MarksCloserThanTheSpacingShareOneSpan) {
  Timeline tl;
  tl.epochs = {{0, 0, 1.0}, {0, 1, 2.0}, {0, 2, 2.01}, {0, 3, 2.03}, {0, 4, 3.0}};
  auto reading = [](double t, std::optional<int> epoch, uint64_t bytes) {
    BoundarySample b;
    b.t = t;
    b.epoch = epoch;
    b.processes = 1;
    b.tree_read_bytes = bytes;
    if (bytes > 0) b.disk_read_bytes = {{"sda", bytes}};  // left out while it read nothing
    return b;
  };
  // Epochs 2 and 3 were marked within 50 ms of epoch 1's reading: one
  // reading 50 ms after it, as epoch 3.
  tl.boundaries = {reading(1.0, 0, 0), reading(2.0, 1, 100), reading(2.05, 3, 110),
                   reading(3.0, 4, 200), reading(3.5, std::nullopt, 260)};
  const std::vector<BoundarySpan> spans = BoundarySpans(tl);
  ASSERT_EQ(spans.size(), 4u);
  EXPECT_EQ(BoundaryDisk(tl), "sda");  // no data device: the disk that read most
  EXPECT_EQ(spans[1].first_epoch, 1);
  EXPECT_EQ(spans[1].last_epoch, 2);
  EXPECT_EQ(spans[2].first_epoch, 3);
  EXPECT_EQ(spans[2].last_epoch, 3);
  EXPECT_EQ(spans[3].first_epoch, 4);
  EXPECT_EQ(spans[3].last_epoch, 4);
  EXPECT_EQ(spans[3].read_bytes, std::optional<double>(60));
  EXPECT_NEAR(spans[3].seconds, 0.5, 1e-9);
  // Epochs 1 and 2 share a span: neither has figures of its own.
  const std::vector<EpochSummary> epochs = SummarizeEpochs(tl);
  ASSERT_EQ(epochs.size(), 5u);
  EXPECT_EQ(epochs[0].read_bytes, std::optional<double>(100));
  EXPECT_FALSE(epochs[1].read_bytes.has_value());
  EXPECT_FALSE(epochs[2].read_bytes.has_value());
  EXPECT_EQ(epochs[3].read_bytes, std::optional<double>(90));
  // A tree that lost a process unreaped: its counter went back, the disk's
  // figure stands alone.
  tl.boundaries[3].tree_read_bytes = 50;
  tl.boundaries[3].disk_read_bytes = {{"sda", 205}};
  EXPECT_EQ(BoundarySpans(tl)[2].read_bytes, std::optional<double>(95));
}

// The stories above do reach the intervals' blind spot: without boundary
// samples, later epochs shorter than an interval share the interval of
// epoch 0's last reads, and the finding depends on where the ticks fall.
TEST(EpochFigures, TheStoriesReachTheIntervalsBlindSpot) {
  int found = 0;
  for (int tenth = 0; tenth < 10; ++tenth) {
    Story story;
    story.offset = tenth / 10.0;
    story.later_s = 0.05;
    Timeline tl = Make(story);
    tl.boundaries.clear();
    if (ColdCache(tl)) ++found;
  }
  EXPECT_LT(found, 10);
}

TEST(EpochFigures, FilesWithoutBoundarySamplesJudgeFromTheIntervals) {
  Story story;
  story.later_s = 5.0;
  Timeline tl = Make(story);
  tl.boundaries.clear();
  EXPECT_TRUE(BoundarySpans(tl).empty());
  EXPECT_FALSE(SummarizeEpochs(tl)[0].read_bytes.has_value());
  std::optional<Finding> f = ColdCache(tl);
  ASSERT_TRUE(f.has_value());  // epochs longer than an interval: the old arithmetic holds
  EXPECT_EQ(EvidenceOf<std::string>(*f, "measured_from"), "interval samples");
}

}  // namespace
}  // namespace stallscope
