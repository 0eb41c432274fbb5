// Collectives matched across ranks' traces: see collectives.h.
#include "analyze/trace/collectives.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>

#include "analyze/run/rank_rules.h"
#include "core/stats.h"

namespace stallscope {
namespace {

std::string GroupText(const std::string& written);

// Each kernel's communicator: its process group where the args name one,
// else its stream: by id where every rank's communication streams are the
// same ids in the same order, else by their order of first use.
std::vector<std::vector<std::string>> CommunicatorKeys(
    const std::vector<TraceRankBreakdown>& ranks) {
  std::vector<std::vector<int>> streams(ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) {
    for (const CommKernelUse& k : ranks[i].comm_kernels) {
      if (k.group.empty() &&
          std::find(streams[i].begin(), streams[i].end(), k.stream) == streams[i].end()) {
        streams[i].push_back(k.stream);
      }
    }
  }
  bool same_ids = true;
  for (const std::vector<int>& s : streams) {
    same_ids = same_ids && (s.empty() || streams.front().empty() || s == streams.front());
  }
  std::vector<std::vector<std::string>> out(ranks.size());
  std::map<std::string, std::string> group_text;  // each group's ranks as text, once
  for (size_t i = 0; i < ranks.size(); ++i) {
    for (const CommKernelUse& k : ranks[i].comm_kernels) {
      if (!k.group.empty()) {
        auto [it, added] = group_text.try_emplace(k.group_ranks);
        if (added) it->second = GroupText(k.group_ranks);
        out[i].push_back(fmt::format("process group {}{}", k.group, it->second));
      } else if (same_ids) {
        out[i].push_back(fmt::format("stream {}", k.stream));
      } else {
        size_t n = std::find(streams[i].begin(), streams[i].end(), k.stream) - streams[i].begin();
        out[i].push_back(fmt::format("communication stream #{}", n + 1));
      }
    }
  }
  return out;
}

std::string RanksText(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

// "[0, 1, 2]" -> {0, 1, 2}; empty when it is not such a list.
std::vector<int> GroupRanks(const std::string& text) {
  std::vector<int> out;
  int value = 0;
  bool digits = false;
  for (char c : text) {
    if (c >= '0' && c <= '9') {
      value = value * 10 + (c - '0');
      digits = true;
      if (value > 1 << 24) return {};
    } else {
      if (digits) out.push_back(value);
      value = 0;
      digits = false;
    }
  }
  if (digits) out.push_back(value);
  return out;
}

// " [0-3, 8-11]": the ranks of a group as ranges, cut after 60 characters
// (a group's name is unique in its job; the ranks are for the reader).
std::string GroupText(const std::string& written) {
  if (written.empty()) return "";
  std::vector<int> ranks = GroupRanks(written);
  if (ranks.empty()) return " " + written.substr(0, 60);
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    std::string part = j > i + 1 ? fmt::format("{}-{}", ranks[i], ranks[j])
                                 : (j == i + 1 ? fmt::format("{}, {}", ranks[i], ranks[j])
                                               : std::to_string(ranks[i]));
    out += (out.empty() ? "" : ", ") + part;
    i = j + 1;
    if (out.size() > 60 && i < ranks.size()) {
      out += fmt::format(", ... ({} ranks)", ranks.size());
      break;
    }
  }
  return " [" + out + "]";
}

// One (communicator, step)'s kernels on each rank that ran any: matched
// position by position while the counts and kinds agree.
struct Sequence {
  std::map<size_t, std::vector<size_t>> by_rank;  // rank index -> kernel indices
};

void MatchSequence(const std::vector<TraceRankBreakdown>& ranks, const std::string& communicator,
                   int64_t step, const Sequence& seq, std::vector<CollectiveInstance>& out,
                   std::vector<std::string>& notes) {
  std::map<size_t, int> counts;  // how many ranks ran each count
  for (const auto& [i, list] : seq.by_rank) ++counts[list.size()];
  const std::string where =
      step >= 0 ? fmt::format("{}, step {}", communicator, step) : communicator;
  if (counts.size() > 1) {
    size_t usual = std::max_element(counts.begin(), counts.end(), [](auto& a, auto& b) {
                     return a.second < b.second;
                   })->first;
    std::string odd;
    for (const auto& [i, list] : seq.by_rank) {
      if (list.size() != usual)
        odd += fmt::format("{}rank {} ran {}", odd.empty() ? "" : ", ", ranks[i].rank, list.size());
    }
    notes.push_back(fmt::format(
        "{}: {} where the other ranks ran {} collectives (one missing or extra): not matched",
        where, odd, usual));
    return;
  }
  if (seq.by_rank.size() < 2) return;
  const size_t n = counts.begin()->first;
  for (size_t p = 0; p < n; ++p) {
    std::set<std::string> kinds;
    for (const auto& [i, list] : seq.by_rank) {
      const std::string& kind = ranks[i].comm_kernels[list[p]].collective;
      if (!kind.empty()) kinds.insert(kind);
    }
    if (kinds.size() > 1) {
      std::string all;
      for (const std::string& k : kinds) all += (all.empty() ? "" : ", ") + k;
      notes.push_back(fmt::format(
          "{}: collective #{} is not one kind on every rank ({}): not matched from there", where, p,
          all));
      return;
    }
    CollectiveInstance c;
    c.communicator = communicator;
    c.step = step;
    c.seq = p;
    c.collective = kinds.empty() ? "" : *kinds.begin();
    for (const auto& [i, list] : seq.by_rank) {
      const CommKernelUse& k = ranks[i].comm_kernels[list[p]];
      if (c.kernel.empty()) c.kernel = k.name;
      c.group_size = std::max(c.group_size, k.group_size);
      c.bytes = std::max(c.bytes, k.bytes);
      c.ranks.push_back({ranks[i].rank, list[p], k.start, k.end, 0, 0});
    }
    out.push_back(std::move(c));
  }
}

std::vector<CollectiveInstance> MatchCollectives(const std::vector<TraceRankBreakdown>& ranks,
                                                 std::vector<std::string>& notes) {
  std::vector<std::vector<std::string>> keys = CommunicatorKeys(ranks);
  // Which ranks ran each communicator at all; each (communicator, step)'s kernels.
  std::map<std::string, std::set<size_t>> members;
  std::map<std::pair<std::string, int64_t>, Sequence> sequences;
  uint64_t p2p = 0;
  for (size_t i = 0; i < ranks.size(); ++i) {
    for (size_t j = 0; j < ranks[i].comm_kernels.size(); ++j) {
      // a send or a receive involves two ranks of its group, not all of them
      if (ranks[i].comm_kernels[j].collective == "p2p") {
        ++p2p;
        continue;
      }
      members[keys[i][j]].insert(i);
      sequences[{keys[i][j], ranks[i].comm_kernels[j].step}].by_rank[i].push_back(j);
    }
  }
  if (p2p > 0) {
    notes.push_back(fmt::format(
        "{} point-to-point send or receive kernel{} (the args' Collective name) not matched: each "
        "involves two ranks, not the group",
        p2p, p2p == 1 ? "" : "s"));
  }
  std::vector<CollectiveInstance> out;
  for (auto& [key, seq] : sequences) {
    // A member rank with the step kept but none of the communicator's
    // kernels in it ran fewer; one without that step cannot be compared.
    std::vector<int> without;
    for (size_t i : members[key.first]) {
      const std::vector<int64_t>& steps = ranks[i].steps;
      bool has_step =
          key.second < 0 || std::find(steps.begin(), steps.end(), key.second) != steps.end();
      if (has_step) {
        seq.by_rank.try_emplace(i);
      } else {
        without.push_back(ranks[i].rank);
      }
    }
    if (!without.empty()) {
      notes.push_back(fmt::format("{}, step {}: rank{} {} kept no such step: not matched",
                                  key.first, key.second, without.size() == 1 ? "" : "s",
                                  RanksText(without).substr(0, 200)));
      continue;
    }
    MatchSequence(ranks, key.first, key.second, seq, out, notes);
  }
  // A process group with ranks whose traces are not here.
  std::set<std::string> noted;
  for (size_t i = 0; i < ranks.size(); ++i) {
    for (const CommKernelUse& k : ranks[i].comm_kernels) {
      std::vector<int> expected = GroupRanks(k.group_ranks);
      if (expected.empty() || !noted.insert(k.group + k.group_ranks).second) continue;
      std::vector<int> absent;
      for (int r : expected) {
        bool given = std::any_of(ranks.begin(), ranks.end(),
                                 [&](const TraceRankBreakdown& b) { return b.rank == r; });
        if (!given) absent.push_back(r);
      }
      if (!absent.empty()) {
        notes.push_back(fmt::format(
            "process group {}{}: no trace of rank{} {}: the last arrival is the last among the "
            "ranks given; one not given may arrive later",
            k.group, GroupText(k.group_ranks), absent.size() == 1 ? "" : "s",
            RanksText(absent).substr(0, 200)));
      }
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const CollectiveInstance& a, const CollectiveInstance& b) {
                     return a.ranks.front().start < b.ranks.front().start;
                   });
  return out;
}

// Per rank index: the offset of its clock, from the collectives' ends.
std::vector<double> ClockOffsets(size_t rank_count, const std::vector<CollectiveInstance>& all,
                                 const std::map<int, size_t>& index_of) {
  std::vector<double> offset(rank_count, 0);
  for (int pass = 0; pass < 3; ++pass) {
    std::vector<std::vector<double>> diffs(rank_count);
    for (const CollectiveInstance& c : all) {
      std::vector<double> ends;
      for (const CollectiveRankTimes& t : c.ranks)
        ends.push_back(t.end - offset[index_of.at(t.rank)]);
      double middle = Median(ends);
      for (const CollectiveRankTimes& t : c.ranks)
        diffs[index_of.at(t.rank)].push_back(t.end - middle);
    }
    for (size_t i = 0; i < rank_count; ++i) {
      if (!diffs[i].empty()) offset[i] = Median(diffs[i]);
    }
  }
  // the first rank with collectives keeps its own clock
  for (size_t i = 0; i < rank_count; ++i) {
    bool used = std::any_of(all.begin(), all.end(), [&](const CollectiveInstance& c) {
      return std::any_of(c.ranks.begin(), c.ranks.end(),
                         [&](const CollectiveRankTimes& t) { return index_of.at(t.rank) == i; });
    });
    if (!used) continue;
    double base = offset[i];
    for (double& o : offset) o -= base;
    break;
  }
  return offset;
}

// Each collective's arrival, waits and transfers on the aligned clock.
void SplitTimes(std::vector<CollectiveInstance>& all, const std::vector<double>& offset,
                const std::map<int, size_t>& index_of) {
  for (CollectiveInstance& c : all) {
    double first = INFINITY;
    c.arrival_us = -INFINITY;
    c.end_us = -INFINITY;
    for (CollectiveRankTimes& t : c.ranks) {
      double o = offset[index_of.at(t.rank)];
      t.start -= o;
      t.end -= o;
      first = std::min(first, t.start);
      if (t.start > c.arrival_us) {
        c.arrival_us = t.start;
        c.last_rank = t.rank;
      }
      c.end_us = std::max(c.end_us, t.end);
    }
    c.lateness_us = c.arrival_us - first;
    std::vector<double> transfers;
    for (CollectiveRankTimes& t : c.ranks) {
      double from = std::max(t.start, std::min(c.arrival_us, t.end));
      t.wait_us = from - t.start;
      t.transfer_us = std::max(0.0, t.end - from);
      transfers.push_back(t.transfer_us);
    }
    c.transfer_us = Median(transfers);
    if (c.group_size <= 0) c.group_size = static_cast<int>(c.ranks.size());
    if (c.bytes > 0 && c.transfer_us > 0) {
      c.algbw_gbps = static_cast<double>(c.bytes) / (c.transfer_us * 1e3);  // bytes/µs / 1e3 = GB/s
      c.busbw_gbps = *c.algbw_gbps * BusBandwidthFactor(c.collective, c.group_size);
    }
  }
}

// The time `spans` cover with no compute kernel running: merged first, so
// collectives that overlap (two communicators' streams) count once.
double Exposed(std::vector<TimeSpan> spans, std::vector<TimeSpan> compute) {
  std::vector<TimeSpan> merged = MergedSpans(std::move(spans));
  return std::max(0.0,
                  Length(merged) - IntersectionLength(merged, MergedSpans(std::move(compute))));
}

// Each rank's exposed transfer, unmatched time and both together.
void ExposedTimes(const std::vector<TraceRankBreakdown>& ranks,
                  const std::vector<std::vector<double>>& transfer_from, CollectiveSplit& split) {
  for (size_t i = 0; i < ranks.size(); ++i) {
    std::vector<TimeSpan> transfer, unmatched, compute;
    for (size_t j = 0; j < ranks[i].comm_kernels.size(); ++j) {
      const CommKernelUse& k = ranks[i].comm_kernels[j];
      const double from = transfer_from[i][j];
      (std::isnan(from) ? unmatched : transfer)
          .push_back({std::isnan(from) ? k.start : from, k.end});
      for (const auto& [a, b] : k.compute_within) compute.push_back({a, b});
    }
    RankSplit& r = split.ranks[i];
    std::vector<TimeSpan> both(transfer);
    both.insert(both.end(), unmatched.begin(), unmatched.end());
    r.transfer_exposed_us = Exposed(std::move(transfer), compute);
    r.unmatched_exposed_us = Exposed(std::move(unmatched), compute);
    r.exposed_us = Exposed(std::move(both), std::move(compute));
  }
}

// The rank's steps' time: the kept steps' span, else the GPU's window.
double StepsTime(const TraceRankBreakdown& r) {
  double sum = 0;
  for (const TraceStepFigures& s : r.step_figures) sum += s.dur_us;
  if (sum <= 0) sum = r.wall_us;
  if (sum <= 0 && r.temporal) sum = r.temporal->kernel_time_us;
  return sum;
}

void RankTotals(const std::vector<TraceRankBreakdown>& ranks, CollectiveSplit& split,
                const std::vector<double>& offset, double late_min_us,
                const std::map<int, size_t>& index_of) {
  split.ranks.resize(ranks.size());
  // per kernel, where its transfer starts on its rank's clock; NaN: unmatched
  std::vector<std::vector<double>> transfer_from(ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) {
    split.ranks[i].rank = ranks[i].rank;
    split.ranks[i].clock_offset_us = offset[i];
    split.ranks[i].steps_us = StepsTime(ranks[i]);
    transfer_from[i].assign(ranks[i].comm_kernels.size(), NAN);
  }
  for (const CollectiveInstance& c : split.collectives) {
    double others_wait = 0;
    for (const CollectiveRankTimes& t : c.ranks) {
      size_t i = index_of.at(t.rank);
      RankSplit& r = split.ranks[i];
      const CommKernelUse& k = ranks[i].comm_kernels[t.kernel];
      transfer_from[i][t.kernel] = k.end - t.transfer_us;
      ++r.collectives;
      r.wait_us += t.wait_us;
      r.transfer_us += t.transfer_us;
      auto step = std::find_if(r.steps.begin(), r.steps.end(),
                               [&](const RankStepSplit& s) { return s.step == c.step; });
      if (step == r.steps.end()) step = r.steps.insert(r.steps.end(), RankStepSplit{c.step});
      ++step->collectives;
      step->wait_us += t.wait_us;
      step->transfer_us += t.transfer_us;
      if (t.rank != c.last_rank) others_wait += t.wait_us;
    }
    if (c.lateness_us >= late_min_us) {
      RankSplit& last = split.ranks[index_of.at(c.last_rank)];
      ++last.last_in;
      last.caused_wait_us += others_wait / static_cast<double>(c.ranks.size() - 1);
    }
  }
  for (size_t i = 0; i < ranks.size(); ++i) {
    RankSplit& r = split.ranks[i];
    std::sort(r.steps.begin(), r.steps.end(),
              [](const RankStepSplit& a, const RankStepSplit& b) { return a.step < b.step; });
    for (double from : transfer_from[i]) r.unmatched += std::isnan(from) ? 1 : 0;
  }
  ExposedTimes(ranks, transfer_from, split);
}

// The cause of a rank's late arrivals: what it did more than the others
// since their previous collective, summed over those arrivals; or, where
// its window itself began later (the step's start, on the aligned clock),
// what came before: the step began late.
void NameCause(const std::vector<TraceRankBreakdown>& ranks, const CollectiveSplit& split,
               const std::map<int, size_t>& index_of, double late_min_us, TraceStraggler& s) {
  constexpr int kParts = 5;
  const char* kCauses[kParts] = {"compute", "input", "sync", "host_launch", "late_step_start"};
  double excess[kParts] = {0, 0, 0, 0, 0};
  for (const CollectiveInstance& c : split.collectives) {
    if (c.last_rank != s.rank || c.lateness_us < late_min_us) continue;
    std::array<std::vector<double>, kParts> others;
    std::array<double, kParts> mine{};
    for (const CollectiveRankTimes& t : c.ranks) {
      size_t i = index_of.at(t.rank);
      const CommLeadIn& l = ranks[i].comm_kernels[t.kernel].lead_in;
      std::array<double, kParts> p = {l.compute_us, l.loader_us, l.sync_us, l.host_us,
                                      l.from_us - split.ranks[i].clock_offset_us};
      for (int k = 0; k < kParts; ++k) {
        if (t.rank == s.rank) {
          mine[k] = p[k];
        } else {
          others[k].push_back(p[k]);
        }
      }
    }
    for (int k = 0; k < kParts; ++k) excess[k] += mine[k] - Median(others[k]);
  }
  int best = static_cast<int>(std::max_element(excess, excess + kParts) - excess);
  if (excess[best] <= 0) return;
  s.cause = kCauses[best];
  s.cause_excess_us = excess[best];
  const CollectiveInstance& worst = split.collectives[s.worst];
  for (const CollectiveRankTimes& t : worst.ranks) {
    if (t.rank != s.rank) continue;
    const CommLeadIn& l = ranks[index_of.at(t.rank)].comm_kernels[t.kernel].lead_in;
    if (s.cause == "compute") s.cause_detail = l.longest_kernel;
    if (s.cause == "input") s.cause_detail = "enumerate(DataLoader)#...__next__";
    if (s.cause == "sync") s.cause_detail = l.sync_op;
    if (s.cause == "host_launch") s.cause_detail = l.longest_cpu_op;
    if (s.cause == "late_step_start") {
      s.cause_detail = fmt::format(
          "began {} {:.1f} ms after the other ranks' median: the delay lies before the trace's "
          "window",
          worst.step >= 0 ? fmt::format("step {}", worst.step) : std::string("its trace"),
          excess[best] / 1000);
    }
  }
}

void FindStragglers(const std::vector<TraceRankBreakdown>& ranks, CollectiveSplit& split,
                    const std::map<int, size_t>& index_of, double late_min_us) {
  double steps_us = 0;
  for (const RankSplit& r : split.ranks) steps_us += r.steps_us;
  steps_us /= std::max<size_t>(1, split.ranks.size());
  if (steps_us <= 0) return;
  for (const RankSplit& r : split.ranks) {
    if (r.last_in == 0 || r.caused_wait_us / steps_us < kStragglerStepFraction) continue;
    TraceStraggler s;
    s.rank = r.rank;
    s.last_in = r.last_in;
    s.of = r.collectives;
    s.caused_wait_us = r.caused_wait_us;
    s.share = r.caused_wait_us / steps_us;
    std::vector<double> lateness;
    for (size_t c = 0; c < split.collectives.size(); ++c) {
      const CollectiveInstance& ci = split.collectives[c];
      if (ci.last_rank != r.rank || ci.lateness_us < late_min_us) continue;
      lateness.push_back(ci.lateness_us);
      if (ci.lateness_us > s.lateness_max_us) {
        s.lateness_max_us = ci.lateness_us;
        s.worst = c;
      }
    }
    s.lateness_p50_us = Median(lateness);
    const CollectiveInstance& worst = split.collectives[s.worst];
    double first = worst.arrival_us - worst.lateness_us;
    for (const CollectiveRankTimes& t : worst.ranks) {
      if (t.start - first >= kLateRanksShare * worst.lateness_us) s.late_ranks.push_back(t.rank);
    }
    NameCause(ranks, split, index_of, late_min_us, s);
    split.stragglers.push_back(std::move(s));
  }
  std::sort(split.stragglers.begin(), split.stragglers.end(),
            [](const TraceStraggler& a, const TraceStraggler& b) {
              return a.last_in != b.last_in ? a.last_in > b.last_in
                                            : a.caused_wait_us > b.caused_wait_us;
            });
}

}  // namespace

const RankSplit* CollectiveSplit::Of(int rank) const {
  for (const RankSplit& r : ranks) {
    if (r.rank == rank && r.collectives > 0) return &r;
  }
  return nullptr;
}

CollectiveSplit SplitCollectives(const std::vector<TraceRankBreakdown>& ranks,
                                 const CollectiveOptions& options) {
  CollectiveSplit split;
  split.same_clock = options.same_clock;
  if (ranks.size() < 2) return split;
  std::map<int, size_t> index_of;
  for (size_t i = 0; i < ranks.size(); ++i) index_of[ranks[i].rank] = i;
  if (index_of.size() != ranks.size()) return split;  // two traces of one rank: no split
  split.collectives = MatchCollectives(ranks, split.notes);
  constexpr size_t kNotesShown = 10;
  if (split.notes.size() > kNotesShown) {
    size_t more = split.notes.size() - kNotesShown;
    split.notes.resize(kNotesShown);
    split.notes.push_back(fmt::format("and {} more sequences not matched", more));
  }
  std::vector<double> offset(ranks.size(), 0);
  if (!options.same_clock) offset = ClockOffsets(ranks.size(), split.collectives, index_of);
  split.clock = options.same_clock ? "one clock (--same-clock): times as written"
                                   : "each rank's clock aligned on the collectives' ends";
  SplitTimes(split.collectives, offset, index_of);
  std::vector<double> spreads;
  for (const CollectiveInstance& c : split.collectives) {
    double lo = INFINITY, hi = -INFINITY;
    for (const CollectiveRankTimes& t : c.ranks) {
      lo = std::min(lo, t.end);
      hi = std::max(hi, t.end);
    }
    spreads.push_back(hi - lo);
  }
  if (!spreads.empty()) {
    split.spread_p50_us = Median(spreads);
    split.spread_max_us = *std::max_element(spreads.begin(), spreads.end());
  }
  const double late_min_us = std::max(kLateMinUs, 2 * split.spread_p50_us);
  split.late_min_us = late_min_us;
  RankTotals(ranks, split, offset, late_min_us, index_of);
  if (split.Matched()) FindStragglers(ranks, split, index_of, late_min_us);
  return split;
}

}  // namespace stallscope
