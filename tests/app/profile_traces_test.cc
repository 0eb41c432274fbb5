// `run --profile`'s trace directory (app/profile_traces.h): made, emptied
// of an earlier run's rank traces only, refused when something else is in
// its place; the traces in it judged, or a note saying why there are none;
// several files broken down, two of one rank refused naming both.
#include "app/profile_traces.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace stallscope {
namespace {

namespace fs = std::filesystem;
const std::string kFixtures = STALLSCOPE_FIXTURES;

class ProfileTracesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/stallscope_profile_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  std::string dir_;
};

bool Has(const std::vector<std::string>& notes, const std::string& part) {
  for (const std::string& n : notes) {
    if (n.find(part) != std::string::npos) return true;
  }
  return false;
}

TEST_F(ProfileTracesTest, DirectoryMadeAndOnlyRankTracesRemoved) {
  const std::string traces = ProfileTraceDir(Path("r.db"));
  EXPECT_EQ(traces, Path("r.db.traces"));
  ASSERT_TRUE(MakeProfileDir(traces).ok());
  ASSERT_TRUE(fs::is_directory(traces));
  std::ofstream(traces + "/rank0.json") << "[]";
  std::ofstream(traces + "/mine.json") << "[]";
  ASSERT_TRUE(MakeProfileDir(traces).ok());
  EXPECT_FALSE(fs::exists(traces + "/rank0.json"));
  EXPECT_TRUE(fs::exists(traces + "/mine.json"));  // not the run's: kept

  std::ofstream(Path("f.db.traces")) << "a user's file";
  Status refused = MakeProfileDir(Path("f.db.traces"));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("is not a directory"), std::string::npos);
  ASSERT_EQ(symlink(traces.c_str(), Path("l.db.traces").c_str()), 0);
  EXPECT_FALSE(MakeProfileDir(Path("l.db.traces")).ok());
  EXPECT_TRUE(fs::exists(traces + "/mine.json"));
}

TEST_F(ProfileTracesTest, TracesJudgedOrANoteWhyNot) {
  TraceStepRange range{9, 14};
  FindingsWithNotes none = JudgeProfileTraces(Path("absent.traces"), range);
  EXPECT_TRUE(none.findings.empty());
  EXPECT_TRUE(Has(none.notes, "--profile 9:14: no profiler trace in")) << none.notes.size();

  const std::string traces = Path("r.db.traces");
  ASSERT_TRUE(MakeProfileDir(traces).ok());
  fs::copy_file(kFixtures + "/traces/trace-legacy-torch113.json", traces + "/rank0.json");
  FindingsWithNotes judged = JudgeProfileTraces(traces, range);
  EXPECT_TRUE(Has(judged.notes, "--profile 9:14: 1 rank trace(s) in " + traces));

  // The same rank twice is refused, naming both files.
  fs::copy_file(kFixtures + "/traces/trace-legacy-torch113.json", traces + "/rank0-again.json");
  Result<std::vector<TraceRankBreakdown>> two = BreakDownTraceFiles(
      {traces + "/rank0.json", traces + "/rank0-again.json"}, TraceOptions{}, std::nullopt);
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.status().message().find("rank 0: " + traces + "/rank0-again.json and " + traces +
                                        "/rank0.json"),
            std::string::npos)
      << two.status().message();
  Result<std::vector<TraceRankBreakdown>> other =
      BreakDownTraceFiles({traces + "/rank0.json"}, TraceOptions{}, 3);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("no trace of rank 3"), std::string::npos);
}

TEST_F(ProfileTracesTest, RunTracesReadFileByFileAndClearedForANewRun) {
  const std::string traces = ProfileTraceDir(Path("r.db"));
  ASSERT_TRUE(MakeProfileDir(traces).ok());
  fs::copy_file(kFixtures + "/traces/trace-kineto-small.json", traces + "/rank0.json");
  std::ofstream(traces + "/rank1.json") << "{\"traceEvents\": [";  // cut short
  std::vector<std::string> notes;
  std::vector<TraceRankBreakdown> read = ReadRunTraces({Path("r.db"), Path("none.db")}, notes);
  ASSERT_EQ(read.size(), 1u);  // the good file, though the other is cut
  EXPECT_TRUE(read[0].temporal.has_value());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("traces of " + Path("r.db")), std::string::npos) << notes[0];
  EXPECT_NE(notes[0].find("rank1.json"), std::string::npos) << notes[0];

  // A new run of that name without --profile: the old rank traces go, a
  // user's file stays (and with it the directory).
  std::ofstream(traces + "/notes.txt") << "mine";
  ClearProfileDir(traces);
  EXPECT_FALSE(fs::exists(traces + "/rank0.json"));
  EXPECT_FALSE(fs::exists(traces + "/rank1.json"));
  EXPECT_TRUE(fs::exists(traces + "/notes.txt"));
  fs::remove(traces + "/notes.txt");
  ClearProfileDir(traces);
  EXPECT_FALSE(fs::exists(traces));
  ClearProfileDir(traces);  // nothing there: nothing done
  notes.clear();
  EXPECT_TRUE(ReadRunTraces({Path("r.db")}, notes).empty());
  EXPECT_TRUE(notes.empty());
}

TEST(ProfileTraces, AbsolutePathAgainstTheWorkingDirectory) {
  EXPECT_EQ(AbsolutePath("/a/b"), "/a/b");
  char cwd[4096];
  ASSERT_NE(getcwd(cwd, sizeof cwd), nullptr);
  EXPECT_EQ(AbsolutePath("x.db.traces"), std::string(cwd) + "/x.db.traces");
}

}  // namespace
}  // namespace stallscope
