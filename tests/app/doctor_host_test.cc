// doctor's steps (app/doctor_host.h) on fixture hosts: inputs refused before
// any sampling, naming the flag and never overwriting a file that is not a
// baseline; a host triaged layer by layer with the dataset's census,
// and the report, the why-not-checked list and the baseline that come out.
#include "app/doctor_host.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "finding_matchers.h"

namespace stallscope {
namespace {

namespace fs = std::filesystem;
const std::string kFixtures = STALLSCOPE_FIXTURES;

bool HasNote(const std::vector<std::string>& notes, const std::string& part) {
  for (const std::string& n : notes) {
    if (n.find(part) != std::string::npos) return true;
  }
  return false;
}

std::string ErrorOf(const DoctorRequest& r) {
  Result<DoctorInputs> in = CheckDoctorInputs(Root("/"), r);
  return in.ok() ? "" : in.status().message();
}

TEST(DoctorInputs, RefusedBeforeSamplingNamingTheFlag) {
  DoctorRequest r;
  EXPECT_EQ(ErrorOf(r), "");
  r.interval_seconds = 0;
  EXPECT_NE(ErrorOf(r).find("--interval 0"), std::string::npos);
  r = {};
  r.drift_percent = 100;
  EXPECT_NE(ErrorOf(r).find("--drift 100"), std::string::npos);
  r = {};
  r.data = "/no/such/dataset";
  EXPECT_NE(ErrorOf(r).find("--data /no/such/dataset"), std::string::npos);
  r = {};
  r.baseline = "/no/such/baseline.json";
  EXPECT_NE(ErrorOf(r).find("--baseline"), std::string::npos);
  r = {};
  r.runs = {"/no/such/run.db"};
  EXPECT_NE(ErrorOf(r).find("--run"), std::string::npos);
  r = {};
  r.nccl_logs = {"/no/such/nccl.log"};
  EXPECT_NE(ErrorOf(r).find("/no/such/nccl.log"), std::string::npos);

  // --save-baseline over a file that is not a baseline: refused, the file kept.
  char dir[] = "/tmp/stallscope_doctor_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string notes = std::string(dir) + "/notes.txt";
  std::ofstream(notes) << "my notes";
  r = {};
  r.save_baseline = notes;
  EXPECT_NE(ErrorOf(r).find("is not a stallscope baseline"), std::string::npos);
  std::ifstream kept(notes);
  std::string text((std::istreambuf_iterator<char>(kept)), {});
  EXPECT_EQ(text, "my notes");
  // --html over an existing file without --force.
  r = {};
  r.html = notes;
  EXPECT_NE(ErrorOf(r).find("--html"), std::string::npos);
  fs::remove_all(dir);

  // A saved baseline is read.
  r = {};
  r.baseline = kFixtures + "/baseline/baseline-host.json";
  Result<DoctorInputs> in = CheckDoctorInputs(Root("/"), r);
  ASSERT_TRUE(in.ok()) << in.status().message();
  EXPECT_TRUE(in->baseline.has_value());
}

TEST(DiagnoseHost, FixtureHostTriagedWithItsDataset) {
  DoctorRequest r;
  r.interval_seconds = 0.01;
  r.quick = true;
  r.data = kFixtures + "/pack";
  Result<DoctorInputs> in = CheckDoctorInputs(Root("/"), r);
  ASSERT_TRUE(in.ok()) << in.status().message();
  std::vector<std::string> shown;
  Result<HostDiagnosis> d = DiagnoseHost(Root(kFixtures + "/swap_host"), r, std::move(*in),
                                         [&](std::string_view text) { shown.emplace_back(text); });
  ASSERT_TRUE(d.ok()) << d.status().message();
  // The host's memory is low (the fixture's 12% available): the report has it.
  const Finding* low = Find(d->report.findings, "memory.available_low");
  ASSERT_NE(low, nullptr);
  bool total = false;
  for (const BaselineMetric& m : d->now.metrics) {
    if (m.name == "memory.total_bytes") total = m.value == static_cast<double>(64ull << 30);
  }
  EXPECT_TRUE(total);  // the baseline is the fixture's 64 GiB host
  // The census ran, the bench did not (--quick), and the progress said so.
  EXPECT_TRUE(d->triage.census.has_value());
  EXPECT_TRUE(HasNote(d->report.notes, "io: --quick: no storage bench"));
  EXPECT_FALSE(HasNote(d->report.notes, "io: the dataset and its storage were not checked"));
  ASSERT_GE(shown.size(), 4u);
  EXPECT_EQ(shown[0].rfind("sampling the host for", 0), 0u) << shown[0];
  EXPECT_EQ(shown[1], "");
  EXPECT_EQ(shown[2], "walking " + r.data + "...");
  // No GPU on a fixture: a note, and the code layer says why it was not checked.
  EXPECT_TRUE(HasNote(d->report.notes, "gpu: "));
  bool code_why = false;
  for (const auto& [layer, why] : d->why_not_checked) code_why |= layer == Layer::kCode;
  EXPECT_TRUE(code_why);

  DoctorRequest bare;
  bare.interval_seconds = 0.01;
  Result<HostDiagnosis> none =
      DiagnoseHost(Root(kFixtures + "/swap_host"), bare, DoctorInputs{}, [](std::string_view) {});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(HasNote(none->report.notes, "io: the dataset and its storage were not checked"));
  EXPECT_FALSE(none->triage.census.has_value());

  Result<HostDiagnosis> missing =
      DiagnoseHost(Root("/no/such/root"), bare, DoctorInputs{}, [](std::string_view) {});
  EXPECT_FALSE(missing.ok());
}

}  // namespace
}  // namespace stallscope

namespace stallscope {
namespace {

// --data on a remote mount of the probe root's mount table (a fixture's) is
// left to the child process: not looked at while the inputs are checked.
TEST(DoctorInputs, RemoteDataOfTheProbeRootIsNotTouched) {
  DoctorRequest r;
  r.data = "/mnt/typed/no-such-train";
  Result<DoctorInputs> in = CheckDoctorInputs(Root(kFixtures + "/fuse_sources"), r);
  EXPECT_TRUE(in.ok()) << in.status().message();
  // On this machine's own mount table the path is local and missing.
  Result<DoctorInputs> local = CheckDoctorInputs(Root("/"), r);
  ASSERT_FALSE(local.ok());
  EXPECT_NE(local.status().message().find("--data /mnt/typed/no-such-train"), std::string::npos);
}

}  // namespace
}  // namespace stallscope
