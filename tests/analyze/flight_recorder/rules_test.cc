// Where a stuck job's ranks diverge (analyze/flight_recorder/rules.h): on
// dumps built here by hand (a rank missing, a GPU that stopped completing,
// ranks stuck together, each kind of mismatch fr_trace knows, a victim that
// waits on the culprit), on every scenario bench/gen_fr_dumps.py writes
// (expect.json), and on the real dumps of a 16-rank job, whose
// fault_injection.log names the ranks the analysis must name. Also the
// text and JSON of `stallscope hang` (render/flight_recorder.h).
#include "analyze/flight_recorder/rules.h"

#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "analyze/flight_recorder/finding.h"
#include "analyze/report.h"
#include "finding_matchers.h"
#include "flight_recorder_dumps.h"
#include "formats/flight_recorder/flight_recorder.h"
#include "render/flight_recorder.h"

namespace stallscope {
namespace {

// A job of `world` ranks in one group "0" (default_pg), each rank with its
// pg_status counters and the entries added with Add().
struct Job {
  explicit Job(int world, std::string desc = "default_pg") {
    for (int r = 0; r < world; ++r) {
      FlightRecorderDump& d = dumps.emplace_back();
      d.rank = r;
      d.version = "2.9";
      d.version_major = 2;
      d.version_minor = 9;
      std::vector<int64_t> all;
      for (int i = 0; i < world; ++i) all.push_back(i);
      d.groups.push_back({"0", desc, all});
    }
  }
  void Status(int rank, int64_t enqueued, int64_t completed) {
    dumps[rank].statuses.push_back({0, enqueued, -1, completed});
  }
  FrEntry& Add(int rank, int64_t seq, std::string name = "nccl:all_reduce",
               std::string state = "scheduled") {
    FrEntry& e = dumps[rank].entries.emplace_back();
    e.pg_name = "0";
    e.pg_desc = dumps[rank].groups[0].desc;
    e.collective_seq_id = seq;
    e.profiling_name = std::move(name);
    e.state = std::move(state);
    e.input_sizes = e.output_sizes = {{1024}};
    e.input_dtypes = e.output_dtypes = {"Float"};
    e.is_p2p = e.profiling_name.find("send") != std::string::npos ||
               e.profiling_name.find("recv") != std::string::npos;
    return e;
  }
  std::vector<FlightRecorderDump> dumps;
};

const FrGroupAnalysis& Group(const FlightRecorderAnalysis& a, const std::string& name) {
  for (const FrGroupAnalysis& g : a.groups) {
    if (g.name == name) return g;
  }
  ADD_FAILURE() << "no group " << name;
  static FrGroupAnalysis none;
  return none;
}

TEST(FlightRecorderRules, RankMissingFromACollectiveIsNamed) {
  Job job(4);
  for (int r : {0, 1, 3}) {
    job.Status(r, 10, 9);
    job.Add(r, 10);
  }
  job.Status(2, 9, 9);
  job.Add(2, 9, "nccl:all_reduce", "completed");  // a full dump keeps completed entries
  FlightRecorderAnalysis a = AnalyzeFlightRecorder(job.dumps);
  const FrGroupAnalysis& g = Group(a, "0");
  EXPECT_EQ(g.diverging_seq, 10);
  EXPECT_EQ(g.op, "nccl:all_reduce");
  EXPECT_EQ(g.missing, (std::vector<int64_t>{2}));
  EXPECT_EQ(g.entered, (std::vector<int64_t>{0, 1, 3}));
  EXPECT_TRUE(g.completion_stalled.empty());
  EXPECT_EQ(a.culprits, (std::vector<int64_t>{2}));
  FindingsWithNotes f = FlightRecorderFindings(a);
  const Finding* hang = Find(f.findings, "distributed.hang");
  ASSERT_NE(hang, nullptr);
  EXPECT_EQ(hang->severity, Severity::kCritical);
  EXPECT_EQ(hang->layer, Layer::kDistributed);
  EXPECT_EQ(EvidenceOf<std::string>(*hang, "culprit_ranks"), "2");
  EXPECT_EQ(EvidenceOf<std::string>(*hang, "group"), "0:default_pg");
  EXPECT_EQ(EvidenceOf<int64_t>(*hang, "collective_seq_id"), 10);
  EXPECT_EQ(EvidenceOf<std::string>(*hang, "op"), "nccl:all_reduce");
  EXPECT_EQ(EvidenceOf<std::string>(*hang, "ranks_missing"), "2");
  EXPECT_EQ(EvidenceOf<std::string>(*hang, "ranks_waiting"), "0,1,3");
  EXPECT_EQ(EvidenceOf<std::string>(*hang, "missing_last_completed_seq"), "2:9");
  EXPECT_NE(hang->summary.find("rank(s) 2 never entered nccl:all_reduce #10"), std::string::npos)
      << hang->summary;
}

// Only-in-flight dumps: the rank that completed a collective its peer has
// not has no entry for it, and is not missing (fr_trace calls it missing).
TEST(FlightRecorderRules, GpuThatStoppedCompletingIsNamedNotItsPeer) {
  Job job(2, "TENSOR_MODEL_PARALLEL_GROUP");
  job.Status(0, 26, 5);  // enqueued everything, completed nothing since 5
  for (int s = 6; s <= 26; ++s) job.Add(0, s);
  job.Status(1, 26, 18);
  for (int s = 19; s <= 26; ++s) job.Add(1, s);
  FlightRecorderAnalysis a = AnalyzeFlightRecorder(job.dumps);
  const FrGroupAnalysis& g = Group(a, "0");
  EXPECT_TRUE(g.missing.empty());
  EXPECT_EQ(g.completion_stalled, (std::vector<int64_t>{0}));
  EXPECT_EQ(a.culprits, (std::vector<int64_t>{0}));
  std::optional<Finding> hang = FindCopy(FlightRecorderFindings(a).findings, "distributed.hang");
  ASSERT_TRUE(hang);
  EXPECT_EQ(EvidenceOf<std::string>(*hang, "stalled_last_completed_seq"), "0:5");
  EXPECT_NE(hang->next.find("xid"), std::string::npos);
}

TEST(FlightRecorderRules, EveryRankStuckInOneCollectiveWarns) {
  Job job(4);
  for (int r = 0; r < 4; ++r) {
    job.Status(r, 10, 9);
    job.Add(r, 10);
  }
  FlightRecorderAnalysis a = AnalyzeFlightRecorder(job.dumps);
  EXPECT_TRUE(a.culprits.empty());
  EXPECT_FALSE(Group(a, "0").diverges());
  std::optional<Finding> hang = FindCopy(FlightRecorderFindings(a).findings, "distributed.hang");
  ASSERT_TRUE(hang);
  EXPECT_EQ(hang->severity, Severity::kWarning);
  EXPECT_NE(hang->summary.find("none completed it"), std::string::npos);
}

TEST(FlightRecorderRules, NothingInFlightIsNoFinding) {
  Job job(2);
  job.Status(0, 10, 10);
  job.Status(1, 10, 10);
  FlightRecorderAnalysis a = AnalyzeFlightRecorder(job.dumps);
  FindingsWithNotes f = FlightRecorderFindings(a);
  EXPECT_TRUE(f.findings.empty());
  EXPECT_FALSE(f.notes.empty());
}

TEST(FlightRecorderRules, MismatchesFollowFrTracesRules) {
  struct Case {
    std::string name;
    std::function<void(FrEntry&)> change;
    std::string kind;
  };
  const Case cases[] = {
      {"type", [](FrEntry& e) { e.profiling_name = "nccl:broadcast"; }, "type"},
      {"size", [](FrEntry& e) { e.input_sizes = e.output_sizes = {{512}}; }, "size"},
      {"dtype", [](FrEntry& e) { e.input_dtypes = e.output_dtypes = {"BFloat16"}; }, "dtype"},
  };
  for (const Case& c : cases) {
    Job job(2);
    job.Add(0, 3);
    c.change(job.Add(1, 3));
    FlightRecorderAnalysis a = AnalyzeFlightRecorder(job.dumps);
    const FrGroupAnalysis& g = Group(a, "0");
    ASSERT_EQ(g.mismatches.size(), 1u) << c.name;
    EXPECT_EQ(g.mismatches[0].kind, c.kind);
    EXPECT_EQ(g.mismatches[0].seq, 3);
    EXPECT_EQ(g.mismatches[0].rank, 0);
    EXPECT_EQ(g.mismatches[0].other_rank, 1);
    std::optional<Finding> hang = FindCopy(FlightRecorderFindings(a).findings, "distributed.hang");
    ASSERT_TRUE(hang);
    EXPECT_EQ(hang->severity, Severity::kCritical) << c.name;
  }
  // all_to_all sizes may differ between ranks; an all-gather's output must
  // be its input times the group's size.
  Job a2a(2);
  a2a.Add(0, 3, "nccl:all_to_all");
  a2a.Add(1, 3, "nccl:all_to_all").input_sizes = {{7}};
  EXPECT_TRUE(Group(AnalyzeFlightRecorder(a2a.dumps), "0").mismatches.empty());
  Job gather(2);
  for (int r = 0; r < 2; ++r) {
    FrEntry& e = gather.Add(r, 3, "nccl:_all_gather_base");
    e.output_sizes = {{r == 0 ? 2048 : 1024}};
  }
  FlightRecorderAnalysis gathered = AnalyzeFlightRecorder(gather.dumps);
  const FrGroupAnalysis& g = Group(gathered, "0");
  ASSERT_FALSE(g.mismatches.empty());
  EXPECT_EQ(g.mismatches[0].kind, "size");
  // A coalesced group of 3 ops on one rank and 2 on the other.
  Job coalesced(2);
  for (int r = 0; r < 2; ++r) {
    for (int i = 0; i < 2 + (r == 0); ++i) coalesced.Add(r, 4);
  }
  FlightRecorderAnalysis coalesced_analysis = AnalyzeFlightRecorder(coalesced.dumps);
  const FrGroupAnalysis& c = Group(coalesced_analysis, "0");
  ASSERT_FALSE(c.mismatches.empty());
  EXPECT_EQ(c.mismatches[0].kind, "coalesced_count");
}

// Ranks 1 and 2 never entered the all-reduce: rank 1 because it waits in
// a recv from rank 2, which never sent: rank 2 is the one the others wait
// for. When rank 2 instead waits in the all-reduce for rank 1, the two wait
// on each other, and both are named.
TEST(FlightRecorderRules, VictimWaitingOnTheCulpritIsNotNamed) {
  auto job_with = [](bool rank2_in_all_reduce) {
    Job job(3);
    for (auto& d : job.dumps) d.groups.push_back({"5", "PIPELINE", {0, 1, 2}});
    job.Status(0, 10, 9);
    job.Add(0, 10);
    job.Status(2, rank2_in_all_reduce ? 10 : 9, 9);
    job.Add(2, 9, "nccl:all_reduce", "completed");
    if (rank2_in_all_reduce) job.Add(2, 10);
    FrEntry& recv = job.Add(1, 0, "nccl:recv 1<-2");
    recv.pg_name = "5";
    recv.pg_desc = "PIPELINE";
    recv.pg_id = 1;
    return AnalyzeFlightRecorder(job.dumps);
  };
  FlightRecorderAnalysis a = job_with(false);
  EXPECT_EQ(Group(a, "0").missing, (std::vector<int64_t>{1, 2}));
  ASSERT_EQ(Group(a, "5").unmatched_p2p.size(), 1u);
  EXPECT_EQ(Group(a, "5").unmatched_p2p[0].rank, 1);
  EXPECT_EQ(Group(a, "5").unmatched_p2p[0].peer, 2);
  EXPECT_EQ(a.culprits, (std::vector<int64_t>{2}));
  FlightRecorderAnalysis cycle = job_with(true);
  EXPECT_EQ(Group(cycle, "0").missing, (std::vector<int64_t>{1}));
  EXPECT_EQ(cycle.culprits, (std::vector<int64_t>{1, 2}));
  bool noted = false;
  for (const std::string& n : cycle.notes) noted |= n.find("waits on another") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(FlightRecorderRules, RanksWithoutDumpsAreNotedNotJudged) {
  Job job(4);
  for (int r : {0, 1}) {
    job.Status(r, 10, 9);
    job.Add(r, 10);
  }
  job.dumps.resize(2);  // ranks 2 and 3 wrote no dump
  FlightRecorderAnalysis a = AnalyzeFlightRecorder(job.dumps);
  EXPECT_EQ(a.ranks_not_dumped, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(Group(a, "0").not_dumped, (std::vector<int64_t>{2, 3}));
  EXPECT_TRUE(Group(a, "0").missing.empty());
  EXPECT_TRUE(a.culprits.empty());
  bool noted = false;
  for (const std::string& n : a.notes) noted |= n.find("ranks 2,3") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(FlightRecorderRules, EveryGeneratedScenario) {
  ASSERT_FALSE(GeneratedFrDumps().empty());
  const nlohmann::json expect = GeneratedFrExpectations();
  for (const auto& [name, want] : expect.items()) {
    if (name == "refused") continue;
    Result<FlightRecorderDumps> d = ReadFlightRecorderDumps({(GeneratedFrDumps() / name).string()});
    ASSERT_TRUE(d.ok()) << name << ": " << d.status().message();
    FlightRecorderAnalysis a = AnalyzeFlightRecorder(d->dumps);
    EXPECT_EQ(a.culprits, want.at("culprits").get<std::vector<int64_t>>()) << name;
    FindingsWithNotes f = FlightRecorderFindings(a);
    const Finding* hang = Find(f.findings, "distributed.hang");
    if (want.at("severity").is_null()) {
      EXPECT_EQ(hang, nullptr) << name;
      continue;
    }
    ASSERT_NE(hang, nullptr) << name;
    EXPECT_EQ(SeverityName(hang->severity), want.at("severity").get<std::string>()) << name;
    if (want.contains("seq")) {
      const FrGroupAnalysis& g = Group(a, want.at("group").get<std::string>());
      EXPECT_EQ(g.diverging_seq, want.at("seq").get<int64_t>()) << name;
      EXPECT_EQ(g.missing, want.at("missing").get<std::vector<int64_t>>()) << name;
      if (want.contains("op")) {
        EXPECT_EQ(g.op, want.at("op").get<std::string>()) << name;
      }
      if (want.contains("mismatch")) {
        ASSERT_FALSE(g.mismatches.empty()) << name;
        EXPECT_EQ(g.mismatches[0].kind, want.at("mismatch").get<std::string>()) << name;
        auto ranks = want.at("mismatch_ranks").get<std::vector<int64_t>>();
        EXPECT_EQ(g.mismatches[0].rank, ranks[0]) << name;
        EXPECT_EQ(g.mismatches[0].other_rank, ranks[1]) << name;
      }
    }
    if (want.contains("ranks_without_entries")) {
      EXPECT_EQ(a.ranks_without_entries,
                want.at("ranks_without_entries").get<std::vector<int64_t>>());
    }
  }
}

// The ranks fault_injection.log names are the ones the others wait for.
TEST(FlightRecorderRules, RealIncidentsNameTheFaultyRanks) {
  STALLSCOPE_REQUIRE_SHARED_FR(SharedFlightRecorder());
  for (const char* incident : kFrIncidents) {
    std::filesystem::path dir = SharedFlightRecorder() / incident;
    Result<FlightRecorderDumps> d = ReadFlightRecorderDumps({dir.string()});
    ASSERT_TRUE(d.ok()) << d.status().message();
    FlightRecorderAnalysis a = AnalyzeFlightRecorder(d->dumps);
    std::set<int64_t> faulty = FaultRanks(dir);
    ASSERT_EQ(faulty.size(), 2u) << incident;
    EXPECT_EQ(std::set<int64_t>(a.culprits.begin(), a.culprits.end()), faulty) << incident;
    std::optional<Finding> hang = FindCopy(FlightRecorderFindings(a).findings, "distributed.hang");
    ASSERT_TRUE(hang) << incident;
    EXPECT_EQ(hang->severity, Severity::kCritical);
    // A GIL held: the ranks dumped nothing in flight; a GPU error: the
    // ranks stopped completing what their peers completed.
    bool gil = std::string(incident).starts_with("lock_gil");
    EXPECT_EQ(std::set<int64_t>(a.ranks_without_entries.begin(), a.ranks_without_entries.end()),
              gil ? faulty : std::set<int64_t>())
        << incident;
    std::set<int64_t> stalled;
    for (const FrGroupAnalysis& g : a.groups) {
      stalled.insert(g.completion_stalled.begin(), g.completion_stalled.end());
    }
    EXPECT_EQ(stalled, gil ? std::set<int64_t>() : faulty) << incident;
  }
}

TEST(FlightRecorderRules, RendersTextAndJson) {
  Job job(4);
  for (int r : {0, 1, 3}) {
    job.Status(r, 10, 9);
    job.Add(r, 10).frames = {{"all_reduce", "torch/distributed/distributed_c10d.py", 2501},
                             {"train_step", "train.py", 88}};
  }
  job.Status(2, 9, 9);
  job.Add(2, 9, "nccl:all_reduce", "completed");
  FlightRecorderAnalysis a = AnalyzeFlightRecorder(job.dumps);
  Report report = ReportOf(FlightRecorderFindings(a), {Layer::kDistributed}, {});
  ReportHeader header{"hang", "", "2025-01-01T00:00:00Z", 0};
  std::string text = RenderHangText("dumps/", a, header, report);
  EXPECT_NE(text.find("the others wait for rank(s) 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("never entered:  2 (last completed #9)"), std::string::npos) << text;
  EXPECT_NE(text.find("#1 train_step at train.py:88"), std::string::npos) << text;
  EXPECT_NE(text.find("[critical] distributed.hang"), std::string::npos) << text;
  nlohmann::ordered_json j = HangToJson("dumps/", a, header, report);
  EXPECT_EQ(j.at("schema"), "stallscope.hang/1");
  EXPECT_EQ(j.at("hang").at("culprits"), nlohmann::ordered_json::array({2}));
  EXPECT_EQ(j.at("hang").at("groups").at(0).at("collective_seq_id"), 10);
  EXPECT_EQ(j.at("findings").at(0).at("id"), "distributed.hang");
}

}  // namespace
}  // namespace stallscope
