// distributed.straggler and distributed.load_imbalance over the hook's
// per-rank step records (analyze/rank_rules.h).
#include "analyze/rank_rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace stallscope {
namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

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

struct StragglerCall {
  int rank = 0;
  int64_t compared = 0;  // steps every rank reported with a sync wait
  int64_t waited_for = 0;  // of those, steps where this rank was waited for (> threshold)
  double mean_gap_s = 0;   // others' median sync wait minus this rank's, averaged
  double mean_step_s = 0;
};

// For every step number all ranks reported with a sync wait: who waited
// least, and by how much less than the median of the others.
std::optional<StragglerCall> FindStraggler(const StepsByRank& by_rank) {
  std::map<int64_t, std::map<int, RankStep>> by_step;
  for (const auto& [rank, steps] : by_rank) {
    for (const RankStep& s : steps) {
      if (s.sync) by_step[s.e->step][rank] = s;
    }
  }
  const size_t ranks = by_rank.size();
  std::map<int, int64_t> waited_for;
  std::map<int, double> gap_sum;  // per candidate rank, over every compared step
  int64_t compared = 0;
  double step_sum = 0;
  for (const auto& [step, row] : by_step) {
    if (row.size() != ranks) continue;
    ++compared;
    double step_s = 0;
    for (const auto& [rank, s] : row) step_s = std::max(step_s, s.e->step_seconds);
    step_sum += step_s;
    int least = row.begin()->first;
    for (const auto& [rank, s] : row) {
      std::vector<double> others;
      for (const auto& [other, o] : row) {
        if (other != rank) others.push_back(o.sync->sync_seconds);
      }
      gap_sum[rank] += Median(others) - s.sync->sync_seconds;
      if (s.sync->sync_seconds < row.at(least).sync->sync_seconds) least = rank;
    }
    std::vector<double> others;
    for (const auto& [other, o] : row) {
      if (other != least) others.push_back(o.sync->sync_seconds);
    }
    if (Median(others) - row.at(least).sync->sync_seconds > kStragglerStepFraction * step_s) {
      ++waited_for[least];
    }
  }
  if (compared < kRankMinSteps || waited_for.empty()) return std::nullopt;
  auto best = std::max_element(waited_for.begin(), waited_for.end(),
                               [](const auto& a, const auto& b) { return a.second < b.second; });
  StragglerCall call;
  call.rank = best->first;
  call.compared = compared;
  call.waited_for = best->second;
  call.mean_gap_s = gap_sum[call.rank] / static_cast<double>(compared);
  call.mean_step_s = step_sum / static_cast<double>(compared);
  return call;
}

const RankSummary& Row(const std::vector<RankSummary>& rows, int rank) {
  return *std::find_if(rows.begin(), rows.end(), [&](const RankSummary& r) { return r.rank == rank; });
}

}  // namespace

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
  if (std::optional<StragglerCall> call = FindStraggler(by_rank)) {
    const double share = static_cast<double>(call->waited_for) / static_cast<double>(call->compared);
    const double fraction = call->mean_step_s > 0 ? call->mean_gap_s / call->mean_step_s : 0;
    if (share >= kStragglerSustainedShare && fraction > kStragglerStepFraction) {
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
      f.severity = fraction >= kStragglerCriticalFraction ? Severity::kCritical : Severity::kWarning;
      f.summary = fmt::format(
          "{} is the straggler: the other ranks wait {:.0f} ms a step ({:.0f}% of it) in "
          "gradient sync for it, in {} of {} steps; it spends {:.0f} ms more on {} than they do",
          RankName(s), 1000 * call->mean_gap_s, 100 * fraction, call->waited_for, call->compared,
          1000 * (data ? s.data_wait_s - others_wait : s.compute_s - others_compute),
          data ? "waiting for data" : "compute");
      f.evidence = {{"rank", int64_t{s.rank}},
                    {"host", s.hostname},
                    {"wait_for_it_seconds_per_step", call->mean_gap_s},
                    {"step_fraction", fraction},
                    {"steps_waited_for", call->waited_for},
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
  auto imbalance = [&](const char* what, const RankSummary& lo, const RankSummary& hi,
                       double lo_s, double hi_s, double threshold) {
    const double fraction = (hi_s - lo_s) / mean_step;
    if (!(fraction > threshold)) return;
    Finding f;
    f.id = "distributed.load_imbalance";
    f.layer = Layer::kDistributed;
    f.severity = Severity::kWarning;
    const bool data = std::string_view(what) == "data_wait";
    f.summary = fmt::format(
        "uneven {} across ranks: {} takes {:.0f} ms a step, {} {:.0f} ms ({:.0f}% of a step "
        "apart); every rank waits for the slowest",
        data ? "data wait" : "compute", RankName(hi), 1000 * hi_s, RankName(lo), 1000 * lo_s,
        100 * fraction);
    f.evidence = {{"problem", std::string(what)},
                  {"max_rank", int64_t{hi.rank}},
                  {"max_seconds", hi_s},
                  {"min_rank", int64_t{lo.rank}},
                  {"min_seconds", lo_s},
                  {"spread_step_fraction", fraction},
                  {"mean_step_seconds", mean_step},
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
  const bool have_sync =
      std::all_of(rows.begin(), rows.end(), [](const RankSummary& r) { return r.sync_wait_s.has_value(); });
  if (have_sync) {
    auto [lo, hi] = spread([](const RankSummary& r) { return r.compute_s; });
    // Sustained as for the straggler: the busiest rank on average must be the
    // busiest in 2 of 3 steps, or ranks trading places on shared CPUs would count.
    std::map<int64_t, std::pair<int, double>> busiest;  // step -> (rank, compute)
    for (const auto& [rank, steps] : by_rank) {
      for (const RankStep& st : steps) {
        if (!st.sync) continue;
        double c = st.e->step_seconds - st.e->wait_seconds - st.sync->sync_seconds;
        auto [it, fresh] = busiest.try_emplace(st.e->step, rank, c);
        if (!fresh && c > it->second.second) it->second = {rank, c};
      }
    }
    int64_t hi_busiest = 0;
    for (const auto& [step, who] : busiest) hi_busiest += who.first == hi->rank;
    const bool sustained =
        !busiest.empty() && static_cast<double>(hi_busiest) >=
                                kStragglerSustainedShare * static_cast<double>(busiest.size());
    // The straggler finding already says this when the busiest rank is the straggler.
    if (sustained && !(straggler && *straggler == hi->rank)) {
      imbalance("compute", *lo, *hi, lo->compute_s, hi->compute_s, kComputeImbalanceFraction);
    }
  }
  auto [lo, hi] = spread([](const RankSummary& r) { return r.data_wait_s; });
  imbalance("data_wait", *lo, *hi, lo->data_wait_s, hi->data_wait_s, kDataWaitImbalanceFraction);
  return findings;
}

}  // namespace stallscope
