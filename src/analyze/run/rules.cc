#include "analyze/run/rules.h"

#include <algorithm>
#include <limits>
#include <map>

#include "analyze/host/gpu_health_rules.h"
#include "analyze/host/gpu_rules.h"
#include "analyze/report.h"
#include "analyze/run/epoch_figures.h"
#include "analyze/run/rank_rules.h"
#include "analyze/run/rank_stop_rules.h"

namespace stallscope {

double IntervalOf(const Timeline& timeline, size_t i) {
  const std::vector<TimelineSample>& s = timeline.samples;
  double dt = i == 0 ? s[0].t : s[i].t - s[i - 1].t;
  return dt > 0 ? dt : timeline.info.interval_seconds;
}

std::optional<DataWait> MeasureDataWait(const Timeline& timeline, double after_t) {
  struct RankTotals {
    double first_t = std::numeric_limits<double>::infinity();
    size_t first_index = 0;
    int64_t steps = 0;
    double wait = 0;
    double step = 0;
  };
  std::map<int, RankTotals> ranks;
  const std::vector<StepEvent>& steps = timeline.steps;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].t <= after_t) continue;
    RankTotals& r = ranks[steps[i].rank];
    if (steps[i].t < r.first_t) {
      r.first_t = steps[i].t;
      r.first_index = i;
    }
  }
  for (size_t i = 0; i < steps.size(); ++i) {
    const StepEvent& s = steps[i];
    if (s.t <= after_t) continue;
    RankTotals& r = ranks[s.rank];
    if (i == r.first_index || s.step_seconds <= 0) continue;
    r.steps += 1;
    r.wait += std::clamp(s.wait_seconds, 0.0, s.step_seconds);
    r.step += s.step_seconds;
  }

  DataWait w;
  for (const auto& [rank, r] : ranks) {
    if (r.steps == 0) continue;
    w.ranks += 1;
    w.steps += r.steps;
    w.wait_seconds += r.wait;
    w.step_seconds += r.step;
  }
  if (w.steps < kInputBoundMinSteps || w.step_seconds <= 0) return std::nullopt;
  w.fraction = w.wait_seconds / w.step_seconds;
  w.worst_rank = ranks.begin()->first;
  w.worst_rank_fraction = w.fraction;
  bool have_worst = false;
  for (const auto& [rank, r] : ranks) {
    // A rank with a handful of steps says little; the overall share stands in.
    if (r.steps < kInputBoundMinSteps || r.step <= 0) continue;
    double fraction = r.wait / r.step;
    if (!have_worst || fraction > w.worst_rank_fraction) {
      w.worst_rank = rank;
      w.worst_rank_fraction = fraction;
      have_worst = true;
    }
  }
  if (!have_worst) w.worst_rank_fraction = w.fraction;
  return w;
}

namespace {

// An epoch's reads, CPU and RSS from the boundary samples that bound it
// alone (epochs shorter than an interval have no interval sample inside).
void AddBoundaryFigures(const Timeline& timeline, std::vector<EpochSummary>& epochs) {
  for (const BoundarySpan& span : BoundarySpans(timeline)) {
    if (span.first_epoch != span.last_epoch) continue;
    for (EpochSummary& e : epochs) {
      if (e.epoch != span.first_epoch) continue;
      e.read_bytes = span.read_bytes;
      e.cpu_seconds = span.cpu_seconds;
      e.peak_tree_rss_bytes = std::max(e.peak_tree_rss_bytes, span.rss_bytes);
    }
  }
}

}  // namespace

std::vector<EpochSummary> SummarizeEpochs(const Timeline& timeline) {
  // Ranks mark the same epoch at slightly different times: the earliest mark
  // starts it.
  std::map<int, double> starts;
  for (const EpochEvent& e : timeline.epochs) {
    auto [it, inserted] = starts.emplace(e.epoch, e.t);
    if (!inserted) it->second = std::min(it->second, e.t);
  }
  std::vector<EpochSummary> epochs;
  for (const auto& [epoch, start] : starts) {
    EpochSummary e;
    e.epoch = epoch;
    e.start_s = start;
    epochs.push_back(e);
  }
  std::sort(epochs.begin(), epochs.end(),
            [](const EpochSummary& a, const EpochSummary& b) { return a.start_s < b.start_s; });
  if (epochs.empty()) return epochs;

  std::optional<int> reference_rank;
  std::vector<const StepEvent*> steps;
  for (const StepEvent& s : timeline.steps) {
    if (!reference_rank || s.rank < *reference_rank) reference_rank = s.rank;
    steps.push_back(&s);
  }
  std::vector<const TimelineSample*> samples;
  for (const TimelineSample& s : timeline.samples) samples.push_back(&s);
  auto by_time = [](const auto* a, const auto* b) { return a->t < b->t; };
  std::stable_sort(steps.begin(), steps.end(), by_time);
  std::stable_sort(samples.begin(), samples.end(), by_time);
  auto first_at = [](const auto& sorted, double t) {
    return std::lower_bound(sorted.begin(), sorted.end(), t,
                            [](const auto* x, double value) { return x->t < value; });
  };

  for (size_t k = 0; k < epochs.size(); ++k) {
    EpochSummary& e = epochs[k];
    const bool last = k + 1 == epochs.size();
    double end = last ? e.start_s : epochs[k + 1].start_s;
    if (last && !steps.empty()) end = std::max(end, steps.back()->t);
    auto inside = [&](double t) { return last ? t <= end : t < end; };

    e.duration_s = end - e.start_s;
    double wait = 0;
    double step = 0;
    for (auto it = first_at(steps, e.start_s); it != steps.end() && inside((*it)->t); ++it) {
      const StepEvent& s = **it;
      if (s.rank == reference_rank) e.steps += 1;
      if (s.step_seconds > 0) {
        wait += std::clamp(s.wait_seconds, 0.0, s.step_seconds);
        step += s.step_seconds;
      }
    }
    if (e.duration_s > 0) e.steps_per_s = static_cast<double>(e.steps) / e.duration_s;
    if (step > 0) e.data_wait_fraction = wait / step;
    for (auto it = first_at(samples, e.start_s); it != samples.end() && inside((*it)->t); ++it) {
      e.peak_tree_rss_bytes = std::max(e.peak_tree_rss_bytes, (*it)->tree_rss_bytes);
    }
  }
  AddBoundaryFigures(timeline, epochs);
  return epochs;
}

FindingsWithNotes CheckRun(const Timeline& timeline, bool rank_rules) {
  FindingsWithNotes out;
  Append(out, CheckRunMemory(timeline));
  Append(out, CheckRunIo(timeline));
  Append(out, CheckRunNetwork(timeline));
  FindingsWithNotes gpu = CheckRunGpus(timeline);
  for (Finding& f : gpu.findings) out.findings.push_back(std::move(f));
  // The kernel's log of the run: its port link-downs join the port counters'
  // network.port_errors as one finding.
  FindingsWithNotes kernel = CheckRunKernelLog(timeline);
  for (Finding& f : kernel.findings) {
    if (f.id == "network.port_errors") {
      MergeFinding(out.findings, std::move(f), "kernel-log", "run");
    } else {
      out.findings.push_back(std::move(f));
    }
  }
  for (std::string& n : kernel.notes) gpu.notes.push_back(std::move(n));
  if (rank_rules) Append(out, CheckRanks(timeline));  // rank_rules.h
  Append(out, CheckRankStops(timeline));              // rank_stop_rules.h
  for (std::string& n : gpu.notes) out.notes.push_back("gpu: " + n);
  for (std::string& n : AllocationTraceNotes(timeline)) out.notes.push_back(std::move(n));
  return out;
}

}  // namespace stallscope
