// The collectives across ranks, rendered: see trace_collectives.h.
#include "render/trace_collectives.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

namespace stallscope {
namespace {

using Json = nlohmann::ordered_json;

std::string Ms(double us) { return fmt::format("{:.1f} ms", us / 1000); }

std::string RanksText(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

std::string Short(const std::string& name) {
  return name.size() > 60 ? name.substr(0, 59) + "~" : name;
}

Json StragglerJson(const CollectiveSplit& split, const TraceStraggler& s) {
  const CollectiveInstance& worst = split.collectives[s.worst];
  return {
      {"rank", s.rank},
      {"last_in", s.last_in},
      {"of", s.of},
      {"lateness_p50_us", s.lateness_p50_us},
      {"lateness_max_us", s.lateness_max_us},
      {"others_wait_us", s.caused_wait_us},
      {"share_of_steps", s.share},
      {"cause", s.cause.empty() ? Json(nullptr) : Json(s.cause)},
      {"cause_detail", s.cause_detail.empty() ? Json(nullptr) : Json(s.cause_detail)},
      {"cause_excess_us", s.cause_excess_us},
      {"worst", {{"step", worst.step}, {"seq", worst.seq}, {"communicator", worst.communicator}}},
      {"late_ranks", s.late_ranks}};
}

// Each rank's times as lists in the order of `ranks` (a wait is the
// arrival less the rank's start; a transfer its end less the later of its
// start and the arrival): an instance is matched across every rank, so
// this is most of the JSON on many ranks.
Json InstanceJson(const CollectiveInstance& c) {
  Json ranks = Json::array(), starts = Json::array(), ends = Json::array();
  for (const CollectiveRankTimes& t : c.ranks) {
    ranks.push_back(t.rank);
    starts.push_back(t.start);
    ends.push_back(t.end);
  }
  auto maybe = [](const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); };
  return {{"communicator", c.communicator},
          {"collective", c.collective.empty() ? Json(nullptr) : Json(c.collective)},
          {"kernel", c.kernel},
          {"step", c.step},
          {"seq", c.seq},
          {"arrival_us", c.arrival_us},
          {"end_us", c.end_us},
          {"last_rank", c.last_rank},
          {"lateness_us", c.lateness_us},
          {"transfer_us", c.transfer_us},
          {"group_size", c.group_size},
          {"bytes", c.bytes >= 0 ? Json(c.bytes) : Json(nullptr)},
          {"algbw_gbps", maybe(c.algbw_gbps)},
          {"busbw_gbps", maybe(c.busbw_gbps)},
          {"ranks", ranks},
          {"starts_us", starts},
          {"ends_us", ends}};
}

}  // namespace

Json CollectivesJson(const CollectiveSplit& split) {
  Json stragglers = Json::array();
  for (const TraceStraggler& s : split.stragglers) stragglers.push_back(StragglerJson(split, s));
  Json instances = Json::array();
  for (const CollectiveInstance& c : split.collectives) instances.push_back(InstanceJson(c));
  return {{"matched", split.collectives.size()},
          {"clock", split.clock.empty() ? Json(nullptr) : Json(split.clock)},
          {"same_clock", split.same_clock},
          {"end_spread_p50_us", split.spread_p50_us},
          {"end_spread_max_us", split.spread_max_us},
          {"late_min_us", split.late_min_us},
          {"stragglers", stragglers},
          {"notes", split.notes},
          {"instances", instances}};
}

Json RankCollectivesJson(const CollectiveSplit& split, int rank) {
  const RankSplit* r = nullptr;
  for (const RankSplit& s : split.ranks) {
    if (s.rank == rank) r = &s;
  }
  if (r == nullptr) return nullptr;
  Json steps = Json::array();
  for (const RankStepSplit& s : r->steps) {
    steps.push_back({{"step", s.step},
                     {"collectives", s.collectives},
                     {"wait_us", s.wait_us},
                     {"transfer_us", s.transfer_us}});
  }
  return {{"matched", r->collectives},
          {"unmatched", r->unmatched},
          {"wait_us", r->wait_us},
          {"transfer_us", r->transfer_us},
          {"transfer_exposed_us", r->transfer_exposed_us},
          {"unmatched_exposed_us", r->unmatched_exposed_us},
          {"exposed_us", r->exposed_us},
          {"clock_offset_us", r->clock_offset_us},
          {"last_in", r->last_in},
          {"others_wait_us", r->caused_wait_us},
          {"steps", steps}};
}

Json CommKernelsJson(const std::vector<CommKernelUse>& kernels) {
  Json out = Json::array();
  for (const CommKernelTotal& t : CommKernelTotals(kernels)) {
    out.push_back({{"name", t.name},
                   {"family", CommFamilyName(t.family)},
                   {"count", t.count},
                   {"sum_us", t.sum_us}});
  }
  return out;
}

std::string CollectivesText(const CollectiveSplit& split) {
  if (!split.Matched()) {
    std::string out;
    for (const std::string& n : split.notes) out += "  " + n + "\n";
    return out.empty() ? "" : "\ncollectives: none matched across the ranks\n" + out;
  }
  size_t ranks = 0;
  for (const RankSplit& r : split.ranks) ranks += r.collectives > 0 ? 1 : 0;
  std::string out = fmt::format(
      "\ncollectives: {} matched across {} ranks ({}; the ends spread {:.0f} us p50, {:.0f} us "
      "max)\n",
      split.collectives.size(), ranks, split.clock, split.spread_p50_us, split.spread_max_us);
  out += fmt::format("{:>5} {:>12} {:>12} {:>12} {:>6} {:>8}\n", "rank", "collectives", "waiting",
                     "transfer", "wait%", "last in");
  for (const RankSplit& r : split.ranks) {
    if (r.collectives == 0) continue;
    double total = r.wait_us + r.transfer_us;
    out += fmt::format("{:>5} {:>12} {:>12} {:>12} {:>5.0f}% {:>8}\n", r.rank, r.collectives,
                       Ms(r.wait_us), Ms(r.transfer_us), total > 0 ? r.wait_us / total * 100 : 0,
                       r.last_in);
  }
  std::vector<size_t> order(split.collectives.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return split.collectives[a].lateness_us > split.collectives[b].lateness_us;
  });
  out += "  latest arrivals:\n";
  for (size_t i = 0; i < order.size() && i < kTraceLatestArrivalsShown; ++i) {
    const CollectiveInstance& c = split.collectives[order[i]];
    out += fmt::format("    {}#{} {} ({}): rank {} last, {} after the first; transfer {}\n",
                       c.step >= 0 ? fmt::format("step {} ", c.step) : "", c.seq,
                       c.collective.empty() ? Short(c.kernel) : c.collective, c.communicator,
                       c.last_rank, Ms(c.lateness_us), Ms(c.transfer_us));
  }
  for (const TraceStraggler& s : split.stragglers) {
    out += fmt::format(
        "  rank {} arrives last in {} of {} collectives (up to {} late; ranks {} as late in the "
        "worst); the others wait {} for it{}\n",
        s.rank, s.last_in, s.of, Ms(s.lateness_max_us), RanksText(s.late_ranks),
        Ms(s.caused_wait_us),
        s.cause.empty() ? "" : fmt::format("; cause: {} ({})", s.cause, Short(s.cause_detail)));
  }
  for (const std::string& n : split.notes) out += "  note: " + n + "\n";
  return out;
}

}  // namespace stallscope
