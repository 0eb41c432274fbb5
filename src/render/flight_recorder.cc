// `stallscope hang` as text and JSON: see flight_recorder.h.
#include "render/flight_recorder.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>
#include <vector>

namespace stallscope {
namespace {

std::string Ranks(const std::vector<int64_t>& ranks) {
  return ranks.empty() ? "-" : fmt::format("{}", fmt::join(ranks, ","));
}

std::string Label(const FrGroupAnalysis& g) {
  return g.desc.empty() || g.desc == "undefined" ? g.name : g.name + ":" + g.desc;
}

std::string Seq(const std::optional<int64_t>& seq) { return seq ? fmt::format("#{}", *seq) : "-"; }

const FrRankPosition* PositionOf(const FrGroupAnalysis& g, int64_t rank) {
  for (const FrRankPosition& p : g.positions) {
    if (p.rank == rank) return &p;
  }
  return nullptr;
}

// "9 (last completed #87748)" for each rank of `ranks`.
std::string WithLastCompleted(const FrGroupAnalysis& g, const std::vector<int64_t>& ranks) {
  std::vector<std::string> parts;
  for (int64_t r : ranks) {
    const FrRankPosition* p = PositionOf(g, r);
    if (p && !p->last_completed && !p->has_entries) {
      parts.push_back(fmt::format("{} (no entry of this group in its dump)", r));
      continue;
    }
    std::string last = p && p->last_completed ? Seq(p->last_completed) : "unknown";
    parts.push_back(fmt::format("{} (last completed {})", r, last));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string Tensors(const FrGroupAnalysis& g) {
  if (g.input_sizes.empty()) return "";
  return fmt::format(" (input {} {})", g.input_sizes, fmt::join(g.input_dtypes, ","));
}

// The highest last completed collective among the members.
std::optional<int64_t> PeersCompleted(const FrGroupAnalysis& g) {
  std::optional<int64_t> most;
  for (const FrRankPosition& p : g.positions) {
    if (p.last_completed) most = std::max(most.value_or(*p.last_completed), *p.last_completed);
  }
  return most;
}

// The stack of the first waiting rank that dumped one.
void FramesText(const FrGroupAnalysis& g, std::string& out) {
  for (int64_t r : g.entered) {
    const FrRankPosition* p = PositionOf(g, r);
    if (p == nullptr || p->frames.empty()) continue;
    out +=
        fmt::format("  stack of rank {} ({}):\n", r, p->thread_name.empty() ? "?" : p->thread_name);
    for (size_t i = 0; i < p->frames.size() && i < kFrTextMaxLines; ++i) {
      const FrFrame& f = p->frames[i];
      out += fmt::format("    #{} {} at {}:{}\n", i, f.name, f.filename, f.line);
    }
    return;
  }
}

void GroupText(const FrGroupAnalysis& g, std::string& out) {
  out += fmt::format("group {}, ranks {}\n", Label(g), Ranks(g.ranks));
  if (g.diverging_seq) {
    out += fmt::format("  collective {} {}{}\n", Seq(g.diverging_seq),
                       g.op.empty() ? "(no entry names it)" : g.op, Tensors(g));
    out += fmt::format("  in it, waiting: {}\n", Ranks(g.entered));
  }
  if (!g.missing.empty())
    out += fmt::format("  never entered:  {}\n", WithLastCompleted(g, g.missing));
  if (!g.completion_stalled.empty()) {
    out += fmt::format("  stopped completing: {}; their peers completed {}\n",
                       WithLastCompleted(g, g.completion_stalled), Seq(PeersCompleted(g)));
  }
  if (!g.not_dumped.empty()) out += fmt::format("  no dump: {}\n", Ranks(g.not_dumped));
  for (const FrMismatch& m : g.mismatches) {
    out += fmt::format("  {} differs at #{}: rank {} against rank {}: {}\n", m.kind, m.seq, m.rank,
                       m.other_rank, m.detail);
  }
  for (size_t i = 0; i < g.unmatched_p2p.size() && i < kFrTextMaxLines; ++i) {
    const FrUnmatchedP2p& u = g.unmatched_p2p[i];
    out += fmt::format("  rank {} waits in {} (p2p #{}) with rank {}, which has no op to match\n",
                       u.rank, u.op, u.p2p_seq_id, u.peer);
  }
  if (g.unmatched_p2p.size() > kFrTextMaxLines) {
    out += fmt::format("  ... {} more unmatched point-to-point op(s)\n",
                       g.unmatched_p2p.size() - kFrTextMaxLines);
  }
  FramesText(g, out);
}

bool Diverges(const FrGroupAnalysis& g) { return g.diverges() || !g.unmatched_p2p.empty(); }

void GroupsText(const FlightRecorderAnalysis& a, std::string& out) {
  size_t shown = 0, more = 0;
  std::vector<std::string> together;
  for (const FrGroupAnalysis& g : a.groups) {
    if (Diverges(g)) {
      if (shown++ < kFrTextMaxGroups) {
        GroupText(g, out);
      } else {
        ++more;
      }
    } else if (g.diverging_seq) {
      together.push_back(fmt::format("  {} {} {}", Label(g), Seq(g.diverging_seq), g.op));
    }
  }
  if (more > 0) out += fmt::format("... {} more diverging group(s) (--json lists them)\n", more);
  if (!together.empty()) {
    out +=
        fmt::format("{} group(s) where every rank entered the collective and none completed it:\n",
                    together.size());
    for (size_t i = 0; i < together.size() && i < kFrTextMaxGroups; ++i) out += together[i] + "\n";
    if (together.size() > kFrTextMaxGroups) {
      out += fmt::format("  ... {} more\n", together.size() - kFrTextMaxGroups);
    }
  }
}

}  // namespace

std::string RenderHangText(std::string_view source, const FlightRecorderAnalysis& a,
                           const ReportHeader& header, const Report& report) {
  std::string out = fmt::format("stallscope hang: {} dump(s) of format {} from {}\n",
                                a.ranks_dumped.size(), a.version, source);
  if (!a.ranks_without_entries.empty()) {
    out += fmt::format("rank(s) with nothing in flight in their dump: {}\n",
                       Ranks(a.ranks_without_entries));
  }
  out += a.culprits.empty() ? "no rank holds the others\n"
                            : fmt::format("the others wait for rank(s) {}\n", Ranks(a.culprits));
  out += "\n";
  GroupsText(a, out);
  out += "\n";
  out += RenderFindingsSection(header, report);
  return out;
}

namespace {

nlohmann::ordered_json OptionalJson(const std::optional<int64_t>& v) {
  return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json();
}

nlohmann::ordered_json PositionJson(const FrRankPosition& p) {
  nlohmann::ordered_json frames = nlohmann::ordered_json::array();
  for (const FrFrame& f : p.frames) {
    frames.push_back({{"name", f.name}, {"filename", f.filename}, {"line", f.line}});
  }
  return {{"rank", p.rank},
          {"dumped", p.dumped},
          {"has_entries", p.has_entries},
          {"last_enqueued", OptionalJson(p.last_enqueued)},
          {"last_completed", OptionalJson(p.last_completed)},
          {"last_completed_op", p.last_completed_op},
          {"state", p.state},
          {"thread_name", p.thread_name},
          {"frames", frames}};
}

nlohmann::ordered_json GroupJson(const FrGroupAnalysis& g) {
  nlohmann::ordered_json positions = nlohmann::ordered_json::array();
  for (const FrRankPosition& p : g.positions) positions.push_back(PositionJson(p));
  nlohmann::ordered_json mismatches = nlohmann::ordered_json::array();
  for (const FrMismatch& m : g.mismatches) {
    mismatches.push_back({{"collective_seq_id", m.seq},
                          {"kind", m.kind},
                          {"rank", m.rank},
                          {"other_rank", m.other_rank},
                          {"detail", m.detail}});
  }
  nlohmann::ordered_json p2p = nlohmann::ordered_json::array();
  for (const FrUnmatchedP2p& u : g.unmatched_p2p) {
    p2p.push_back({{"rank", u.rank}, {"peer", u.peer}, {"op", u.op}, {"p2p_seq_id", u.p2p_seq_id}});
  }
  return {{"name", g.name},
          {"desc", g.desc},
          {"ranks", g.ranks},
          {"diverges", Diverges(g)},
          {"p2p_only", g.p2p_only},
          {"collective_seq_id", OptionalJson(g.diverging_seq)},
          {"op", g.op},
          {"input_sizes", g.input_sizes},
          {"input_dtypes", g.input_dtypes},
          {"entered", g.entered},
          {"missing", g.missing},
          {"not_dumped", g.not_dumped},
          {"completion_stalled", g.completion_stalled},
          {"mismatches", mismatches},
          {"unmatched_p2p", p2p},
          {"positions", positions}};
}

}  // namespace

nlohmann::ordered_json HangToJson(std::string_view source, const FlightRecorderAnalysis& a,
                                  const ReportHeader& header, const Report& report) {
  nlohmann::ordered_json out = ReportToJson(header, report);
  out["schema"] = "stallscope.hang/1";
  nlohmann::ordered_json groups = nlohmann::ordered_json::array();
  for (const FrGroupAnalysis& g : a.groups) groups.push_back(GroupJson(g));
  out["hang"] = {{"source", source},
                 {"format_version", a.version},
                 {"ranks_dumped", a.ranks_dumped},
                 {"ranks_without_entries", a.ranks_without_entries},
                 {"ranks_not_dumped", a.ranks_not_dumped},
                 {"culprits", a.culprits},
                 {"groups", groups}};
  return out;
}

}  // namespace stallscope
