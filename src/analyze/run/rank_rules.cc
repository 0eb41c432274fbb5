// distributed.straggler and distributed.load_imbalance over the hook's
// per-rank step records (analyze/run/rank_rules.h).
#include "analyze/run/rank_rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <span>
#include <unordered_map>

#include "analyze/run/bucket_arrivals.h"
#include "core/stats.h"

namespace stallscope {
namespace {

// A step with its sync record (stallscope.ddp), when there is one.
struct RankStep {
  const StepEvent* e;
  const StepSync* sync;
};
using StepsByRank = std::map<int, std::vector<RankStep>>;

int64_t StepOf(const RankStep& s) { return s.e->step; }
constexpr auto InStepOrder = [](const RankStep& a, const RankStep& b) {
  return StepOf(a) < StepOf(b);
};

// Positions into a rank's steps, compared by their step numbers.
struct PositionsByStep {
  const std::vector<RankStep>& steps;
  bool operator()(size_t a, int64_t step) const { return StepOf(steps[a]) < step; }
  bool operator()(int64_t step, size_t a) const { return step < StepOf(steps[a]); }
};

// Ranks to dense slots, in the order first seen: a flat table for the
// usual global ranks (0 to a million), a hash map for any other. Looked up
// once per record of a job of millions.
class RankSlots {
 public:
  static constexpr size_t kNone = SIZE_MAX;
  // The slot of `rank`, made when it has none.
  size_t Of(int rank) {
    if (rank >= 0 && rank < kFlatRanks) {
      const size_t at = static_cast<size_t>(rank);
      if (at >= flat_.size()) flat_.resize(at + 1, kNoSlot);
      if (flat_[at] == kNoSlot) {
        flat_[at] = static_cast<uint32_t>(ranks_.size());
        ranks_.push_back(rank);
      }
      return flat_[at];
    }
    auto [it, made] = other_.try_emplace(rank, ranks_.size());
    if (made) ranks_.push_back(rank);
    return it->second;
  }
  // The slot of `rank`, or kNone.
  size_t Find(int rank) const {
    if (rank >= 0 && rank < kFlatRanks) {
      const size_t at = static_cast<size_t>(rank);
      return at < flat_.size() && flat_[at] != kNoSlot ? flat_[at] : kNone;
    }
    auto it = other_.find(rank);
    return it == other_.end() ? kNone : it->second;
  }
  size_t size() const { return ranks_.size(); }
  int RankAt(size_t slot) const { return ranks_[slot]; }

 private:
  static constexpr int kFlatRanks = 1 << 20;
  static constexpr uint32_t kNoSlot = UINT32_MAX;
  std::vector<uint32_t> flat_;
  std::unordered_map<int, size_t> other_;
  std::vector<int> ranks_;
};

// The counted steps of each rank: warm-up left out, sane times only, in the
// order of the parts and of each part's records; each with the last sync
// record of its rank and step number (a step reported twice gets it both
// times). Vectors of pointers, each reserved to its size, rather than a map
// of every (rank, step): a job of hundreds of ranks over hours holds
// millions of steps, and this is the one copy the rules make of them.
StepsByRank CountedSteps(const JobSteps& job) {
  auto counted = [](const StepEvent& e) {
    return e.step >= kRankWarmupSteps && e.step_seconds > 0;
  };
  RankSlots slots;
  std::vector<size_t> count;
  for (const StepRecords& part : job.parts) {
    for (const StepEvent& e : *part.steps) {
      if (!counted(e)) continue;
      const size_t slot = slots.Of(e.rank);
      if (slot == count.size()) count.push_back(0);
      ++count[slot];
    }
  }
  // Per rank: its steps, whether they are in step order (they usually
  // are), and else their positions in step order.
  struct Rank {
    std::vector<RankStep> steps;
    bool in_step_order = true;
    std::vector<size_t> by_step;
    size_t next = 0;  // where the next sync record usually goes
  };
  std::vector<Rank> ranks(slots.size());
  for (size_t i = 0; i < ranks.size(); ++i) ranks[i].steps.reserve(count[i]);
  for (const StepRecords& part : job.parts) {
    for (const StepEvent& e : *part.steps) {
      if (counted(e)) ranks[slots.Find(e.rank)].steps.push_back({&e, nullptr});
    }
  }
  for (Rank& r : ranks) {
    const std::vector<RankStep>& v = r.steps;
    r.in_step_order = std::is_sorted(v.begin(), v.end(), InStepOrder);
    if (!r.in_step_order) {
      r.by_step.resize(v.size());
      for (size_t i = 0; i < v.size(); ++i) r.by_step[i] = i;
      std::stable_sort(r.by_step.begin(), r.by_step.end(),
                       [&](size_t a, size_t b) { return InStepOrder(v[a], v[b]); });
    }
  }
  // Each sync record onto every step of its rank and number; a later
  // record of the same step replaces an earlier one.
  for (const StepRecords& part : job.parts) {
    if (part.syncs == nullptr) continue;
    for (const StepSync& s : *part.syncs) {
      const size_t slot = slots.Find(s.rank);
      if (slot == RankSlots::kNone) continue;
      Rank& r = ranks[slot];
      std::vector<RankStep>& v = r.steps;
      if (r.in_step_order) {
        size_t at = r.next;
        if (at >= v.size() || StepOf(v[at]) != s.step) {
          at = static_cast<size_t>(
              std::lower_bound(v.begin(), v.end(), s.step,
                               [&](const RankStep& a, int64_t step) { return StepOf(a) < step; }) -
              v.begin());
        }
        for (; at < v.size() && StepOf(v[at]) == s.step; ++at) v[at].sync = &s;
        r.next = at;
      } else {
        auto [first, last] =
            std::equal_range(r.by_step.begin(), r.by_step.end(), s.step, PositionsByStep{v});
        for (auto i = first; i != last; ++i) v[*i].sync = &s;
      }
    }
  }
  StepsByRank by_rank;
  for (size_t i = 0; i < ranks.size(); ++i)
    by_rank.emplace(slots.RankAt(i), std::move(ranks[i].steps));
  return by_rank;
}

JobSteps StepsOf(const Timeline& timeline, const std::string& fallback_host) {
  JobSteps job;
  job.parts.push_back({&timeline.steps, &timeline.step_syncs, &timeline.bucket_syncs,
                       timeline.bucket_syncs_recorded || timeline.step_syncs.empty(),
                       &timeline.processes, &timeline.ranks});
  job.ranks = &timeline.ranks;
  job.fallback_host = fallback_host;
  return job;
}

std::string HostOf(const std::vector<RankInfo>* ranks, int rank, const std::string& fallback) {
  if (ranks == nullptr) return fallback;
  for (const RankInfo& r : *ranks) {
    if (r.rank == rank && !r.hostname.empty()) return r.hostname;
  }
  return fallback;
}

std::string RankName(const RankSummary& r) {
  return r.hostname.empty() ? fmt::format("rank {}", r.rank)
                            : fmt::format("rank {} on {}", r.rank, r.hostname);
}

// The steps every rank reported (with a sync record when `need_sync`), as
// columns: at[i][k] is ranks[i]'s record of steps[k]; a step a rank
// reported twice keeps its last record. A column that is a rank's counted
// steps as they are (in step order, each once, all of them in the table:
// the usual case) is read in place; only the others are copied.
struct StepTable {
  std::vector<int> ranks;  // ascending
  std::vector<int64_t> steps;
  std::vector<std::span<const RankStep>> at;
  std::vector<std::vector<RankStep>> copied;  // the columns not read in place
  size_t RankIndex(int rank) const {
    return static_cast<size_t>(std::lower_bound(ranks.begin(), ranks.end(), rank) - ranks.begin());
  }
};

StepTable ComparableSteps(const StepsByRank& by_rank, bool need_sync) {
  StepTable table;
  // Each rank's records to compare, and which of `copied` holds them when
  // they are not its counted steps as they are.
  std::vector<std::span<const RankStep>> kept;
  std::vector<size_t> copy_of;
  constexpr size_t kInPlace = SIZE_MAX;
  table.copied.reserve(2 * by_rank.size());  // at most two columns a rank
  for (const auto& [rank, steps] : by_rank) {
    table.ranks.push_back(rank);
    const bool each_once_in_order =
        std::adjacent_find(steps.begin(), steps.end(), [](const RankStep& a, const RankStep& b) {
          return StepOf(a) >= StepOf(b);
        }) == steps.end();
    const bool all_wanted = !need_sync || std::all_of(steps.begin(), steps.end(),
                                                      [](const RankStep& s) { return s.sync; });
    if (each_once_in_order && all_wanted) {
      kept.emplace_back(steps);
      copy_of.push_back(kInPlace);
      continue;
    }
    std::vector<RankStep> v;
    v.reserve(steps.size());
    for (const RankStep& s : steps) {
      if (!need_sync || s.sync) v.push_back(s);
    }
    if (!std::is_sorted(v.begin(), v.end(), InStepOrder)) {
      std::stable_sort(v.begin(), v.end(), InStepOrder);
    }
    // The last record of a step number.
    std::vector<RankStep>& unique = table.copied.emplace_back();
    unique.reserve(v.size());
    for (const RankStep& s : v) {
      if (!unique.empty() && StepOf(unique.back()) == StepOf(s)) {
        unique.back() = s;
      } else {
        unique.push_back(s);
      }
    }
    kept.emplace_back(unique);
    copy_of.push_back(table.copied.size() - 1);
  }
  if (kept.empty()) return table;
  for (const RankStep& s : kept.front()) table.steps.push_back(StepOf(s));
  for (size_t i = 1; i < kept.size() && !table.steps.empty(); ++i) {
    std::vector<int64_t> both;
    size_t j = 0;
    for (int64_t step : table.steps) {
      while (j < kept[i].size() && StepOf(kept[i][j]) < step) ++j;
      if (j < kept[i].size() && StepOf(kept[i][j]) == step) both.push_back(step);
    }
    table.steps = std::move(both);
  }
  for (size_t i = 0; i < kept.size(); ++i) {
    // Each once and in order, so as many as the table's steps are exactly them.
    if (kept[i].size() == table.steps.size()) {
      table.at.push_back(kept[i]);
      continue;
    }
    std::vector<RankStep>& column = table.copied.emplace_back();
    column.reserve(table.steps.size());
    size_t j = 0;
    for (int64_t step : table.steps) {
      while (StepOf(kept[i][j]) < step) ++j;
      column.push_back(kept[i][j]);
    }
    table.at.push_back(column);
    if (copy_of[i] != kInPlace) std::vector<RankStep>().swap(table.copied[copy_of[i]]);
  }
  return table;
}

// The step's length: the longest rank's step (they wait for each other).
double StepLength(const StepTable& t, size_t k) {
  double step_s = 0;
  for (std::span<const RankStep> column : t.at)
    step_s = std::max(step_s, column[k].e->step_seconds);
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

template <typename Pick>  // std::optional<size_t>(size_t step k, double step_s): a rank index
std::optional<SustainedCall> MostSingledOut(const StepTable& t, Pick pick) {
  std::vector<int64_t> count(t.ranks.size(), 0);
  double step_sum = 0;
  bool any = false;
  for (size_t k = 0; k < t.steps.size(); ++k) {
    const double step_s = StepLength(t, k);
    step_sum += step_s;
    if (std::optional<size_t> i = pick(k, step_s)) {
      ++count[*i];
      any = true;
    }
  }
  if (!any) return std::nullopt;
  const size_t best =
      static_cast<size_t>(std::max_element(count.begin(), count.end()) - count.begin());
  SustainedCall call;
  call.rank = t.ranks[best];
  call.compared = static_cast<int64_t>(t.steps.size());
  call.singled_out = count[best];
  call.mean_step_s = step_sum / static_cast<double>(t.steps.size());
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
std::optional<StragglerCall> FindStraggler(const StepTable& t) {
  std::vector<double> others;
  // The median of the others' (as core/stats.h Median, in linear time: a
  // job of hundreds of ranks asks it twice a step).
  auto others_median = [&](size_t k, size_t self) {
    others.clear();
    for (size_t i = 0; i < t.at.size(); ++i) {
      if (i != self) others.push_back(t.at[i][k].sync->sync_seconds);
    }
    if (others.empty()) return 0.0;
    const size_t mid = others.size() / 2;
    std::nth_element(others.begin(), others.begin() + static_cast<std::ptrdiff_t>(mid),
                     others.end());
    const double upper = others[mid];
    if (others.size() % 2) return upper;
    const double lower =
        *std::max_element(others.begin(), others.begin() + static_cast<std::ptrdiff_t>(mid));
    return (lower + upper) / 2;
  };
  auto sync_of = [&](size_t i, size_t k) { return t.at[i][k].sync->sync_seconds; };
  std::optional<SustainedCall> call =
      MostSingledOut(t, [&](size_t k, double step_s) -> std::optional<size_t> {
        size_t least = 0;
        for (size_t i = 1; i < t.at.size(); ++i) {
          if (sync_of(i, k) < sync_of(least, k)) least = i;
        }
        if (others_median(k, least) - sync_of(least, k) > kStragglerStepFraction * step_s) {
          return least;
        }
        return std::nullopt;
      });
  if (!call || call->compared < kRankMinSteps) return std::nullopt;
  const size_t self = t.RankIndex(call->rank);
  double gap_sum = 0;  // over every compared step, not only those it was waited for
  for (size_t k = 0; k < t.steps.size(); ++k) {
    gap_sum += others_median(k, self) - sync_of(self, k);
  }
  return StragglerCall{*call, gap_sum / static_cast<double>(call->compared)};
}

// distributed.load_imbalance's sustained test: the steps in which `rank`
// (the one with the most of `value` on average) has more than the step's
// least by over `threshold` of the step. Judged against the least rather
// than as "the most in this step" so that several equally busy ranks
// trading the top place still count against one light rank.
template <typename Value>  // double(const RankStep&)
std::optional<SustainedCall> FindImbalance(const StepTable& t, int rank, double threshold,
                                           Value value) {
  const size_t self = t.RankIndex(rank);
  if (self >= t.ranks.size() || t.ranks[self] != rank) return std::nullopt;
  return MostSingledOut(t, [&](size_t k, double step_s) -> std::optional<size_t> {
    const double mine = value(t.at[self][k]);
    double least = mine;
    for (std::span<const RankStep> column : t.at) least = std::min(least, value(column[k]));
    if (mine - least > threshold * step_s) return self;
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
  for (const auto& [rank, steps] : CountedSteps(StepsOf(timeline, ""))) {
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

namespace {

std::vector<RankSummary> Summarize(const StepsByRank& by_rank, const std::vector<RankInfo>* ranks,
                                   const std::string& fallback_host) {
  std::vector<RankSummary> rows;
  for (const auto& [rank, steps] : by_rank) {
    RankSummary r;
    r.rank = rank;
    r.hostname = HostOf(ranks, rank, fallback_host);
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

// distributed.straggler and distributed.load_imbalance over the counted
// steps (ranks with too few left out) and every rank's summary.
// The other ranks' median run delay (0 where none was read).
double OthersRunDelay(const std::vector<RankSummary>& rows, int rank) {
  std::vector<double> others;
  for (const RankSummary& r : rows) {
    if (r.rank != rank && r.run_delay_pct) others.push_back(*r.run_delay_pct);
  }
  return others.empty() ? 0.0 : Median(others);
}

// A straggler by compute whose process waited for a CPU well beyond the
// others: contention on its host.
bool HostCpuBound(const std::vector<RankSummary>& rows, const RankSummary& s) {
  if (!s.run_delay_pct || *s.run_delay_pct < kHostCpuRunDelayPercent) return false;
  return *s.run_delay_pct - OthersRunDelay(rows, s.rank) >= kHostCpuRunDelayMargin;
}

// Each rank's mean run delay over the run, from the parts' process samples
// (the rank's own process, by the pid of its hello in that part).
std::map<int, double> RankRunDelays(const JobSteps& job) {
  std::map<int, std::pair<double, int>> sums;
  for (const StepRecords& p : job.parts) {
    if (p.processes == nullptr || p.part_ranks == nullptr) continue;
    std::map<int, int> rank_of;
    for (const RankInfo& r : *p.part_ranks) rank_of[r.pid] = r.rank;
    for (const ProcessPoint& pt : *p.processes) {
      auto it = rank_of.find(pt.pid);
      if (it == rank_of.end() || !pt.run_delay_percent) continue;
      auto& [sum, n] = sums[it->second];
      sum += *pt.run_delay_percent;
      ++n;
    }
  }
  std::map<int, double> out;
  for (const auto& [rank, s] : sums) out[rank] = s.first / s.second;
  return out;
}

// The straggler's bucket-by-bucket evidence: how often it entered a
// bucket's all-reduce last and the others' wait for it there.
void AddBucketEvidence(const BucketArrivals& arrivals, bool predates, int rank, Finding& f) {
  if (predates) {
    f.evidence.push_back(
        {"buckets", std::string("not recorded: a run file or hook of an earlier version")});
    return;
  }
  if (arrivals.buckets == 0) return;
  auto last = arrivals.last_in.find(rank);
  auto wait = arrivals.others_wait_s.find(rank);
  const double share =
      last == arrivals.last_in.end() ? 0.0 : static_cast<double>(last->second) / arrivals.buckets;
  f.evidence.push_back({"last_into_bucket_share", share});
  f.evidence.push_back({"buckets_compared", static_cast<int64_t>(arrivals.buckets)});
  f.evidence.push_back({"others_bucket_wait_seconds_per_step",
                        wait == arrivals.others_wait_s.end() || arrivals.steps == 0
                            ? 0.0
                            : wait->second / static_cast<double>(arrivals.steps)});
  f.evidence.push_back(
      {"bucket_clock",
       std::string(arrivals.aligned ? "files aligned on the completions" : "one file's clock")});
}

std::vector<Finding> Check(StepsByRank& by_rank, const std::vector<RankSummary>& every_row,
                           const BucketArrivals& arrivals = {}, bool buckets_predate = false) {
  std::vector<Finding> findings;
  std::erase_if(by_rank, [](const auto& kv) {
    return static_cast<int64_t>(kv.second.size()) < kRankMinSteps;
  });
  if (by_rank.size() < 2) return findings;
  std::vector<RankSummary> rows;
  for (const RankSummary& r : every_row) {
    if (by_rank.count(r.rank)) rows.push_back(r);
  }
  double mean_step = 0;
  for (const RankSummary& r : rows) mean_step += r.step_s;
  mean_step /= static_cast<double>(rows.size());
  if (!(mean_step > 0)) return findings;

  std::optional<int> straggler;
  // The steps every rank reported with a sync record, and without the need
  // for one (the same table when every step has one).
  const StepTable synced = ComparableSteps(by_rank, /*need_sync=*/true);
  const bool all_synced = std::all_of(by_rank.begin(), by_rank.end(), [](const auto& kv) {
    return std::all_of(kv.second.begin(), kv.second.end(),
                       [](const RankStep& s) { return s.sync != nullptr; });
  });
  std::optional<StepTable> unsynced;
  if (!all_synced) unsynced = ComparableSteps(by_rank, /*need_sync=*/false);
  const StepTable& every = unsynced ? *unsynced : synced;
  if (std::optional<StragglerCall> straggle = FindStraggler(synced)) {
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
      const bool host_cpu = !data && HostCpuBound(rows, s);
      Finding f;
      f.id = "distributed.straggler";
      f.layer = Layer::kDistributed;
      f.severity =
          fraction >= kStragglerCriticalFraction ? Severity::kCritical : Severity::kWarning;
      f.summary = fmt::format(
          "{} is the straggler: the other ranks wait {:.0f} ms a step ({:.0f}% of it) in "
          "gradient sync for it, in {} of {} steps; it spends {:.0f} ms more on {} than they "
          "do{}",
          RankName(s), 1000 * straggle->mean_gap_s, 100 * fraction, call->singled_out,
          call->compared,
          1000 * (data ? s.data_wait_s - others_wait : s.compute_s - others_compute),
          data ? "waiting for data" : "compute",
          host_cpu ? fmt::format(", waiting for a CPU {:.0f}% of the time", *s.run_delay_pct) : "");
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
                    {"cause", std::string(data ? "input" : (host_cpu ? "host_cpu" : "compute"))}};
      if (s.run_delay_pct) {
        f.evidence.push_back({"its_run_delay_pct", *s.run_delay_pct});
        f.evidence.push_back({"others_run_delay_pct", OthersRunDelay(rows, s.rank)});
      }
      AddBucketEvidence(arrivals, buckets_predate, s.rank, f);
      f.next = data ? fmt::format(
                          "rank {}'s loader is slower: compare its data (stallscope dataset PATH "
                          "on {}), its workers and sample sizes with the other ranks'",
                          s.rank, s.hostname.empty() ? "its host" : s.hostname)
                    : fmt::format(
                          "find what slows rank {}: `stallscope cluster` under mpirun for a "
                          "different GPU, driver or clock; CPU contention or throttling on {}; "
                          "uneven sample sizes in its shard",
                          s.rank, s.hostname.empty() ? "its host" : s.hostname);
      if (host_cpu) {
        f.next = fmt::format(
            "rank {} waits for a CPU on {}: the processes the run lists beside the job "
            "(stallscope report, other processes), fewer ranks or DataLoader workers per host, "
            "or each rank pinned to CPUs of its own",
            s.rank, s.hostname.empty() ? "its host" : s.hostname);
      }
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
                FindImbalance(synced, hi->rank, kComputeImbalanceFraction, StepCompute));
    }
  }
  auto [lo, hi] = spread([](const RankSummary& r) { return r.data_wait_s; });
  imbalance("data_wait", *lo, *hi, lo->data_wait_s, hi->data_wait_s, kDataWaitImbalanceFraction,
            FindImbalance(every, hi->rank, kDataWaitImbalanceFraction, StepDataWait));
  return findings;
}

}  // namespace

std::vector<RankSummary> SummarizeRanks(const Timeline& timeline,
                                        const std::string& fallback_host) {
  return Summarize(CountedSteps(StepsOf(timeline, fallback_host)), &timeline.ranks, fallback_host);
}

FindingsWithNotes CheckRanks(const Timeline& timeline) {
  return FindingsWithNotes{JudgeRanks(StepsOf(timeline, timeline.info.hostname)).findings, {}};
}

RankResults JudgeRanks(const JobSteps& job) {
  StepsByRank by_rank = CountedSteps(job);
  RankResults out;
  out.ranks = Summarize(by_rank, job.ranks, job.fallback_host);
  const std::map<int, double> delays = RankRunDelays(job);
  for (RankSummary& r : out.ranks) {
    if (auto it = delays.find(r.rank); it != delays.end()) r.run_delay_pct = it->second;
  }
  std::vector<const std::vector<BucketSync>*> buckets;
  bool predates = false;
  for (const StepRecords& p : job.parts) {
    buckets.push_back(p.buckets);
    predates = predates || !p.buckets_recorded;
  }
  out.findings = Check(by_rank, out.ranks, FindBucketArrivals(buckets, kRankWarmupSteps), predates);
  return out;
}

}  // namespace stallscope
