// Reading Flight Recorder dumps (formats/flight_recorder/flight_recorder.h): the dumps
// bench/gen_fr_dumps.py writes for each format version, as pickles of
// protocol 2 (torch's), the default protocol and 5, and as JSON; the files a
// reader must refuse; rank from file names; fields of older formats; the
// budget on values a memo repeats; and the real dumps of a 16-rank job, read
// in place (tests/flight_recorder_dumps.h).
#include "formats/flight_recorder/flight_recorder.h"

#include <gtest/gtest.h>

#include <string>

#include "flight_recorder_dumps.h"

namespace stallscope {
namespace {

TEST(FlightRecorderDump, RankFromFileName) {
  EXPECT_EQ(RankFromFileName("nccl_trace_rank_12"), 12);
  EXPECT_EQ(RankFromFileName("_dump_3"), 3);
  EXPECT_EQ(RankFromFileName("0"), 0);
  EXPECT_EQ(RankFromFileName("fault_injection.log"), std::nullopt);
  EXPECT_EQ(RankFromFileName("trace.json"), std::nullopt);
  EXPECT_EQ(RankFromFileName("x12345678901"), std::nullopt);  // not a rank
}

TEST(FlightRecorderDump, ReadsEveryGeneratedVersionAndForm) {
  ASSERT_FALSE(GeneratedFrDumps().empty()) << "bench/gen_fr_dumps.py failed";
  nlohmann::json expect = GeneratedFrExpectations();
  int read = 0;
  for (const auto& [name, want] : expect.items()) {
    if (name == "refused") continue;
    Result<FlightRecorderDumps> d = ReadFlightRecorderDumps({(GeneratedFrDumps() / name).string()});
    ASSERT_TRUE(d.ok()) << name << ": " << d.status().message();
    ASSERT_FALSE(d->dumps.empty()) << name;
    for (const FlightRecorderDump& dump : d->dumps) {
      EXPECT_EQ(dump.version, want.at("version").get<std::string>()) << name;
      EXPECT_EQ(dump.format, want.at("form").get<std::string>()) << name;
      EXPECT_EQ(dump.version_major, 2);
      EXPECT_FALSE(dump.groups.empty()) << name;
      EXPECT_EQ(dump.statuses.empty(), dump.version_minor < 3) << name;
      for (const FrEntry& e : dump.entries) {
        EXPECT_TRUE(e.profiling_name.starts_with("nccl:")) << name;
        EXPECT_FALSE(e.state.empty());
        EXPECT_EQ(e.thread_name.empty(), dump.version_minor < 8) << name;
        if (e.state != "completed") {
          EXPECT_FALSE(e.time_discovered_completed_ns) << name;
        }
      }
    }
    ++read;
  }
  EXPECT_GE(read, 15);
}

TEST(FlightRecorderDump, JsonFormMeansTheSameAsThePickle) {
  ASSERT_FALSE(GeneratedFrDumps().empty());
  Result<FlightRecorderDumps> json =
      ReadFlightRecorderDumps({(GeneratedFrDumps() / "missing_rank_json").string()});
  Result<FlightRecorderDumps> pickle = ReadFlightRecorderDumps(
      {(GeneratedFrDumps() / "missing_rank_active_default_protocol").string()});
  ASSERT_TRUE(json.ok() && pickle.ok());
  ASSERT_EQ(json->dumps.size(), pickle->dumps.size());
  for (size_t r = 0; r < json->dumps.size(); ++r) {
    const FlightRecorderDump& j = json->dumps[r];
    const FlightRecorderDump& p = pickle->dumps[r];
    EXPECT_EQ(j.rank, p.rank);
    EXPECT_EQ(j.comm_lib_version, "2.21.5");  // comm_lib_version (2.10)
    EXPECT_EQ(p.comm_lib_version, "2.21.5");  // nccl_version (2.9)
    ASSERT_EQ(j.statuses.size(), p.statuses.size());
    for (size_t i = 0; i < j.statuses.size(); ++i) {
      EXPECT_EQ(j.statuses[i].last_enqueued, p.statuses[i].last_enqueued);  // text in JSON
      EXPECT_EQ(j.statuses[i].last_completed, p.statuses[i].last_completed);
    }
    ASSERT_EQ(j.entries.size(), p.entries.size());  // none on rank 2: "entries" left out
    for (size_t i = 0; i < j.entries.size(); ++i) {
      EXPECT_EQ(j.entries[i].pg_name, p.entries[i].pg_name);
      EXPECT_EQ(j.entries[i].collective_seq_id, p.entries[i].collective_seq_id);
      EXPECT_EQ(j.entries[i].input_sizes, p.entries[i].input_sizes);
      EXPECT_EQ(j.entries[i].time_discovered_completed_ns, std::nullopt);  // 0 in JSON
    }
  }
}

TEST(FlightRecorderDump, RefusedFilesNameTheFile) {
  ASSERT_FALSE(GeneratedFrDumps().empty());
  const nlohmann::json expect = GeneratedFrExpectations();
  for (const auto& [name, text] : expect.at("refused").items()) {
    std::string dir = (GeneratedFrDumps() / name).string();
    Result<FlightRecorderDumps> d = ReadFlightRecorderDumps({dir});
    ASSERT_FALSE(d.ok()) << name;
    EXPECT_NE(d.status().message().find(dir + "/nccl_trace_rank_0: "), std::string::npos)
        << d.status().message();
    EXPECT_NE(d.status().message().find(text.get<std::string>()), std::string::npos)
        << d.status().message();
  }
}

// In a folder, a file named like a dump that is neither a pickle nor JSON
// is passed over with a note; named on the command line, it is an error.
TEST(FlightRecorderDump, FolderPassesOverFilesThatAreNoDump) {
  ASSERT_FALSE(GeneratedFrDumps().empty());
  std::filesystem::path dir = GeneratedFrDumps() / "with_a_log";
  std::filesystem::create_directories(dir);
  std::filesystem::copy(
      GeneratedFrDumps() / "missing_rank_v2.9", dir,
      std::filesystem::copy_options::recursive | std::filesystem::copy_options::overwrite_existing);
  std::ofstream(dir / "train.log.1") << "epoch 1\n";
  std::ofstream(dir / "README.md") << "dumps\n";
  Result<FlightRecorderDumps> d = ReadFlightRecorderDumps({dir.string()});
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->dumps.size(), 4u);
  std::string notes;
  for (const std::string& n : d->notes) notes += n + "\n";
  EXPECT_NE(notes.find("train.log.1: neither a pickle nor JSON"), std::string::npos) << notes;
  EXPECT_NE(notes.find("1 file(s) whose names end in no rank"), std::string::npos) << notes;
  Result<FlightRecorderDumps> named = ReadFlightRecorderDumps({(dir / "train.log.1").string()});
  ASSERT_FALSE(named.ok());
  EXPECT_NE(named.status().message().find("train.log.1: byte 0: "), std::string::npos)
      << named.status().message();
}

Result<FlightRecorderDump> FromJson(const std::string& text) {
  return ParseFlightRecorderDump(text, "dump.json", 1);
}

TEST(FlightRecorderDump, VersionsAndFieldsOfOlderWriters) {
  EXPECT_NE(FromJson(R"({"entries": []})").status().message().find("no \"version\""),
            std::string::npos);
  EXPECT_NE(FromJson(R"({"version": "2"})").status().message().find("not MAJOR.MINOR"),
            std::string::npos);
  EXPECT_NE(FromJson(R"({"version": "1.9"})").status().message().find("format version 1.9"),
            std::string::npos);
  Result<FlightRecorderDump> newer = FromJson(R"({"version": "2.14"})");
  ASSERT_TRUE(newer.ok());
  EXPECT_EQ(newer->version_minor, 14);
  // seq_id before collective_seq_id (2.2); is_p2p from the name; the state
  // from the discovered times; ranks as a list.
  Result<FlightRecorderDump> old = FromJson(R"({"version": "2.1",
      "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": [0, 1]}},
      "entries": [{"record_id": 4, "pg_id": 0, "process_group": ["0", "default_pg"],
                   "seq_id": 7, "profiling_name": "nccl:send 0->1",
                   "time_discovered_started_ns": 5, "time_discovered_completed_ns": 0}]})");
  ASSERT_TRUE(old.ok()) << old.status().message();
  ASSERT_EQ(old->entries.size(), 1u);
  EXPECT_EQ(old->entries[0].collective_seq_id, 7);
  EXPECT_TRUE(old->entries[0].is_p2p);
  EXPECT_EQ(old->entries[0].state, "started");
  EXPECT_EQ(old->groups.at(0).ranks, (std::vector<int64_t>{0, 1}));
}

TEST(FlightRecorderDump, FieldsOfTheWrongTypeNameTheEntry) {
  Result<FlightRecorderDump> d = FromJson(R"({"version": "2.9", "entries": [
      {"process_group": ["0", "x"], "profiling_name": "nccl:all_reduce", "state": "scheduled"},
      {"process_group": "0", "profiling_name": "nccl:all_reduce"}]})");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("entry 1: \"process_group\" is not (name, desc)"),
            std::string::npos)
      << d.status().message();
  Result<FlightRecorderDump> s = FromJson(R"({"version": "2.9", "entries": [
      {"process_group": ["0", "x"], "profiling_name": "nccl:all_reduce",
       "input_sizes": [[1, "x"]]}]})");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("entry 0 input_sizes is a str, not an int"),
            std::string::npos)
      << s.status().message();
  EXPECT_FALSE(FromJson(R"([1, 2])").ok());
  EXPECT_FALSE(FromJson(R"({"version": "2.9", "pg_config": {"0": {"ranks": "[0, x]"}}})").ok());
}

// 200,000 references to one entry of 100 sizes: 20 million values to read
// from 400 KB, stopped by the budget.
TEST(FlightRecorderDump, MemoRepeatsAreBounded) {
  std::string b("\x80\x02}(", 4);
  auto text = [&](const std::string& t) {
    b += 'X';
    for (int i = 0; i < 4; ++i) b += static_cast<char>((t.size() >> (8 * i)) & 0xff);
    b += t;
  };
  text("version");
  text("2.9");
  text("entries");
  b += "](}(";
  text("process_group");
  text("0");
  text("default_pg");
  b += '\x86';
  text("profiling_name");
  text("nccl:all_reduce");
  text("input_sizes");
  b += "]]";
  b += '(';
  for (int i = 0; i < 100; ++i) b += "K\x01";
  b += "ea";  // APPENDS into the inner list, APPEND it to the outer one
  b += "uq";
  b += '\x01';
  for (int i = 1; i < 200000; ++i) b += "h\x01";
  b += "eu.";
  Result<FlightRecorderDump> d = ParseFlightRecorderDump(b, "memo.pkl", 0);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("values to read"), std::string::npos) << d.status().message();
}

TEST(FlightRecorderDump, ReadsTheRealDumpsInPlace) {
  STALLSCOPE_REQUIRE_SHARED_FR(SharedFlightRecorder());
  for (const char* incident : kFrIncidents) {
    Result<FlightRecorderDumps> d =
        ReadFlightRecorderDumps({(SharedFlightRecorder() / incident).string()});
    ASSERT_TRUE(d.ok()) << incident << ": " << d.status().message();
    ASSERT_EQ(d->dumps.size(), 16u) << incident;
    for (size_t r = 0; r < 16; ++r) {
      const FlightRecorderDump& dump = d->dumps[r];
      EXPECT_EQ(dump.rank, static_cast<int64_t>(r));
      EXPECT_EQ(dump.version, "2.9");
      EXPECT_EQ(dump.comm_lib_version, "2.27.3");
      EXPECT_GE(dump.groups.size(), 12u) << incident << " rank " << r;
      for (const FrEntry& e : dump.entries) {
        EXPECT_EQ(e.state, "scheduled");  // only what was in flight
        EXPECT_TRUE(e.frames.empty());
      }
    }
  }
  Result<FlightRecorderDumps> gil =
      ReadFlightRecorderDumps({(SharedFlightRecorder() / "lock_gil_1st").string()});
  ASSERT_TRUE(gil.ok());
  EXPECT_TRUE(gil->dumps[9].entries.empty());
  EXPECT_TRUE(gil->dumps[14].entries.empty());
  EXPECT_EQ(gil->dumps[8].entries.size(), 9u);
}

}  // namespace
}  // namespace stallscope
