// The census's wire between doctor and its child (app/doctor_data.h): every
// field comes back as sent, a file name that is not UTF-8 too (its odd bytes
// as U+FFFD); a text that is not the wire is refused. The storage bench of
// a --data directory that cannot take its file is skipped, not moved up.
#include "app/doctor_data.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace stallscope {
namespace {

TEST(CensusWire, RoundTrip) {
  DatasetCensus c;
  c.path = "/mnt/data";
  c.resolved_path = "/mnt/data/";
  c.threads = 7;
  c.walk_seconds = 1.25;
  c.files = 2000;
  c.bytes = 4096000;
  c.directories = 3;
  c.symlinks = 2;
  c.other_entries = 1;
  c.empty_files = 5;
  c.histogram[1] = {2000, 4096000};
  c.max_depth = 4;
  c.deepest_path = "/mnt/data/a/b/c/d";
  c.largest_file_bytes = 9000;
  c.unreadable = 1;
  c.unreadable_examples = {"/mnt/data/x: Permission denied"};
  c.fs_type = "fuse.sshfs";
  c.statfs_name = "fuse";
  c.statfs_type = 0x65735546;
  c.mount_point = "/mnt/data";
  c.source = "me@filer:/export";
  c.remote = true;
  c.residency = {true, 1000, 2, 2048000, 1024, 0.5, "EIO"};
  c.latency = MetadataLatency{1000, 2100.5, 4000, 2500, 5000, 7000, 9000};
  c.notes = {"a note"};
  Result<DatasetCensus> back = CensusFromWire(CensusToWire(c));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(CensusToWire(*back), CensusToWire(c));
  EXPECT_EQ(back->histogram[1].files, 2000u);
  EXPECT_EQ(*back->statfs_type, 0x65735546);
  EXPECT_DOUBLE_EQ(back->latency->stat_p50_us, 2100.5);
  EXPECT_DOUBLE_EQ(back->latency->fetch_p50_us, 7000);
  EXPECT_DOUBLE_EQ(back->latency->fetch_p99_us, 9000);
  EXPECT_EQ(back->residency.first_error, "EIO");

  c.latency.reset();
  c.statfs_type.reset();
  back = CensusFromWire(CensusToWire(c));
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE(back->latency);
  EXPECT_FALSE(back->statfs_type);
}

TEST(CensusWire, FileNamesThatAreNotUtf8Travel) {
  DatasetCensus c;
  c.path = "/mnt/data";
  c.deepest_path = "/mnt/data/caf\xe9/x";  // Latin-1
  c.unreadable_examples = {"/mnt/data/\xff: Permission denied"};
  std::string wire;
  ASSERT_NO_THROW(wire = CensusToWire(c));
  Result<DatasetCensus> back = CensusFromWire(wire);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->deepest_path, "/mnt/data/caf\xef\xbf\xbd/x");
  EXPECT_EQ(back->unreadable_examples.at(0), "/mnt/data/\xef\xbf\xbd: Permission denied");
}

TEST(CensusWire, RefusesWhatIsNotTheWire) {
  EXPECT_FALSE(CensusFromWire("").ok());
  EXPECT_FALSE(CensusFromWire("[1,2]").ok());
  EXPECT_FALSE(CensusFromWire("{\"path\": 3}").ok());
}

}  // namespace
}  // namespace stallscope

namespace stallscope {
namespace {

// A --data directory that cannot take the bench's file (here: missing) has
// no bench; the directory above it, writable, is not benched in its place.
TEST(DoctorData, BenchNeverMovesAboveADirectory) {
  char dir[] = "/tmp/stallscope-doctor-data-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  DoctorRequest request;
  request.data = std::string(dir) + "/dataset";
  Triage t;
  TriageDataset(Root("/"), request, 1ull << 34, t, [](std::string_view) {});
  EXPECT_FALSE(t.bench);
  bool said = false;
  for (const std::string& note : t.notes) {
    if (note.find("storage bench skipped") != std::string::npos &&
        note.find(request.data) != std::string::npos) {
      said = true;
    }
  }
  EXPECT_TRUE(said) << ::testing::PrintToString(t.notes);
  std::filesystem::remove_all(dir);
}

// The fuzz target's seeds are wires this version reads.
TEST(CensusWire, ReadsTheFuzzSeeds) {
  for (const char* name : {"census-wire-remote.json", "census-wire-local.json"}) {
    std::ifstream in(std::string(STALLSCOPE_FIXTURES) + "/census_wire/" + name);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    Result<DatasetCensus> c = CensusFromWire(text);
    ASSERT_TRUE(c.ok()) << name << ": " << c.status().message();
    EXPECT_EQ(CensusFromWire(CensusToWire(*c))->files, c->files) << name;
  }
}

}  // namespace
}  // namespace stallscope
