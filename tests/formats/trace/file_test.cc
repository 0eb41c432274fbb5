// The trace reader on traces written here in Kineto's and the legacy
// autograd profiler's forms: what is kept and what only counted, the file's
// rank, world and GPU, gzip (one member and several), and bad input: not
// JSON, cut JSON, a cut or corrupt .gz, a JSON without traceEvents, each an
// error naming the source and the byte offset, read whole and streamed; an event without a ts is
// counted and skipped. The real traces of GPU jobs are read by
// tests/e2e/trace_cli.py.
#include "formats/trace/file.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <bit>
#include <charconv>
#include <cmath>
#include <string>

#include "gzip_text.h"

namespace stallscope {
namespace {

// Whole in memory (the default, where the text fits), whole and cut in three
// parts read by threads of their own (where the text has event starts to cut
// at: every test's text has a line break between events), and streamed.
const TraceReading kStreamed = {.rows = TraceRows::kAnalysed,
                                .whole_text_limit_bytes = 0,
                                .parse_threads = std::nullopt,
                                .min_part_bytes = 0};
const TraceReading kBothWays[] = {{.rows = TraceRows::kAnalysed,
                                   .whole_text_limit_bytes = std::nullopt,
                                   .parse_threads = 1,
                                   .min_part_bytes = 0},
                                  {.rows = TraceRows::kAnalysed,
                                   .whole_text_limit_bytes = std::nullopt,
                                   .parse_threads = 3,
                                   .min_part_bytes = 0},
                                  kStreamed};

const char kKineto[] = R"json({
  "schemaVersion": 1,
  "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 85}, 
                       {"id": 1, "name": "NVIDIA H100 80GB HBM3"}],
  "distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 8},
  "traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "pid": 1, "tid": 1,
     "ts": 100, "dur": 900, "args": {"External id": 1}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 110, "dur": 20,
     "args": {"Input Dims": [[2, 3], [3, 4]], "nested": {"stream": 99}}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
     "ts": 120, "dur": 5.5, "args": {"correlation": 42, "cbid": 211}},
    {"ph": "X", "cat": "kernel", "name": "volta_sgemm", "pid": 1, "tid": 7, "ts": 130,
     "dur": 50, "args": {"stream": 7, "correlation": 42, "device": 1}},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 1,
     "tid": 7, "ts": 200, "dur": 10, "args": {"stream": 7, "correlation": 43, "device": 1,
     "memory bandwidth (GB/s)": 3.25}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::item", "pid": 1, "tid": 1, "ts": 300, "dur": 40},
    {"ph": "X", "cat": "cpu_op", "name": "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
     "pid": 1, "tid": 1, "ts": 400, "dur": 40},
    {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "ts": 0, "dur": 10000},
    {"ph": "X", "cat": "cpu_op", "name": "no time", "dur": 3, "args": {"stream": 7}},
    {"ph": "i", "cat": "cpu_op", "name": "an instant", "ts": 5, "s": "t"},
    {"ph": "f", "id": 42, "pid": 1, "tid": 7, "ts": 130, "cat": "ac2g", "name": "ac2g"},
    {"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": "python"}}
  ],
  "traceName": "rank3.json"
})json";

TEST(TraceFile, KeepsTheRowsTheAnalysesNeedAndCountsTheRest) {
  Result<TraceFile> t = ParseTraceBytes(kKineto, "rank3.json");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_FALSE(t->legacy);
  EXPECT_EQ(t->rank, 3);
  EXPECT_EQ(t->world_size, 8);
  EXPECT_EQ(t->backend, "nccl");
  ASSERT_EQ(t->devices.size(), 2u);
  // The GPU the kernels ran on (device 1), not the first listed.
  EXPECT_EQ(TraceGpuName(*t), "NVIDIA H100 80GB HBM3");
  // Complete events with a cat other than Trace: 8 (the one without ts skipped).
  EXPECT_EQ(t->complete_events, 8u);
  EXPECT_EQ(t->skipped_events, 1u);
  // Kept: the step, the launch, the kernel, the copy, item, the loader; not aten::mm.
  ASSERT_EQ(t->events.size(), 6u);
  EXPECT_EQ(t->names[t->events[0].name], "ProfilerStep#7");
  EXPECT_EQ(t->events[1].correlation, 42);
  EXPECT_EQ(t->events[1].stream, -1);
  EXPECT_EQ(t->events[1].cat, TraceCategory::kRuntime);
  EXPECT_FALSE(t->fractional_times);  // a dur of 5.5 only: HTA rounds when a ts is fractional
  EXPECT_EQ(t->events[2].stream, 7);
  EXPECT_EQ(t->events[2].cat, TraceCategory::kKernel);
  EXPECT_EQ(t->events[2].device, 1);
  EXPECT_FLOAT_EQ(t->events[3].bandwidth_gbps, 3.25f);
  EXPECT_EQ(t->events[3].cat, TraceCategory::kMemcpy);
  EXPECT_EQ(t->events[4].role, TraceCpuRole::kSync);
  EXPECT_EQ(t->events[5].role, TraceCpuRole::kDataLoader);
  EXPECT_EQ(t->bytes, sizeof(kKineto) - 1);
  // aten::mm is kept aside for the critical path's call stacks, with its place
  // in the file (HTA's index) and its thread
  ASSERT_EQ(t->cpu_rows.size(), 1u);
  EXPECT_EQ(t->names[t->cpu_rows[0].name], "aten::mm");
  EXPECT_EQ(t->cpu_rows[0].index, 1u);
  EXPECT_EQ(t->events[1].index, 2u);
  EXPECT_EQ(t->events[5].index, 6u);
  ASSERT_LT(t->events[2].thread, t->threads.size());
  EXPECT_EQ(t->threads[t->events[2].thread].tid, "7");
  EXPECT_EQ(t->threads[t->events[1].thread].pid, "1");
  EXPECT_EQ(t->threads[t->events[1].thread].tid, "1");
  EXPECT_EQ(t->cpu_rows[0].thread, t->events[0].thread);
}

TEST(TraceFile, ReadsWhatACudaSyncWaitsOn) {
  Result<TraceFile> t = ParseTraceBytes(R"json({"traceEvents": [
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaEventRecord", "pid": 9, "tid": "main",
     "ts": 1, "dur": 2, "args": {"correlation": 5}},
    {"ph": "X", "cat": "cuda_sync", "name": "Event Sync", "pid": 0, "tid": -1, "ts": 4,
     "dur": 3, "args": {"correlation": 6, "stream": -1, "wait_on_stream": 7,
     "wait_on_cuda_event_record_corr_id": 5}}]})json",
                                        "sync.json");
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_EQ(t->sync_waits.size(), 1u);
  EXPECT_EQ(t->sync_waits[0].index, 1u);
  EXPECT_EQ(t->sync_waits[0].stream, 7);
  EXPECT_EQ(t->sync_waits[0].record_correlation, 5);
  EXPECT_EQ(t->threads[t->events[0].thread].tid, "main");  // text as written
}

TEST(TraceFile, ReadsTheLegacyListAndGzipInOneOrManyMembers) {
  // As Debian's torch 1.13 (no Kineto) writes it: no cat, pid "CPU functions".
  std::string legacy = R"([{"name": "ProfilerStep#1", "ph": "X", "ts": 307, "dur": 493, "tid": 1,)"
                       R"( "pid": "CPU functions", "args": {}},)"
                       R"( {"name": "aten::item", "ph": "X", "ts": 352, "dur": 1, "tid": 1,)"
                       R"( "pid": "CPU functions", "args": {}},)"
                       R"( {"name": "aten::add", "ph": "X", "ts": 360, "dur": 2, "tid": 1,)"
                       R"( "pid": "CPU functions", "args": {}}])";
  Result<TraceFile> t = ParseTraceBytes(legacy, "legacy.json");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_TRUE(t->legacy);
  EXPECT_FALSE(t->rank.has_value());
  EXPECT_EQ(t->complete_events, 3u);
  ASSERT_EQ(t->events.size(), 2u);
  EXPECT_EQ(t->events[0].cat, TraceCategory::kCpuOp);

  Result<TraceFile> gz = ParseTraceBytes(Gzip(kKineto), "rank3.json.gz");
  ASSERT_TRUE(gz.ok()) << gz.status().message();
  EXPECT_EQ(gz->events.size(), 6u);
  // `cat a.gz b.gz`: two members, one text.
  std::string text = kKineto;
  size_t half = text.find("\"traceEvents\"");
  Result<TraceFile> two =
      ParseTraceBytes(Gzip(text.substr(0, half)) + Gzip(text.substr(half)), "two.json.gz");
  ASSERT_TRUE(two.ok()) << two.status().message();
  EXPECT_EQ(two->events.size(), 6u);
  EXPECT_EQ(two->bytes, text.size());
}

TEST(TraceFile, BadInputIsAnErrorNamingTheSourceAndTheByte) {
  struct Case {
    std::string bytes;
    std::string expect;
  };
  std::string text = kKineto;
  std::string gz = Gzip(text);
  std::string corrupt = gz;
  corrupt[gz.size() / 2] ^= 0x55;
  corrupt[gz.size() / 2 + 1] ^= 0x55;
  const Case cases[] = {
      {"", "empty: no JSON at all at byte 0"},
      {"hello", "not a profiler trace: Invalid value. at byte 0"},
      {text.substr(0, 400), "at byte 400"},
      {gz.substr(0, gz.size() / 2), "the gzip stream ends early, at byte"},
      {corrupt, "corrupt gzip data at byte"},
      {R"({"schemaVersion": 1, "events": []})", "no \"traceEvents\" list"},
      {"42", "neither an object with \"traceEvents\" nor a list of events"},
      {text + " {}", "more after the JSON document, at byte " + std::to_string(text.size() + 1)},
      {std::string(100000, '['), "nested deeper than 1000 levels at byte 1001"},
  };
  for (const Case& c : cases) {
    for (const TraceReading& how : kBothWays) {
      Result<TraceFile> t = ParseTraceBytes(c.bytes, "bad.json", how);
      ASSERT_FALSE(t.ok()) << c.expect;
      EXPECT_NE(t.status().message().find("bad.json"), std::string::npos) << t.status().message();
      EXPECT_NE(t.status().message().find(c.expect), std::string::npos)
          << "wanted \"" << c.expect << "\" in: " << t.status().message();
    }
  }
  // Deep, but within Python's recursion limit: read.
  std::string deep = R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1,)"
                     R"( "dur": 2, "args": {"x": )" +
                     std::string(990, '[') + std::string(990, ']') + "}}]}";
  for (const TraceReading& how : kBothWays) {
    Result<TraceFile> t = ParseTraceBytes(deep, "deep.json", how);
    ASSERT_TRUE(t.ok()) << t.status().message();
    EXPECT_EQ(t->complete_events, 1u);
  }
  // A cut .gz names the uncompressed offset only when the JSON itself fails.
  for (const TraceReading& how : kBothWays) {
    Result<TraceFile> cut = ParseTraceBytes(Gzip(text.substr(0, 400)), "cut.json.gz", how);
    ASSERT_FALSE(cut.ok());
    EXPECT_NE(cut.status().message().find("at byte 400 of the uncompressed JSON"),
              std::string::npos)
        << cut.status().message();
  }
}

// Streamed (the text over the limit), a .gz is inflated on a thread of its
// own, blocks of 1 MiB ahead of the parser: a trace of many blocks reads
// whole, every event across the block edges, as it does held whole; a bad document early in it ends
// the read with the error (the inflating thread is stopped, not waited out to the end of the file);
// a cut late in it is still the gzip error.
TEST(TraceFile, AGzipOfManyBlocksReadsWholeAndStopsAtAnEarlyError) {
  std::string events;
  constexpr int kEvents = 70000;  // about 9 MiB of JSON: nine blocks and more
  for (int i = 0; i < kEvents; ++i) {
    events += R"({"ph": "X", "cat": "kernel", "name": "k)" + std::to_string(i % 7) +
              R"(", "pid": 0, "tid": 7, "ts": )" + std::to_string(1000 + i * 10) +
              R"(, "dur": 5, "args": {"stream": 7, "correlation": )" + std::to_string(i) + "}},\n";
  }
  std::string text = R"({"traceEvents": [)" + events + R"({"ph": "i", "name": "end"}]})";
  ASSERT_GT(text.size(), 8u << 20);
  Result<TraceFile> whole = ParseTraceBytes(Gzip(text), "big.json.gz", kStreamed);
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  EXPECT_EQ(whole->events.size(), static_cast<size_t>(kEvents));
  EXPECT_EQ(whole->bytes, text.size());
  EXPECT_EQ(whole->names.size(), 7u);
  Result<TraceFile> held = ParseTraceBytes(Gzip(text), "big.json.gz");
  ASSERT_TRUE(held.ok()) << held.status().message();
  EXPECT_TRUE(held->read_whole);
  EXPECT_FALSE(whole->read_whole);
  EXPECT_EQ(held->events.size(), whole->events.size());
  EXPECT_EQ(held->bytes, whole->bytes);

  std::string early = "[}" + text;
  Result<TraceFile> bad = ParseTraceBytes(Gzip(early), "early.json.gz", kStreamed);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("at byte 1 of the uncompressed JSON"), std::string::npos)
      << bad.status().message();

  std::string gz = Gzip(text);
  Result<TraceFile> cut = ParseTraceBytes(gz.substr(0, gz.size() - 100), "cut.json.gz", kStreamed);
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.status().message().find("the gzip stream ends early"), std::string::npos)
      << cut.status().message();
}

// Times read as Python's float() reads them (from_chars), to the bit, read
// whole or streamed.
TEST(TraceFile, TimesReadExactlyAsFromCharsReadsThem) {
  const std::string times[] = {"0",
                               "-0",
                               "7",
                               "1681234567890.123",
                               "1681234567890.1234",
                               "9007199254740992",
                               "9007199254740993",
                               "0.1",
                               "0.30000000000000004",
                               "123456789012345678901234",
                               "1.5e3",
                               "-2.25E-2",
                               "0.0000000000000000000001234",
                               "99999999999999999.5"};
  std::string events;
  for (const std::string& ts : times) {
    events += std::string(events.empty() ? "" : ",") +
              R"({"ph": "X", "cat": "kernel", "name": "k", "ts": )" + ts +
              R"(, "dur": 1, "args": {"stream": 7, "correlation": 1}})";
  }
  for (const TraceReading& how : kBothWays) {
    Result<TraceFile> t = ParseTraceBytes(R"({"traceEvents": [)" + events + "]}", "t.json", how);
    ASSERT_TRUE(t.ok()) << t.status().message();
    size_t kept = 0;
    for (const std::string& ts : times) {
      double expect = 0;
      std::from_chars(ts.data(), ts.data() + ts.size(), expect);
      if (!(std::fabs(expect) < 1e17)) continue;  // no time at all: skipped
      ASSERT_LT(kept, t->events.size());
      EXPECT_EQ(std::bit_cast<uint64_t>(t->events[kept].ts), std::bit_cast<uint64_t>(expect)) << ts;
      ++kept;
    }
    EXPECT_EQ(kept, t->events.size());
  }
}

TEST(TraceFile, StepNumbersAndRoles) {
  EXPECT_EQ(ProfilerStepNumber("ProfilerStep#12"), 12);
  EXPECT_EQ(ProfilerStepNumber("ProfilerStep # 3 "), 3);
  EXPECT_EQ(ProfilerStepNumber("ProfilerStep#"), std::nullopt);
  EXPECT_EQ(ProfilerStepNumber("ProfilerStep#1a"), std::nullopt);
  EXPECT_EQ(ProfilerStepNumber("MyStep#1"), std::nullopt);
  EXPECT_EQ(TraceCpuRoleOf("cudaStreamSynchronize"), TraceCpuRole::kSync);
  EXPECT_EQ(TraceCpuRoleOf("cudaMemcpyAsync"), TraceCpuRole::kNone);
  EXPECT_EQ(TraceCpuRoleOf("cudaMemcpy"), TraceCpuRole::kSync);
  EXPECT_EQ(TraceCpuRoleOf("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"),
            TraceCpuRole::kDataLoader);
}

}  // namespace
}  // namespace stallscope
