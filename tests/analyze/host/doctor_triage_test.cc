// The doctor's triage (analyze/host/doctor_triage.h) and the run analysis
// (analyze/run/analysis.h) moved out of the command line; these pin what
// they add to a triage: the merge of a run's findings with those of the
// NCCL logs passed beside it, the notes' prefixes, why a layer was not
// checked, and what a run file's missing parts become.
#include "analyze/host/doctor_triage.h"

#include <gtest/gtest.h>

#include "analyze/run/analysis.h"
#include "finding_matchers.h"

namespace stallscope {
namespace {

Finding FromLog(const std::string& id, const std::string& log) {
  Finding f;
  f.id = id;
  f.layer = Layer::kNetwork;
  f.severity = Severity::kWarning;
  f.evidence.push_back({"nccl_log", log});
  return f;
}

RunAnalysis ARun(std::vector<Finding> findings) {
  RunAnalysis run;
  run.path = "job.db";
  run.findings = std::move(findings);
  run.checked = {Layer::kMemory, Layer::kIo};
  run.notes = {"no steps"};
  return run;
}

TEST(DoctorTriage, ARunsNcclFindingAlsoJudgedFromTheSameLogIsKeptOnce) {
  Triage t;
  t.findings.push_back(FromLog("network.rdma_unused", "/logs/a.log"));
  TriageRun(ARun({FromLog("network.rdma_unused", "/logs/a.log"),
                  FromLog("network.rdma_unused", "/logs/b.log"),
                  FromLog("network.wrong_interface", "/logs/a.log")}),
            t);
  EXPECT_EQ(FindAll(t.findings, "network.rdma_unused").size(), 2u) << Ids(t.findings);
  ASSERT_NE(Find(t.findings, "network.wrong_interface"), nullptr);
  // What came from the run says so; what doctor judged itself does not.
  EXPECT_EQ(Find(t.findings[0], "from_run"), nullptr);
  const Evidence* from = Find(*Find(t.findings, "network.wrong_interface"), "from_run");
  ASSERT_NE(from, nullptr);
  EXPECT_EQ(std::get<std::string>(from->value), "job.db");
  EXPECT_EQ(t.checked, (std::vector<Layer>{Layer::kMemory, Layer::kIo}));
  EXPECT_EQ(t.notes, std::vector<std::string>{"run job.db: no steps"});
  ASSERT_TRUE(t.run);
}

TEST(DoctorTriage, WhyNotCheckedDependsOnARun) {
  Triage host_only;
  std::vector<std::pair<Layer, std::string>> why = WhyNotChecked(host_only);
  ASSERT_EQ(why.size(), 2u);
  EXPECT_EQ(why[0].first, Layer::kDistributed);
  EXPECT_NE(why[0].second.find("--run RUN.db"), std::string::npos);
  EXPECT_EQ(why[1].first, Layer::kCode);

  Triage with_run;
  RunAnalysis run = ARun({});
  run.timeline.steps.push_back(StepEvent{});
  run.timeline.steps.back().rank = 1;
  TriageRun(std::move(run), with_run);
  why = WhyNotChecked(with_run);
  ASSERT_EQ(why.size(), 2u);
  EXPECT_NE(why[0].second.find("2 rank(s)"), std::string::npos) << why[0].second;
}

TEST(DoctorTriage, ACensusThatFailedIsANoteNamingThePath) {
  Triage t;
  TriageCensus("/data/x", Result<DatasetCensus>(Status::NotFound("/data/x: gone")), 1 << 30, t);
  ASSERT_EQ(t.notes.size(), 1u);
  EXPECT_EQ(t.notes[0].rfind("io: dataset census of /data/x: ", 0), 0u) << t.notes[0];
  EXPECT_TRUE(t.findings.empty());
  EXPECT_FALSE(t.census);
}

TEST(DoctorTriage, ABaselineWithoutBenchFiguresSaysWhatWasNotCompared) {
  HostBaseline saved;
  saved.metrics.push_back({"io.bench.sequential_mb_per_s", Layer::kIo, 1000, "MB/s"});
  HostBaseline now;
  Triage t;
  TriageBaseline(saved, now, 0.10, t);
  ASSERT_FALSE(t.not_compared.empty());
  ASSERT_EQ(t.notes.size(), 1u);
  EXPECT_NE(t.notes[0].find("not compared: the bench did not run"), std::string::npos)
      << t.notes[0];
}

TEST(RunAnalysis, MissingPartsOfARunFileAreNotesNotErrors) {
  RunAnalysis run = AnalyzeRun("r.db", Timeline{}, std::nullopt,
                               Result<FindingsWithNotes>(Status::ParseError("r.db", 3, "bad row")));
  EXPECT_EQ(run.path, "r.db");
  ASSERT_GE(run.notes.size(), 2u);
  EXPECT_NE(run.notes.front().find("no steps from the Python hook"), std::string::npos);
  EXPECT_EQ(run.notes.back().rfind("stored findings: ", 0), 0u) << run.notes.back();
  EXPECT_TRUE(run.baseline_json.empty());
  EXPECT_EQ(run.checked, (std::vector<Layer>{Layer::kMemory, Layer::kIo, Layer::kNetwork}));
}

TEST(RunAnalysis, StoredFindingsAndNotesJoinTheRuns) {
  FindingsWithNotes stored;
  stored.findings.push_back(FromLog("network.connect_failed", "n.log"));
  stored.notes.push_back("nccl log n.log: 3 NCCL lines");
  RunAnalysis run = AnalyzeRun("r.db", Timeline{}, std::nullopt, stored);
  EXPECT_NE(Find(run.findings, "network.connect_failed"), nullptr);
  EXPECT_EQ(run.notes.back(), "nccl log n.log: 3 NCCL lines");
}

}  // namespace
}  // namespace stallscope
