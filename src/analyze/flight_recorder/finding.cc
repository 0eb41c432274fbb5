// distributed.hang from a Flight Recorder analysis: see
// finding.h. The evidence comes from one group, the lead:
// the widest where a culprit is missing, else where one stalled.
#include "analyze/flight_recorder/finding.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "analyze/flight_recorder/rules.h"

namespace stallscope {
namespace {

std::string GroupLabel(const FrGroupAnalysis& g) {
  return g.desc.empty() || g.desc == "undefined" ? g.name : g.name + ":" + g.desc;
}

bool Intersects(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  return std::any_of(a.begin(), a.end(),
                     [&](int64_t x) { return std::find(b.begin(), b.end(), x) != b.end(); });
}

// The group the finding's evidence is taken from: the widest where a culprit
// is missing, else where one stalled, else the first diverging or stuck.
const FrGroupAnalysis* LeadGroup(const FlightRecorderAnalysis& a) {
  for (const FrGroupAnalysis& g : a.groups) {
    if (Intersects(g.missing, a.culprits) && !g.entered.empty()) return &g;
  }
  for (const FrGroupAnalysis& g : a.groups) {
    if (Intersects(g.completion_stalled, a.culprits)) return &g;
  }
  for (const FrGroupAnalysis& g : a.groups) {
    if (g.diverges() || g.diverging_seq || !g.unmatched_p2p.empty()) return &g;
  }
  return nullptr;
}

// "12:42805,13:-": each rank's last completed collective in the group.
std::string LastCompleted(const FrGroupAnalysis& g, const std::vector<int64_t>& ranks) {
  std::string out;
  for (const FrRankPosition& p : g.positions) {
    if (std::find(ranks.begin(), ranks.end(), p.rank) == ranks.end()) continue;
    out += fmt::format("{}{}:{}", out.empty() ? "" : ",", p.rank,
                       p.last_completed ? std::to_string(*p.last_completed) : "-");
  }
  return out;
}

std::string Summary(const FlightRecorderAnalysis& a, const FrGroupAnalysis& g) {
  std::vector<std::string> parts;
  std::string op = g.op.empty() ? "collective" : g.op;
  if (!g.missing.empty() && g.diverging_seq) {
    parts.push_back(
        fmt::format("rank(s) {} never entered {} #{} of group {}, which rank(s) {} "
                    "wait in",
                    RankList(g.missing), op, *g.diverging_seq, GroupLabel(g), RankList(g.entered)));
  }
  if (!a.ranks_without_entries.empty()) {
    parts.push_back(
        fmt::format("rank(s) {} dumped nothing in flight: a Python thread stuck "
                    "before its next collective",
                    RankList(a.ranks_without_entries)));
  }
  std::vector<int64_t> stalled;
  for (const FrGroupAnalysis& x : a.groups) {
    for (int64_t r : x.completion_stalled) {
      if (std::find(stalled.begin(), stalled.end(), r) == stalled.end()) stalled.push_back(r);
    }
  }
  std::sort(stalled.begin(), stalled.end());
  if (!stalled.empty()) {
    parts.push_back(
        fmt::format("rank(s) {} stopped completing collectives their peers "
                    "completed (a GPU that stopped, or its watchdog)",
                    RankList(stalled)));
  }
  if (parts.empty() && !g.mismatches.empty()) {
    const FrMismatch& m = g.mismatches.front();
    parts.push_back(fmt::format("ranks {} and {} disagree on collective #{} of group {}: {}",
                                m.rank, m.other_rank, m.seq, GroupLabel(g), m.detail));
  }
  if (!g.unmatched_p2p.empty()) {
    const FrUnmatchedP2p& u = g.unmatched_p2p.front();
    parts.push_back(fmt::format("rank {} waits in {} with rank {}, which has no op to match it",
                                u.rank, u.op, u.peer));
  }
  if (parts.empty() && g.diverging_seq) {
    parts.push_back(
        fmt::format("every rank of group {} entered {} #{} and none completed it: "
                    "the collective itself is stuck",
                    GroupLabel(g), op, *g.diverging_seq));
  }
  std::string lead =
      a.culprits.empty() ? "" : "rank(s) " + RankList(a.culprits) + " hold the job: ";
  return lead + fmt::format("{}", fmt::join(parts, "; "));
}

std::string Next(const FlightRecorderAnalysis& a, const FrGroupAnalysis& g) {
  std::vector<std::string> steps;
  if (!a.culprits.empty()) {
    steps.push_back(fmt::format("py-spy dump --native --pid PID of rank(s) {}: where they are",
                                RankList(a.culprits)));
  }
  if (std::any_of(a.groups.begin(), a.groups.end(),
                  [](const FrGroupAnalysis& x) { return !x.completion_stalled.empty(); })) {
    steps.push_back("dmesg | grep -i xid and nvidia-smi -q on their hosts: a GPU error");
  }
  if (!g.mismatches.empty()) {
    steps.push_back("the shapes each rank passes to that collective (the frames show the call)");
  }
  if (steps.empty()) {
    steps.push_back("stallscope nccl-log on the job's NCCL_DEBUG=INFO log: what NCCL reported");
  }
  return fmt::format("{}", fmt::join(steps, "; then "));
}

void AddEvidence(const FlightRecorderAnalysis& a, const FrGroupAnalysis& g, Finding& f) {
  auto add = [&](std::string name, EvidenceValue v) { f.evidence.push_back({std::move(name), v}); };
  if (!a.culprits.empty()) add("culprit_ranks", RankList(a.culprits));
  add("group", GroupLabel(g));
  if (g.diverging_seq) add("collective_seq_id", *g.diverging_seq);
  if (!g.op.empty()) add("op", g.op);
  if (!g.missing.empty()) {
    add("ranks_missing", RankList(g.missing));
    add("ranks_waiting", RankList(g.entered));
    add("missing_last_completed_seq", LastCompleted(g, g.missing));
  }
  if (!g.completion_stalled.empty()) {
    add("completion_stalled_ranks", RankList(g.completion_stalled));
    add("stalled_last_completed_seq", LastCompleted(g, g.completion_stalled));
  }
  if (!a.ranks_without_entries.empty()) {
    add("ranks_without_entries", RankList(a.ranks_without_entries));
  }
  if (!a.ranks_not_dumped.empty()) add("ranks_not_dumped", RankList(a.ranks_not_dumped));
  if (!g.mismatches.empty()) add("mismatch", g.mismatches.front().detail);
  if (!g.unmatched_p2p.empty()) {
    const FrUnmatchedP2p& u = g.unmatched_p2p.front();
    add("unmatched_p2p", fmt::format("rank {} {} (peer {})", u.rank, u.op, u.peer));
  }
  int64_t diverging = std::count_if(a.groups.begin(), a.groups.end(), [](const auto& x) {
    return x.diverges() || !x.unmatched_p2p.empty();
  });
  add("groups_diverging", diverging);
  add("ranks_dumped", static_cast<int64_t>(a.ranks_dumped.size()));
}

}  // namespace

FindingsWithNotes FlightRecorderFindings(const FlightRecorderAnalysis& a) {
  FindingsWithNotes out;
  out.notes = a.notes;
  const FrGroupAnalysis* g = LeadGroup(a);
  if (g == nullptr) {
    out.notes.push_back("no collective is in flight on any rank: the dumps show no hang");
    return out;
  }
  Finding f;
  f.id = "distributed.hang";
  f.layer = Layer::kDistributed;
  bool diverges = !a.culprits.empty() ||
                  std::any_of(a.groups.begin(), a.groups.end(), [](const FrGroupAnalysis& x) {
                    return x.diverges() || !x.unmatched_p2p.empty();
                  });
  f.severity = diverges ? Severity::kCritical : Severity::kWarning;
  f.summary = Summary(a, *g);
  AddEvidence(a, *g, f);
  f.next = Next(a, *g);
  out.findings.push_back(std::move(f));
  return out;
}

}  // namespace stallscope
