// distributed.straggler and distributed.load_imbalance over the hook's
// per-rank step records (analyze/rank_rules.h).
#include "analyze/rank_rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "core/stats.h"

namespace stallscope {
namespace {

// A step with its sync record (stallscope.ddp), when there is one.
struct RankStep {
  const StepEvent* e;
  const StepSync* sync;
};
using StepsByRank = std::map<int, std::vector<RankStep>>;

// The counted steps of each rank: warm-up left out, sane times only.
StepsByRank CountedSteps(const Timeline& timeline) {
  std::map<std::pair<int, int64_t>, const StepSync*> syncs;
  for (const StepSync& s : timeline.step_syncs) syncs[{s.rank, s.step}] = &s;
  StepsByRank by_rank;
  for (const StepEvent& e : timeline.steps) {
    if (e.step < kRankWarmupSteps || !(e.step_seconds > 0)) continue;
    auto it = syncs.find({e.rank, e.step});
    by_rank[e.rank].push_back({&e, it == syncs.end() ? nullptr : it->second});
  }
  return by_rank;
}

std::string HostOf(const Timeline& timeline, int rank, const std::string& fallback) {
  for (const RankInfo& r : timeline.ranks) {
    if (r.rank == rank && !r.hostname.empty()) return r.hostname;
  }
  return fallback;
}

std::string RankName(const RankSummary& r) {
  return r.hostname.empty() ? fmt::format("rank {}", r.rank)
                            : fmt::format("rank {} on {}", r.rank, r.hostname);
}

// One step every rank reported: each rank's record of it.
using StepRow = std::map<int, RankStep>;

// The steps every rank reported (with a sync record when `need_sync`), and
// the step's length: the longest rank's step (they wait for each other).
std::map<int64_t, StepRow> ComparableSteps(const StepsByRank& by_rank, bool need_sync) {
  std::map<int64_t, StepRow> by_step;
  for (const auto& [rank, steps] : by_rank) {
    for (const RankStep& s : steps) {
      if (!need_sync || s.sync) by_step[s.e->step][rank] = s;
    }
  }
  std::erase_if(by_step, [&](const auto& kv) { return kv.second.size() != by_rank.size(); });
  return by_step;
}

double StepLength(const StepRow& row) {
  double step_s = 0;
  for (const auto& [rank, s] : row) step_s = std::max(step_s, s.e->step_seconds);
  return step_s;
}

// The sustained test both rules share: step by step, the rank a rule singles
// out (or none when the step is within its threshold), and the rank singled
// out most often. A rank that is it in 2 of 3 compared steps is sustained;
// ranks trading places on shared CPUs are not.
struct SustainedCall {
  int rank = 0;
  int64_t compared = 0;     // steps every rank reported
  int64_t singled_out = 0;  // of those, steps where `pick` named this rank
  double mean_step_s = 0;   // the compared steps' mean length
  bool Sustained() const {
    return compared >= kRankMinSteps &&
           static_cast<double>(singled_out) >=
               kStragglerSustainedShare * static_cast<double>(compared);
  }
};

template <typename Pick>  // std::optional<int>(const StepRow&, double step_s)
std::optional<SustainedCall> MostSingledOut(const std::map<int64_t, StepRow>& by_step, Pick pick) {
  std::map<int, int64_t> count;
  double step_sum = 0;
  for (const auto& [step, row] : by_step) {
    const double step_s = StepLength(row);
    step_sum += step_s;
    if (std::optional<int> rank = pick(row, step_s)) ++count[*rank];
  }
  if (count.empty()) return std::nullopt;
  auto best = std::max_element(count.begin(), count.end(),
                               [](const auto& a, const auto& b) { return a.second < b.second; });
  SustainedCall call;
  call.rank = best->first;
  call.compared = static_cast<int64_t>(by_step.size());
  call.singled_out = best->second;
  call.mean_step_s = step_sum / static_cast<double>(by_step.size());
  return call;
}

// A rank's own work in one step: step - data wait - sync wait, clamped as
// SummarizeRanks clamps the means.
double StepDataWait(const RankStep& s) {
  return std::clamp(s.e->wait_seconds, 0.0, s.e->step_seconds);
}

double StepCompute(const RankStep& s) {
  const double step = s.e->step_seconds;
  const double sync = s.sync ? std::clamp(s.sync->sync_seconds, 0.0, step) : 0.0;
  return std::max(0.0, step - StepDataWait(s) - sync);
}

struct StragglerCall {
  SustainedCall call;     // steps where this rank was waited for (> threshold)
  double mean_gap_s = 0;  // others' median sync wait minus this rank's, averaged
};

// For every step number all ranks reported with a sync wait: who waited
// least, and by how much less than the median of the others.
std::optional<StragglerCall> FindStraggler(const StepsByRank& by_rank) {
  const std::map<int64_t, StepRow> by_step = ComparableSteps(by_rank, /*need_sync=*/true);
  auto others_median = [](const StepRow& row, int rank) {
    std::vector<double> others;
    for (const auto& [other, o] : row) {
      if (other != rank) others.push_back(o.sync->sync_seconds);
    }
    return Median(others);
  };
  std::optional<SustainedCall> call =
      MostSingledOut(by_step, [&](const StepRow& row, double step_s) -> std::optional<int> {
        int least = row.begin()->first;
        for (const auto& [rank, s] : row) {
          if (s.sync->sync_seconds < row.at(least).sync->sync_seconds) least = rank;
        }
        if (others_median(row, least) - row.at(least).sync->sync_seconds >
            kStragglerStepFraction * step_s) {
          return least;
        }
        return std::nullopt;
      });
  if (!call || call->compared < kRankMinSteps) return std::nullopt;
  double gap_sum = 0;  // over every compared step, not only those it was waited for
  for (const auto& [step, row] : by_step) {
    gap_sum += others_median(row, call->rank) - row.at(call->rank).sync->sync_seconds;
  }
  return StragglerCall{*call, gap_sum / static_cast<double>(call->compared)};
}

// distributed.load_imbalance's sustained test: the steps in which `rank`
// (the one with the most of `value` on average) has more than the step's
// least by over `threshold` of the step. Judged against the least rather
// than as "the most in this step" so that several equally busy ranks
// trading the top place still count against one light rank.
template <typename Value>  // double(const RankStep&)
std::optional<SustainedCall> FindImbalance(const StepsByRank& by_rank, bool need_sync, int rank,
                                           double threshold, Value value) {
  return MostSingledOut(ComparableSteps(by_rank, need_sync),
                        [&](const StepRow& row, double step_s) -> std::optional<int> {
                          double least = value(row.at(rank));
                          for (const auto& [r, s] : row) least = std::min(least, value(s));
                          if (value(row.at(rank)) - least > threshold * step_s) return rank;
                          return std::nullopt;
                        });
}

const RankSummary& Row(const std::vector<RankSummary>& rows, int rank) {
  return *std::find_if(rows.begin(), rows.end(),
                       [&](const RankSummary& r) { return r.rank == rank; });
}

}  // namespace

std::vector<StepParts> CountedStepParts(const Timeline& timeline) {
  std::vector<StepParts> parts;
  for (const auto& [rank, steps] : CountedSteps(timeline)) {
    for (const RankStep& s : steps) {
      StepParts p;
      p.rank = rank;
      p.step = s.e->step;
      p.t = s.e->t;
      p.step_s = s.e->step_seconds;
      p.data_wait_s = StepDataWait(s);
      if (s.sync) p.sync_wait_s = std::clamp(s.sync->sync_seconds, 0.0, p.step_s);
      p.compute_s = StepCompute(s);
      parts.push_back(p);
    }
  }
  return parts;
}

std::vector<RankSummary> SummarizeRanks(const Timeline& timeline,
                                        const std::string& fallback_host) {
  std::vector<RankSummary> rows;
  for (const auto& [rank, steps] : CountedSteps(timeline)) {
    RankSummary r;
    r.rank = rank;
    r.hostname = HostOf(timeline, rank, fallback_host);
    r.steps = static_cast<int64_t>(steps.size());
    double step = 0, wait = 0, sync = 0, cpu = 0;
    int64_t with_sync = 0;
    for (const RankStep& s : steps) {
      step += s.e->step_seconds;
      wait += std::clamp(s.e->wait_seconds, 0.0, s.e->step_seconds);
      if (s.sync) {
        ++with_sync;
        sync += std::clamp(s.sync->sync_seconds, 0.0, s.e->step_seconds);
        cpu += s.sync->cpu_seconds;
      }
    }
    const double n = static_cast<double>(steps.size());
    r.step_s = step / n;
    r.data_wait_s = wait / n;
    r.compute_s = r.step_s - r.data_wait_s;
    // Only when every counted step has it: a mean over a subset would not add up.
    if (with_sync == r.steps) {
      r.sync_wait_s = sync / n;
      r.cpu_s = cpu / n;
      r.compute_s = std::max(0.0, r.compute_s - *r.sync_wait_s);
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

std::vector<Finding> CheckRanks(const Timeline& timeline) {
  std::vector<Finding> findings;
  StepsByRank by_rank = CountedSteps(timeline);
  std::erase_if(by_rank, [](const auto& kv) {
    return static_cast<int64_t>(kv.second.size()) < kRankMinSteps;
  });
  if (by_rank.size() < 2) return findings;
  std::vector<RankSummary> rows = SummarizeRanks(timeline, timeline.info.hostname);
  std::erase_if(rows, [&](const RankSummary& r) { return !by_rank.count(r.rank); });
  double mean_step = 0;
  for (const RankSummary& r : rows) mean_step += r.step_s;
  mean_step /= static_cast<double>(rows.size());
  if (!(mean_step > 0)) return findings;

  std::optional<int> straggler;
  if (std::optional<StragglerCall> straggle = FindStraggler(by_rank)) {
    const SustainedCall* call = &straggle->call;
    const double fraction = call->mean_step_s > 0 ? straggle->mean_gap_s / call->mean_step_s : 0;
    if (call->Sustained() && fraction > kStragglerStepFraction) {
      straggler = call->rank;
      const RankSummary& s = Row(rows, call->rank);
      double others_compute = 0, others_wait = 0, others_sync = 0;
      for (const RankSummary& r : rows) {
        if (r.rank == s.rank) continue;
        others_compute += r.compute_s;
        others_wait += r.data_wait_s;
        others_sync += r.sync_wait_s.value_or(0);
      }
      const double k = static_cast<double>(rows.size() - 1);
      others_compute /= k;
      others_wait /= k;
      others_sync /= k;
      const bool data = s.data_wait_s - others_wait > s.compute_s - others_compute;
      Finding f;
      f.id = "distributed.straggler";
      f.layer = Layer::kDistributed;
      f.severity =
          fraction >= kStragglerCriticalFraction ? Severity::kCritical : Severity::kWarning;
      f.summary = fmt::format(
          "{} is the straggler: the other ranks wait {:.0f} ms a step ({:.0f}% of it) in "
          "gradient sync for it, in {} of {} steps; it spends {:.0f} ms more on {} than they do",
          RankName(s), 1000 * straggle->mean_gap_s, 100 * fraction, call->singled_out,
          call->compared,
          1000 * (data ? s.data_wait_s - others_wait : s.compute_s - others_compute),
          data ? "waiting for data" : "compute");
      f.evidence = {{"rank", int64_t{s.rank}},
                    {"host", s.hostname},
                    {"wait_for_it_seconds_per_step", straggle->mean_gap_s},
                    {"step_fraction", fraction},
                    {"steps_waited_for", call->singled_out},
                    {"steps_compared", call->compared},
                    {"its_sync_wait_seconds", s.sync_wait_s.value_or(0)},
                    {"others_sync_wait_seconds", others_sync},
                    {"its_compute_seconds", s.compute_s},
                    {"others_compute_seconds", others_compute},
                    {"its_data_wait_seconds", s.data_wait_s},
                    {"others_data_wait_seconds", others_wait},
                    {"cause", std::string(data ? "data_wait" : "compute")}};
      f.next = data ? fmt::format(
                          "rank {}'s loader is slower: compare its data (stallscope dataset PATH "
                          "on {}), its workers and sample sizes with the other ranks'",
                          s.rank, s.hostname.empty() ? "its host" : s.hostname)
                    : fmt::format(
                          "find what slows rank {}: `stallscope cluster` under mpirun for a "
                          "different GPU, driver or clock; CPU contention or throttling on {}; "
                          "uneven sample sizes in its shard",
                          s.rank, s.hostname.empty() ? "its host" : s.hostname);
      f.impact = Impact{std::clamp(fraction, 0.0, 1.0), std::nullopt,
                        "the other ranks' extra wait in gradient sync over the step"};
      findings.push_back(std::move(f));
    }
  }

  auto spread = [&](auto value) {
    const RankSummary* lo = &rows.front();
    const RankSummary* hi = &rows.front();
    for (const RankSummary& r : rows) {
      if (value(r) < value(*lo)) lo = &r;
      if (value(r) > value(*hi)) hi = &r;
    }
    return std::pair{lo, hi};
  };
  // Sustained as for the straggler (the same helper): the rank with the most
  // on average must be over the threshold in 2 of 3 steps compared, or a few
  // odd steps, or ranks trading places on shared CPUs, would make a spread of
  // the means.
  auto imbalance = [&](const char* what, const RankSummary& lo, const RankSummary& hi, double lo_s,
                       double hi_s, double threshold, const std::optional<SustainedCall>& call) {
    const double fraction = (hi_s - lo_s) / mean_step;
    if (!(fraction > threshold)) return;
    if (!call || !call->Sustained() || call->rank != hi.rank) return;
    Finding f;
    f.id = "distributed.load_imbalance";
    f.layer = Layer::kDistributed;
    f.severity = Severity::kWarning;
    const bool data = std::string_view(what) == "data_wait";
    f.summary = fmt::format(
        "uneven {} across ranks: {} takes {:.0f} ms a step, {} {:.0f} ms ({:.0f}% of a step "
        "apart; over {:.0f}% in {} of {} steps); every rank waits for the slowest",
        data ? "data wait" : "compute", RankName(hi), 1000 * hi_s, RankName(lo), 1000 * lo_s,
        100 * fraction, 100 * threshold, call->singled_out, call->compared);
    f.evidence = {{"problem", std::string(what)},
                  {"max_rank", int64_t{hi.rank}},
                  {"max_seconds", hi_s},
                  {"min_rank", int64_t{lo.rank}},
                  {"min_seconds", lo_s},
                  {"spread_step_fraction", fraction},
                  {"mean_step_seconds", mean_step},
                  {"threshold_step_fraction", threshold},
                  {"steps_over_threshold", call->singled_out},
                  {"steps_compared", call->compared},
                  {"ranks", static_cast<int64_t>(rows.size())}};
    f.next = data ? "give the slow rank's loader more workers or faster storage; shard the data "
                    "so every rank reads as much (stallscope dataset PATH on each node)"
                  : "even out the work per rank: bucket samples by size (uneven image or "
                    "sequence lengths), and check the ranks' hardware with `stallscope cluster`";
    f.impact = Impact{std::clamp(fraction, 0.0, 1.0), std::nullopt,
                      "the spread over the mean step: what the slowest rank adds to every step"};
    findings.push_back(std::move(f));
  };
  // Compute differs only meaningfully when sync is measured: without it the
  // step minus the data wait holds the sync wait too, equal across ranks.
  const bool have_sync = std::all_of(
      rows.begin(), rows.end(), [](const RankSummary& r) { return r.sync_wait_s.has_value(); });
  if (have_sync) {
    auto [lo, hi] = spread([](const RankSummary& r) { return r.compute_s; });
    // The straggler finding already says this when the busiest rank is the straggler.
    if (!(straggler && *straggler == hi->rank)) {
      imbalance("compute", *lo, *hi, lo->compute_s, hi->compute_s, kComputeImbalanceFraction,
                FindImbalance(by_rank, /*need_sync=*/true, hi->rank, kComputeImbalanceFraction,
                              StepCompute));
    }
  }
  auto [lo, hi] = spread([](const RankSummary& r) { return r.data_wait_s; });
  imbalance("data_wait", *lo, *hi, lo->data_wait_s, hi->data_wait_s, kDataWaitImbalanceFraction,
            FindImbalance(by_rank, /*need_sync=*/false, hi->rank, kDataWaitImbalanceFraction,
                          StepDataWait));
  return findings;
}

}  // namespace stallscope
