// The analysis of a job's Flight Recorder dumps: see rules.h.
// In order: the groups (a name and its members, as fr_trace keys them), each
// member's counters, the first collective not every member entered, the ops
// ranks disagree on, unmatched point-to-point ops, then the ranks the others
// wait for.
#include "analyze/flight_recorder/rules.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>

namespace stallscope {

std::string RankList(const std::vector<int64_t>& ranks) {
  return fmt::format("{}", fmt::join(ranks, ","));
}

namespace {

using GroupKey = std::pair<std::string, std::vector<int64_t>>;  // name, members

struct MemberView {
  const FlightRecorderDump* dump = nullptr;
  std::vector<const FrEntry*> entries;  // of this group, in the order recorded
  const FrGroupStatus* status = nullptr;
};

struct GroupView {
  std::string name;
  std::string desc;
  bool members_known = false;  // listed by a pg_config
  std::map<int64_t, MemberView> members;
  bool has_p2p = false;
  bool has_collective = false;
};

// A member's place in the group's collectives (collective_seq_id).
struct Counters {
  std::optional<int64_t> enqueued;
  std::optional<int64_t> completed;
};

std::vector<int64_t> Sorted(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

// Sequence ids come from files: one past or before them saturates rather
// than overflows.
int64_t After(int64_t seq) { return seq == std::numeric_limits<int64_t>::max() ? seq : seq + 1; }
int64_t Before(int64_t seq) { return seq == std::numeric_limits<int64_t>::min() ? seq : seq - 1; }

const FrGroupConfig* ConfigOf(const FlightRecorderDump& d, const std::string& name) {
  for (const FrGroupConfig& g : d.groups) {
    if (g.name == name) return &g;
  }
  return nullptr;
}

std::map<GroupKey, GroupView> BuildGroups(const std::vector<FlightRecorderDump>& dumps) {
  std::map<GroupKey, GroupView> groups;
  std::map<int64_t, const FlightRecorderDump*> by_rank;
  for (const FlightRecorderDump& d : dumps) {
    by_rank[d.rank] = &d;
    for (const FrGroupConfig& g : d.groups) {
      GroupView& v = groups[{g.name, Sorted(g.ranks)}];
      v.name = g.name;
      v.desc = g.desc;
      v.members_known = true;
      for (int64_t r : Sorted(g.ranks)) v.members[r];
    }
  }
  for (const FlightRecorderDump& d : dumps) {
    for (const FrEntry& e : d.entries) {
      const FrGroupConfig* c = ConfigOf(d, e.pg_name);
      GroupView& v = groups[{e.pg_name, c ? Sorted(c->ranks) : std::vector<int64_t>()}];
      if (v.name.empty()) v.name = e.pg_name;
      if (v.desc.empty()) v.desc = e.pg_desc;
      v.members[d.rank].entries.push_back(&e);
      (e.is_p2p ? v.has_p2p : v.has_collective) = true;
    }
  }
  for (auto& [key, v] : groups) {
    for (auto& [rank, m] : v.members) {
      auto it = by_rank.find(rank);
      if (it != by_rank.end()) m.dump = it->second;
      if (m.dump == nullptr || m.entries.empty()) continue;
      for (const FrGroupStatus& s : m.dump->statuses) {
        if (s.pg_id == m.entries.front()->pg_id) m.status = &s;
      }
    }
  }
  return groups;
}

// The pg_status counters count a group's collectives only where the group
// runs no point-to-point op (those count p2p_seq_id there); else, and before
// format 2.3, the entries say what they can.
Counters CountersOf(const MemberView& m, bool status_counts_collectives) {
  Counters c;
  if (status_counts_collectives && m.status != nullptr) {
    c.enqueued = m.status->last_enqueued;
    c.completed = m.status->last_completed;
    return c;
  }
  std::optional<int64_t> first_pending;
  for (const FrEntry* e : m.entries) {
    if (e->is_p2p) continue;
    c.enqueued = std::max(c.enqueued.value_or(e->collective_seq_id), e->collective_seq_id);
    if (e->state == "completed") {
      c.completed = std::max(c.completed.value_or(e->collective_seq_id), e->collective_seq_id);
    } else if (!first_pending) {
      first_pending = e->collective_seq_id;
    }
  }
  if (!c.completed && first_pending) c.completed = Before(*first_pending);
  return c;
}

// The entries of a member at one sequence id (several: a coalesced group).
std::vector<const FrEntry*> EntriesAt(const MemberView& m, int64_t seq) {
  std::vector<const FrEntry*> out;
  for (const FrEntry* e : m.entries) {
    if (!e->is_p2p && e->collective_seq_id == seq) out.push_back(e);
  }
  return out;
}

FrRankPosition PositionOf(int64_t rank, const MemberView& m, const Counters& c,
                          std::optional<int64_t> seq) {
  FrRankPosition p;
  p.rank = rank;
  p.dumped = m.dump != nullptr;
  p.has_entries = !m.entries.empty();
  p.last_enqueued = c.enqueued;
  p.last_completed = c.completed;
  if (c.completed) {
    std::vector<const FrEntry*> done = EntriesAt(m, *c.completed);
    if (!done.empty()) p.last_completed_op = done.back()->profiling_name;
  }
  const FrEntry* at = nullptr;
  if (seq) {
    std::vector<const FrEntry*> here = EntriesAt(m, *seq);
    if (!here.empty()) at = here.back();
  }
  if (at == nullptr && !m.entries.empty()) at = m.entries.back();
  if (at != nullptr) {
    p.state = at->state;
    p.thread_name = at->thread_name;
    p.frames = at->frames;
  }
  return p;
}

// The first collective not every member entered, or (all entered) the first
// one not completed; the ranks missing from it; the ranks that completed
// less than their peers although they enqueued more.
void Diverge(const GroupView& v, const std::map<int64_t, Counters>& counters,
             FrGroupAnalysis& out) {
  std::vector<int64_t> known, unknown;
  std::optional<int64_t> min_le, max_le, max_lc, first_pending;
  for (const auto& [rank, m] : v.members) {
    if (m.dump == nullptr) continue;
    const Counters& c = counters.at(rank);
    if (!c.enqueued) {
      unknown.push_back(rank);
      continue;
    }
    known.push_back(rank);
    min_le = std::min(min_le.value_or(*c.enqueued), *c.enqueued);
    max_le = std::max(max_le.value_or(*c.enqueued), *c.enqueued);
    int64_t lc = c.completed.value_or(*c.enqueued);
    max_lc = std::max(max_lc.value_or(lc), lc);
    if (lc < *c.enqueued) first_pending = std::min(first_pending.value_or(After(lc)), After(lc));
  }
  if (known.empty()) return;
  std::optional<int64_t> seq =
      *min_le < *max_le ? std::optional<int64_t>(After(*min_le)) : first_pending;
  for (int64_t rank : known) {
    const Counters& c = counters.at(rank);
    int64_t lc = c.completed.value_or(*c.enqueued);
    if (lc<*max_lc&& * c.enqueued> lc) out.completion_stalled.push_back(rank);
  }
  if (!seq) return;
  out.diverging_seq = seq;
  for (int64_t rank : known) {
    (*counters.at(rank).enqueued >= *seq ? out.entered : out.missing).push_back(rank);
  }
  out.missing.insert(out.missing.end(), unknown.begin(), unknown.end());
  std::sort(out.missing.begin(), out.missing.end());
}

// The op at the diverging collective, as an entered rank recorded it.
void DescribeOp(const GroupView& v, FrGroupAnalysis& out) {
  if (!out.diverging_seq) return;
  for (int64_t rank : out.entered) {
    std::vector<const FrEntry*> here = EntriesAt(v.members.at(rank), *out.diverging_seq);
    if (here.empty()) continue;
    out.op = here.back()->profiling_name;
    out.input_sizes = here.front()->input_sizes;
    out.input_dtypes = here.front()->input_dtypes;
    return;
  }
}

// "all_reduce" from "nccl:all_reduce", "send" from "nccl:send 0->1".
std::string OpType(const FrEntry& e) {
  std::string_view name = e.profiling_name;
  size_t colon = name.find(':');
  if (colon != std::string_view::npos) name.remove_prefix(colon + 1);
  return std::string(name.substr(0, name.find(' ')));
}

// The first tensor's element count; nullopt when there is none or it
// overflows (sizes come from files).
std::optional<int64_t> Numel(const std::vector<std::vector<int64_t>>& sizes, int64_t times = 1) {
  if (sizes.empty()) return std::nullopt;
  int64_t n = times;
  for (int64_t d : sizes.front()) {
    if (__builtin_mul_overflow(n, d, &n)) return std::nullopt;
  }
  return n;
}

bool In(const std::string& type, std::initializer_list<std::string_view> types) {
  return std::find(types.begin(), types.end(), type) != types.end();
}

std::set<std::string> AsSet(const std::vector<std::string>& v) { return {v.begin(), v.end()}; }

bool FirstShaped(const std::vector<std::vector<int64_t>>& sizes) {
  return !sizes.empty() && !sizes.front().empty();
}

// fr_trace's Op.dtype_mismatch: the dtypes differ where the op moves data.
std::optional<std::string> DtypeMismatch(const std::string& type, const FrEntry& a,
                                         const FrEntry& b) {
  if (!In(type, {"scatter", "gather", "broadcast"}) &&
      AsSet(a.input_dtypes) != AsSet(a.output_dtypes) && FirstShaped(a.input_sizes) &&
      FirstShaped(a.output_sizes)) {
    return fmt::format("input dtypes {} but output dtypes {}", a.input_dtypes, a.output_dtypes);
  }
  if (!In(type, {"scatter", "broadcast"}) && AsSet(a.input_dtypes) != AsSet(b.input_dtypes) &&
      FirstShaped(a.input_sizes) && FirstShaped(b.input_sizes)) {
    return fmt::format("input dtypes {} against {}", a.input_dtypes, b.input_dtypes);
  }
  if (type != "gather" && AsSet(a.output_dtypes) != AsSet(b.output_dtypes) &&
      FirstShaped(a.output_sizes) && FirstShaped(b.output_sizes)) {
    return fmt::format("output dtypes {} against {}", a.output_dtypes, b.output_dtypes);
  }
  return std::nullopt;
}

// An all-gather's output is its input times the group's size; a
// reduce-scatter's input is its output times it (fr_trace's numel checks).
std::optional<std::string> NumelMismatch(const std::string& type, const FrEntry& a,
                                         const FrEntry& b, int64_t group_size) {
  bool gathers = In(type, {"all_gather", "_all_gather_base", "all_gather_base",
                           "all_gather_into_tensor_coalesced"});
  bool scatters =
      In(type, {"reduce_scatter", "_reduce_scatter_base", "reduce_scatter_tensor_coalesced"});
  if (!gathers && !scatters) return std::nullopt;
  const auto& whole = gathers ? b.output_sizes : b.input_sizes;
  const auto& part = gathers ? a.input_sizes : a.output_sizes;
  std::optional<int64_t> got = Numel(whole), want = Numel(part, group_size);
  if (!FirstShaped(whole) || !FirstShaped(part) || !got || !want || *got == *want) {
    return std::nullopt;
  }
  return fmt::format("{} of {} elements, {} expected from {} ranks' {}",
                     gathers ? "output" : "input", *got, *want, group_size,
                     gathers ? "inputs" : "outputs");
}

// fr_trace's Op.match for collectives: (kind, detail) of the first difference.
std::optional<std::pair<std::string, std::string>> OpMismatch(const FrEntry& a, const FrEntry& b,
                                                              int64_t group_size) {
  std::string type = OpType(a);
  if (type != OpType(b)) return {{"type", fmt::format("{} against {}", type, OpType(b))}};
  if (!In(type, {"all_to_all", "scatter"}) && a.input_sizes != b.input_sizes) {
    return {{"size", fmt::format("input sizes {} against {}", a.input_sizes, b.input_sizes)}};
  }
  if (!In(type, {"all_to_all", "gather"}) && a.output_sizes != b.output_sizes) {
    return {{"size", fmt::format("output sizes {} against {}", a.output_sizes, b.output_sizes)}};
  }
  if (std::optional<std::string> n = NumelMismatch(type, a, b, group_size)) return {{"size", *n}};
  if (std::optional<std::string> d = DtypeMismatch(type, a, b)) return {{"dtype", *d}};
  return std::nullopt;
}

// The same collective (sequence id) on each pair of ranks that both hold it:
// the lowest rank holding it against each other one.
void CompareOps(const GroupView& v, FrGroupAnalysis& out) {
  std::map<int64_t, std::map<int64_t, std::vector<const FrEntry*>>> by_seq;
  for (const auto& [rank, m] : v.members) {
    for (const FrEntry* e : m.entries) {
      if (!e->is_p2p) by_seq[e->collective_seq_id][rank].push_back(e);
    }
  }
  int64_t size = static_cast<int64_t>(v.members.size());
  for (const auto& [seq, ranks] : by_seq) {
    const auto& [first, ops] = *ranks.begin();
    for (const auto& [rank, others] : ranks) {
      if (rank == first || out.mismatches.size() >= kFrMaxMismatchesPerGroup) continue;
      if (ops.size() != others.size()) {
        out.mismatches.push_back({seq, "coalesced_count", first, rank,
                                  fmt::format("{} ops against {}", ops.size(), others.size())});
        continue;
      }
      for (size_t i = 0; i < ops.size(); ++i) {
        auto m = OpMismatch(*ops[i], *others[i], size);
        if (!m) continue;
        out.mismatches.push_back({seq, m->first, first, rank, m->second});
        break;
      }
    }
  }
}

// A pending send/recv's peer, as a global rank; nullopt when the name does
// not say it ("nccl:send 0->1": from group rank 0 to group rank 1).
std::optional<std::pair<bool, int64_t>> P2pPeer(const FrEntry& e,
                                                const std::vector<int64_t>& members) {
  std::string type = OpType(e);
  size_t space = e.profiling_name.find(' ');
  if (space == std::string::npos || (type != "send" && type != "recv")) return std::nullopt;
  std::string arrow = type == "send" ? "->" : "<-";
  std::string_view meta = std::string_view(e.profiling_name).substr(space + 1);
  size_t at = meta.find(arrow);
  if (at == std::string_view::npos) return std::nullopt;
  int64_t peer = 0;
  std::string_view peer_text = meta.substr(at + 2);
  auto [end, ec] = std::from_chars(peer_text.data(), peer_text.data() + peer_text.size(), peer);
  if (ec != std::errc() || peer < 0 || peer >= static_cast<int64_t>(members.size())) {
    return std::nullopt;
  }
  return std::make_pair(type == "send", members[static_cast<size_t>(peer)]);
}

// Point-to-point ops in flight whose dumped peer has none of the other kind
// toward this rank in flight: the peer never posted it (or is not there).
void MatchP2p(const GroupView& v, FrGroupAnalysis& out) {
  std::vector<int64_t> members;
  for (const auto& [rank, m] : v.members) members.push_back(rank);
  // (rank, peer, is_send) of every op in flight
  std::set<std::tuple<int64_t, int64_t, bool>> pending;
  for (const auto& [rank, m] : v.members) {
    for (const FrEntry* e : m.entries) {
      auto peer = e->is_p2p && e->state != "completed" ? P2pPeer(*e, members) : std::nullopt;
      if (peer) pending.insert({rank, peer->second, peer->first});
    }
  }
  for (const auto& [rank, m] : v.members) {
    for (const FrEntry* e : m.entries) {
      auto peer = e->is_p2p && e->state != "completed" ? P2pPeer(*e, members) : std::nullopt;
      if (!peer || v.members.at(peer->second).dump == nullptr) continue;
      if (pending.count({peer->second, rank, !peer->first}) != 0) continue;
      if (out.unmatched_p2p.size() >= kFrMaxUnmatchedP2pPerGroup) return;
      out.unmatched_p2p.push_back({rank, peer->second, e->profiling_name, e->p2p_seq_id});
    }
  }
}

FrGroupAnalysis AnalyzeGroup(const GroupView& v) {
  FrGroupAnalysis out;
  out.name = v.name;
  out.desc = v.desc;
  out.p2p_only = v.has_p2p && !v.has_collective;
  std::map<int64_t, Counters> counters;
  for (const auto& [rank, m] : v.members) {
    out.ranks.push_back(rank);
    if (m.dump == nullptr) out.not_dumped.push_back(rank);
    counters[rank] = CountersOf(m, !v.has_p2p);
  }
  if (!out.p2p_only) {
    Diverge(v, counters, out);
    DescribeOp(v, out);
    CompareOps(v, out);
  }
  MatchP2p(v, out);
  for (const auto& [rank, m] : v.members) {
    out.positions.push_back(PositionOf(rank, m, counters[rank], out.diverging_seq));
  }
  return out;
}

bool HasEntries(const GroupView& v) {
  return std::any_of(v.members.begin(), v.members.end(),
                     [](const auto& m) { return !m.second.entries.empty(); });
}

// Groups where a culprit is missing or stalled first, then the other
// diverging ones, then those stuck together; the widest first within each
// (they show the most ranks at once), then by name.
void OrderGroups(const std::vector<int64_t>& culprits, std::vector<FrGroupAnalysis>& groups) {
  auto involves = [&](const std::vector<int64_t>& ranks) {
    return std::any_of(ranks.begin(), ranks.end(), [&](int64_t r) {
      return std::find(culprits.begin(), culprits.end(), r) != culprits.end();
    });
  };
  auto tier = [&](const FrGroupAnalysis& g) {
    if (involves(g.missing) || involves(g.completion_stalled)) return 0;
    if (g.diverges() || !g.unmatched_p2p.empty()) return 1;
    return g.diverging_seq ? 2 : 3;
  };
  std::stable_sort(groups.begin(), groups.end(), [&](const auto& a, const auto& b) {
    if (tier(a) != tier(b)) return tier(a) < tier(b);
    if (a.ranks.size() != b.ranks.size()) return a.ranks.size() > b.ranks.size();
    if (a.name.size() != b.name.size()) return a.name.size() < b.name.size();  // "9" < "10"
    return a.name < b.name;
  });
}

}  // namespace

namespace {

// The ranks the others wait for: stalled ranks, and ranks missing from a
// collective (or a point-to-point op) while waiting on no one themselves.
std::vector<int64_t> Culprits(const std::vector<FrGroupAnalysis>& groups,
                              std::vector<std::string>& notes) {
  std::map<int64_t, std::set<int64_t>> waits_on;
  std::set<int64_t> missing, culprits;
  for (const FrGroupAnalysis& g : groups) {
    for (int64_t e : g.entered) waits_on[e].insert(g.missing.begin(), g.missing.end());
    missing.insert(g.missing.begin(), g.missing.end());
    culprits.insert(g.completion_stalled.begin(), g.completion_stalled.end());
    for (const FrUnmatchedP2p& u : g.unmatched_p2p) {
      waits_on[u.rank].insert(u.peer);
      missing.insert(u.peer);
    }
  }
  for (int64_t m : missing) {
    std::set<int64_t>& on = waits_on[m];
    on.erase(m);
    if (on.empty()) culprits.insert(m);
  }
  if (culprits.empty() && !missing.empty()) {
    notes.push_back(
        "every rank missing from a collective waits on another rank itself: all of "
        "them are named");
    culprits = missing;
  }
  return {culprits.begin(), culprits.end()};
}

void AddNotes(const std::vector<FlightRecorderDump>& dumps, const std::set<int64_t>& not_dumped,
              size_t idle_groups, FlightRecorderAnalysis& a) {
  bool any_entry = false, any_completed = false, any_status = false;
  for (const FlightRecorderDump& d : dumps) {
    any_status |= !d.statuses.empty();
    for (const FrEntry& e : d.entries) {
      any_entry = true;
      any_completed |= e.state == "completed";
    }
  }
  if (any_entry && !any_completed) {
    a.notes.push_back(
        "the dumps hold only collectives still in flight (as torch writes them at a timeout): "
        "a rank's last completed collective is read from its pg_status");
  }
  if (any_entry && !any_status) {
    a.notes.push_back(
        "no pg_status (formats before 2.3): each rank's place comes from its entries alone");
  }
  if (!not_dumped.empty()) {
    a.notes.push_back(
        fmt::format("ranks {} are members of a group but have no dump here: they are not judged",
                    RankList({not_dumped.begin(), not_dumped.end()})));
  }
  if (idle_groups > 0) {
    a.notes.push_back(
        fmt::format("{} process group(s) have nothing in flight on any rank", idle_groups));
  }
}

}  // namespace

FlightRecorderAnalysis AnalyzeFlightRecorder(const std::vector<FlightRecorderDump>& dumps) {
  FlightRecorderAnalysis a;
  std::set<std::string> versions;
  for (const FlightRecorderDump& d : dumps) {
    a.ranks_dumped.push_back(d.rank);
    if (d.entries.empty()) a.ranks_without_entries.push_back(d.rank);
    versions.insert(d.version);
  }
  a.version =
      versions.size() == 1 ? *versions.begin() : fmt::format("{}", fmt::join(versions, "/"));
  std::set<int64_t> not_dumped;
  size_t idle = 0;
  for (const auto& [key, v] : BuildGroups(dumps)) {
    for (const auto& [rank, m] : v.members) {
      if (m.dump == nullptr) not_dumped.insert(rank);
    }
    if (!HasEntries(v)) {
      ++idle;
      continue;
    }
    a.groups.push_back(AnalyzeGroup(v));
  }
  a.ranks_not_dumped.assign(not_dumped.begin(), not_dumped.end());
  AddNotes(dumps, not_dumped, idle, a);
  a.culprits = Culprits(a.groups, a.notes);
  OrderGroups(a.culprits, a.groups);
  return a;
}

}  // namespace stallscope
