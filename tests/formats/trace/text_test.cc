// The two ways a trace's text is read (formats/trace/text.h): whole (libdeflate,
// parsed in place) and streamed (zlib, blocks). Both give the same trace on
// every one of HTA's test traces (../shared/traces/hta: missing, the test
// skips outside CI and fails with CI=true), read from the real files. The
// whole path steps aside for the streamed one on several gzip members, a
// wrong ISIZE, a text over the limit, and a cut or corrupt .gz, which then
// give the streamed path's error (the file and the byte offset). The limit
// is shared by the texts held at once.
#include "formats/trace/text.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "formats/trace/file.h"
#include "formats/trace/parts.h"
#include "gzip_text.h"
#include "hta_traces.h"

namespace stallscope {
namespace {

// A trace of `n` kernels and their launches, some names escaped.
std::string TraceText(int n) {
  std::string events;
  for (int i = 0; i < n; ++i) {
    events += R"({"ph": "X", "cat": "kernel", "name": "k\u00e9\"rnel)" + std::to_string(i % 5) +
              R"(", "pid": 0, "tid": 7, "ts": )" + std::to_string(1000 + i * 10) +
              R"(.5, "dur": 5, "args": {"stream": 7, "correlation": )" + std::to_string(i) +
              "}},\n";
    events += R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 0,)"
              R"( "tid": "main", "ts": )" +
              std::to_string(990 + i * 10) + R"(, "dur": 2, "args": {"correlation": )" +
              std::to_string(i) + "}},\n";
  }
  return R"({"distributedInfo": {"rank": 1}, "traceEvents": [)" + events +
         R"({"ph": "i", "name": "end"}]})";
}

class TempFile {
 public:
  explicit TempFile(const std::string& bytes) {
    path_ = std::filesystem::temp_directory_path() /
            ("stallscope_trace_text_" + std::to_string(::getpid()) + "_" +
             std::to_string(counter_++) + ".json.gz");
    std::ofstream(path_, std::ios::binary) << bytes;
  }
  ~TempFile() { std::filesystem::remove(path_); }
  std::string path() const { return path_.string(); }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

TraceReading Whole(TraceRows rows = TraceRows::kAnalysed) {
  return {.rows = rows,
          .whole_text_limit_bytes = std::nullopt,
          .parse_threads = std::nullopt,
          .min_part_bytes = 0};
}
TraceReading Streamed(TraceRows rows = TraceRows::kAnalysed) {
  return {.rows = rows,
          .whole_text_limit_bytes = 0,
          .parse_threads = std::nullopt,
          .min_part_bytes = 0};
}

bool SameEvents(const std::vector<TraceEvent>& a, const std::vector<TraceEvent>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const TraceEvent& x = a[i];
    const TraceEvent& y = b[i];
    if (x.ts != y.ts || x.dur != y.dur || x.correlation != y.correlation || x.stream != y.stream ||
        x.name != y.name || x.bandwidth_gbps != y.bandwidth_gbps || x.cat != y.cat ||
        x.role != y.role || x.device != y.device || x.index != y.index || x.thread != y.thread)
      return false;
  }
  return true;
}

void ExpectSameTrace(const TraceFile& a, const TraceFile& b, const std::string& what) {
  EXPECT_EQ(a.legacy, b.legacy) << what;
  EXPECT_EQ(a.rank, b.rank) << what;
  EXPECT_EQ(a.world_size, b.world_size) << what;
  EXPECT_EQ(a.backend, b.backend) << what;
  EXPECT_EQ(a.devices, b.devices) << what;
  EXPECT_EQ(a.names, b.names) << what;
  EXPECT_TRUE(SameEvents(a.events, b.events)) << what;
  EXPECT_TRUE(SameEvents(a.cpu_rows, b.cpu_rows)) << what;
  ASSERT_EQ(a.threads.size(), b.threads.size()) << what;
  for (size_t i = 0; i < a.threads.size(); ++i) {
    EXPECT_EQ(a.threads[i].pid, b.threads[i].pid) << what;
    EXPECT_EQ(a.threads[i].tid, b.threads[i].tid) << what;
  }
  ASSERT_EQ(a.sync_waits.size(), b.sync_waits.size()) << what;
  for (size_t i = 0; i < a.sync_waits.size(); ++i) {
    EXPECT_EQ(a.sync_waits[i].index, b.sync_waits[i].index) << what;
    EXPECT_EQ(a.sync_waits[i].stream, b.sync_waits[i].stream) << what;
    EXPECT_EQ(a.sync_waits[i].record_correlation, b.sync_waits[i].record_correlation) << what;
  }
  EXPECT_EQ(a.fractional_times, b.fractional_times) << what;
  EXPECT_EQ(a.complete_events, b.complete_events) << what;
  EXPECT_EQ(a.skipped_events, b.skipped_events) << what;
  EXPECT_EQ(a.bytes, b.bytes) << what;
}

TEST(TraceText, WholeAndStreamedGiveTheSameTraceOnEveryHtaTrace) {
  const std::filesystem::path root = SharedTraces();
  STALLSCOPE_REQUIRE_SHARED_TRACES(root);
  int files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    const std::string path = entry.path().string();
    if (!entry.is_regular_file() || !(path.ends_with(".gz") || path.ends_with(".json"))) continue;
    for (TraceRows rows : {TraceRows::kAnalysed, TraceRows::kEvery}) {
      Result<TraceFile> whole = ReadTraceFile(path, Whole(rows));
      Result<TraceFile> streamed = ReadTraceFile(path, Streamed(rows));
      ASSERT_TRUE(whole.ok()) << whole.status().message();
      ASSERT_TRUE(streamed.ok()) << streamed.status().message();
      EXPECT_TRUE(whole->read_whole) << path;
      EXPECT_FALSE(streamed->read_whole) << path;
      EXPECT_GT(whole->events.size(), 0u) << path;
      ExpectSameTrace(*whole, *streamed, path);
      // Cut in parts read by threads of their own: the same trace.
      for (size_t threads : {2, 3, 7}) {
        TraceReading how = Whole(rows);
        how.parse_threads = threads;
        Result<TraceFile> parts = ReadTraceFile(path, how);
        ASSERT_TRUE(parts.ok()) << parts.status().message();
        ExpectSameTrace(*parts, *streamed, path + " in " + std::to_string(threads) + " parts");
        if (whole->complete_events > 100) {
          EXPECT_EQ(parts->parts, threads) << path;
        }
      }
    }
    ++files;
  }
  EXPECT_GE(files, 15);
}

TEST(TraceText, AGeneratedTraceReadsTheSameBothWaysFromFileAndMemory) {
  const std::string text = TraceText(3000);
  const std::string gz = Gzip(text);
  TempFile file(gz);
  Result<TraceFile> whole = ReadTraceFile(file.path(), Whole());
  Result<TraceFile> streamed = ReadTraceFile(file.path(), Streamed());
  Result<TraceFile> memory = ParseTraceBytes(gz, "memory.json.gz", Whole());
  Result<TraceFile> plain = ParseTraceBytes(text, "plain.json", Whole());
  for (const Result<TraceFile>* t : {&whole, &streamed, &memory, &plain}) {
    ASSERT_TRUE(t->ok()) << t->status().message();
  }
  EXPECT_TRUE(whole->read_whole);
  EXPECT_TRUE(memory->read_whole);
  EXPECT_TRUE(plain->read_whole);
  EXPECT_EQ(whole->events.size(), 6000u);
  EXPECT_EQ(whole->names[0], "k\xc3\xa9\"rnel0");  // unescaped in place
  ExpectSameTrace(*whole, *streamed, "file");
  ExpectSameTrace(*memory, *streamed, "memory");
  ExpectSameTrace(*plain, *streamed, "plain");
}

// A text whose cuts fall in lists of objects keyed "ph" nested in args as
// well as at events, with strings that read like an event start and
// deviceProperties before and after traceEvents; one line (json.dump's
// form) or an event a line.
std::string PartsText(bool lines) {
  std::string t =
      "{\"schemaVersion\": 1, \"deviceProperties\": [{\"id\": 0, \"name\": \"A\"}, "
      "{\"id\": 1, \"name\": \"B\"}],\n \"traceEvents\": [";
  for (int i = 0; i < 600; ++i) {
    if (i > 0) t += lines ? ",\n  " : ", ";
    const std::string ts = std::to_string(1000 + i * 10) + (i % 7 == 0 ? ".5" : "");
    const std::string at = "\"pid\": " + std::to_string(1 + i % 2) + ", \"tid\": \"t" +
                           std::to_string(i % 4) + "\", \"ts\": " + ts + ", \"dur\": 4";
    switch (i % 5) {
      case 0:
        t += "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::op" + std::to_string(i % 9) +
             "\", " + at +
             ", \"args\": {\"l\": [{\"a\": 1}, {\"ph\": [{\"c\": 2},\n {\"ph\": 3}]}], " +
             "\"s\": \"}, {\\\"ph\\\": \\\"X\\\"\"}}";
        break;
      case 1:
        t += "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\\\"}, {\\\"n\\u00e9" +
             std::to_string(i % 3) + "\", " + at +
             ", \"args\": {\"stream\": 7, \"correlation\": " + std::to_string(i) +
             ", \"device\": 1}}";
        break;
      case 2:
        t += "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", " + at +
             ", \"args\": {\"correlation\": " + std::to_string(i + 1) + "}}";
        break;
      case 3:
        t += "{\"ph\": \"X\", \"cat\": \"cuda_sync\", \"name\": \"Stream Wait Event\", " + at +
             ", \"args\": {\"stream\": 7, \"wait_on_stream\": 8, "
             "\"wait_on_cuda_event_record_corr_id\": " +
             std::to_string(i - 1) + "}}";
        break;
      default:
        t += i % 2 ? "{\"ph\": \"i\", \"cat\": \"cpu_op\", \"name\": \"instant\", \"ts\": 5}"
                   : "{\"ph\": \"X\", \"cat\": \"Trace\", \"name\": \"PyTorch Profiler\", " + at +
                         "}";
    }
  }
  t += "],\n \"deviceProperties\": [{\"id\": 2, \"name\": \"C\"}, {\"id\": 3, \"name\": \"D\"}], "
       "\"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 2, \"world_size\": 4}, "
       "\"traceName\": \"x\"}\n";
  return t;
}

// Where a text is cut: a '{' after "}," before a key (outside every string),
// "ph" first; never in a string, never before a quote that closes one.
TEST(TraceText, CutsFallAtEventStartsOnly) {
  using trace_reading::EventStartAfter;
  const std::string kineto =
      "{\"traceEvents\": [\n  {\n    \"ph\": \"X\", \"a\": 1\n  },\n  {\n"
      "    \"ph\": \"X\"\n  }\n]}";
  EXPECT_EQ(EventStartAfter(kineto, 1), kineto.find("{\n    \"ph\": \"X\"\n  }"));
  const std::string dumped = R"({"traceEvents": [{"ph": "X", "l": [{"a": 1}, {"b": 2}]}, )"
                             R"({"ph": "i"}]})";
  // The nested {"b"} is a cut too, but "ph" is taken before it.
  EXPECT_EQ(EventStartAfter(dumped, 2), dumped.find("{\"ph\": \"i\"}"));
  const std::string nested_only = R"({"x": [{"a": 1}, {"b": 2}]})";
  EXPECT_EQ(EventStartAfter(nested_only, 2), nested_only.find("{\"b\""));
  for (const std::string& none :
       {std::string(R"({"n": "}, {\"ph\": 1"})"),           // escaped quotes: in a string
        std::string(R"({"n": "x}, {", "ph": 1})"),          // the quote closes a string
        std::string(R"({"n": "x", "l": [1, {"ph": 2}]})"),  // after "1,", not "},"
        std::string(R"({"l": [{}, {"p h": 1}]})"),          // a key that is no word
        std::string("{}")}) {
    EXPECT_EQ(EventStartAfter(none, 0), std::string::npos) << none;
  }
}

// Read by 2 to 40 threads: one thread's trace, or one thread's error for a
// broken text (cut, a bracket wrong, a raw line break in a string, more after
// the document, a trailing comma), wherever the cuts fall.
TEST(TraceText, ReadInPartsGivesOneThreadsTraceOrError) {
  auto read = [](const std::string& text, size_t threads) {
    TraceReading how = Whole();
    how.parse_threads = threads;
    return ParseTraceBytes(text, "parts.json", how);
  };
  for (bool lines : {false, true}) {
    const std::string text = PartsText(lines);
    Result<TraceFile> one = read(text, 1);
    ASSERT_TRUE(one.ok()) << one.status().message();
    EXPECT_EQ(one->parts, 1u);
    ASSERT_EQ(one->devices.size(), 4u);
    EXPECT_EQ(one->rank, 2);
    EXPECT_GT(one->events.size(), 300u);
    EXPECT_FALSE(one->sync_waits.empty());
    // Most reads are cut; some cuts fall in a nested list and are read through.
    int cut = 0, read_through = 0;
    for (size_t threads = 2; threads <= 40; ++threads) {
      Result<TraceFile> parts = read(text, threads);
      ASSERT_TRUE(parts.ok()) << parts.status().message();
      cut += parts->parts > 1;
      read_through += parts->parts < threads;
      ExpectSameTrace(*one, *parts, std::to_string(threads) + " threads");
    }
    EXPECT_GE(cut, 30) << lines;
    EXPECT_GE(read_through, 3) << lines;
    const size_t tail = text.find("],\n \"deviceProperties\"");
    std::vector<std::string> broken = {
        text.substr(0, text.size() / 3),
        text.substr(0, text.size() * 3 / 4),
        text.substr(0, tail + 20),
        text.substr(0, text.size() * 2 / 3) + "]" + text.substr(text.size() * 2 / 3 + 1),
        text.substr(0, text.size() - 3) + ", }\n",
        text + "{}",
    };
    std::string line_break = text;
    line_break.replace(line_break.rfind("cudaLaunchKernel"), 4, "cu\nd");
    broken.push_back(line_break);
    std::string close = text;
    close.replace(close.rfind("{\"ph\""), 1, "]");
    broken.push_back(close);
    // Strings that run on into what reads as an event start ("ph" its
    // key), in every cpu_op of the second half: cuts fall on them.
    std::string spans = text;
    for (size_t at = spans.find("\"aten::op", spans.size() / 2); at != std::string::npos;
         at = spans.find("\"aten::op", at + 1)) {
      spans.replace(at, 11, "\"a}, {\"ph\"");
    }
    broken.push_back(spans);
    // A legacy list, then what only an object may hold.
    const size_t events = text.find('[', text.find("traceEvents"));
    const std::string legacy = text.substr(events, tail + 1 - events);
    broken.push_back(legacy + "}");
    broken.push_back(legacy + ", \"x\": 1}");
    // A legacy list is read by one thread; a backend of "" after one named
    // is the last one read.
    std::string named = text;
    named.replace(named.find("\"backend\": \"nccl\""), 17, "\"backend\": \"\"");
    named.replace(0, 1, "{\"distributedInfo\": {\"backend\": \"gloo\"},");
    for (const std::string& good : {legacy, named}) {
      Result<TraceFile> want = read(good, 1);
      ASSERT_TRUE(want.ok()) << want.status().message();
      for (size_t threads : {2, 5}) {
        Result<TraceFile> got = read(good, threads);
        ASSERT_TRUE(got.ok()) << got.status().message();
        ExpectSameTrace(*want, *got, "legacy or backend, " + std::to_string(threads));
        if (good == legacy) {
          EXPECT_EQ(got->parts, 1u);
        } else {
          EXPECT_GT(got->parts, 1u);
        }
      }
    }
    EXPECT_EQ(read(named, 5)->backend, "");
    for (const std::string& b : broken) {
      Result<TraceFile> want = read(b, 1);
      ASSERT_FALSE(want.ok()) << b.size();
      for (size_t threads : {2, 3, 5, 9, 17}) {
        Result<TraceFile> got = read(b, threads);
        ASSERT_FALSE(got.ok()) << threads;
        EXPECT_EQ(got.status().message(), want.status().message()) << threads;
      }
    }
  }
}

// A text of many huge pages (mapped on its own, aligned) arrives byte for
// byte, its pad zero; also one just under a huge page's multiple.
TEST(TraceText, ALargeTextInflatesWholeByteForByte) {
  for (size_t size : {size_t{3} << 20, (size_t{24} << 20) - 1, (size_t{40} << 20) + 12345}) {
    std::string text(size, '\0');
    uint64_t x = 88172645463325252ull;  // xorshift: no long runs deflate folds away
    for (size_t i = 0; i < size; ++i) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      text[i] = static_cast<char>('a' + x % 26);
    }
    std::optional<WholeText> whole = WholeTextOf(Gzip(text), uint64_t{1} << 30);
    ASSERT_TRUE(whole) << size;
    ASSERT_EQ(whole->size(), size);
    EXPECT_EQ(std::string_view(whole->data(), size), text) << size;
    EXPECT_EQ(whole->data()[size], '\0') << size;
  }
}

// Several members, a text over the limit: streamed, the same trace.
TEST(TraceText, SeveralMembersOrATextOverTheLimitAreStreamed) {
  const std::string text = TraceText(500);
  const size_t half = text.size() / 2;
  const std::string two = Gzip(text.substr(0, half)) + Gzip(text.substr(half));
  TempFile members(two);
  Result<TraceFile> one = ReadTraceFile(TempFile(Gzip(text)).path(), Whole());
  ASSERT_TRUE(one.ok()) << one.status().message();

  Result<TraceFile> split = ReadTraceFile(members.path(), Whole());
  ASSERT_TRUE(split.ok()) << split.status().message();
  EXPECT_FALSE(split->read_whole);
  ExpectSameTrace(*split, *one, "two members");

  TempFile big(Gzip(text));
  TraceReading small = Whole();
  small.whole_text_limit_bytes = text.size() / 2;  // the .gz fits, its text does not
  Result<TraceFile> over = ReadTraceFile(big.path(), small);
  ASSERT_TRUE(over.ok()) << over.status().message();
  EXPECT_FALSE(over->read_whole);
  ExpectSameTrace(*over, *one, "over the limit");
  Result<TraceFile> over_memory = ParseTraceBytes(text, "plain.json", small);
  ASSERT_TRUE(over_memory.ok()) << over_memory.status().message();
  EXPECT_FALSE(over_memory->read_whole);
}

// A wrong ISIZE (bigger or smaller), a cut or a corrupt .gz: the whole path
// steps aside and the streamed one gives today's error, naming the file and
// the byte of the compressed file.
TEST(TraceText, AWrongIsizeOrACutOrCorruptGzipGivesTheStreamedError) {
  const std::string gz = Gzip(TraceText(500));
  auto with_isize = [&](uint32_t isize) {
    std::string out = gz;
    for (int i = 0; i < 4; ++i) out[out.size() - 4 + i] = static_cast<char>(isize >> (8 * i));
    return out;
  };
  std::string corrupt = gz;
  corrupt[gz.size() / 2] ^= 0x55;
  corrupt[gz.size() / 2 + 1] ^= 0x55;
  const uint32_t isize = static_cast<uint32_t>(TraceText(500).size());
  // A header that carries its own CRC (FHCRC), a wrong one: libdeflate skips
  // it, zlib checks it (a fuzzer's find).
  std::string wrong_header_crc = gz;
  wrong_header_crc[3] = static_cast<char>(wrong_header_crc[3] | 0x02);
  const uLong header_crc =
      crc32(0L, reinterpret_cast<const Bytef*>(wrong_header_crc.data()), 10) & 0xffff;
  wrong_header_crc.insert(
      10, {static_cast<char>(~header_crc & 0xff), static_cast<char>(header_crc >> 8 & 0xff)});
  const std::pair<std::string, std::string> cases[] = {
      {wrong_header_crc, "corrupt gzip data at byte 12 of the file (header crc mismatch)"},
      {with_isize(isize + 1000), "corrupt gzip data at byte"},
      {with_isize(isize - 1000), "corrupt gzip data at byte"},
      {with_isize(0xfffffff0u), "corrupt gzip data at byte"},  // over 4 GiB - 1: never whole
      {gz.substr(0, gz.size() / 2), "the gzip stream ends early, at byte"},
      {gz.substr(0, 10), "the gzip stream ends early, at byte"},
      {corrupt, "corrupt gzip data at byte"},
  };
  for (const auto& [bytes, expect] : cases) {
    TempFile file(bytes);
    Result<TraceFile> whole = ReadTraceFile(file.path(), Whole());
    Result<TraceFile> streamed = ReadTraceFile(file.path(), Streamed());
    ASSERT_FALSE(whole.ok()) << expect;
    ASSERT_FALSE(streamed.ok()) << expect;
    EXPECT_EQ(whole.status().message(), streamed.status().message());
    EXPECT_NE(whole.status().message().find(file.path()), std::string::npos)
        << whole.status().message();
    EXPECT_NE(whole.status().message().find(expect), std::string::npos)
        << "wanted \"" << expect << "\" in: " << whole.status().message();
  }
}

// A header with its own CRC, a right one, still reads whole.
TEST(TraceText, AGzipHeaderWithItsOwnCrcReadsWhole) {
  const std::string text = TraceText(50);
  std::string gz = Gzip(text);
  gz[3] = static_cast<char>(gz[3] | 0x02);
  const uLong crc = crc32(0L, reinterpret_cast<const Bytef*>(gz.data()), 10) & 0xffff;
  gz.insert(10, {static_cast<char>(crc & 0xff), static_cast<char>(crc >> 8 & 0xff)});
  std::optional<WholeText> whole = WholeTextOf(gz, uint64_t{1} << 30);
  ASSERT_TRUE(whole.has_value());
  EXPECT_EQ(std::string_view(whole->data(), whole->size()), text);
}

// Texts held at once share the limit; one let go makes room again.
TEST(TraceText, TextsHeldAtOnceShareTheLimit) {
  const std::string text = TraceText(100);
  const uint64_t limit = text.size() * 2 + 200;  // two of it with their pads, not three
  std::optional<WholeText> first = WholeTextOf(text, limit);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(std::string_view(first->data(), first->size()), text);
  EXPECT_EQ(first->data()[first->size()], '\0');
  EXPECT_FALSE(WholeTextOf(text + text, limit).has_value());
  EXPECT_TRUE(WholeTextOf(text, limit).has_value());  // fits beside the first
  first.reset();
  EXPECT_TRUE(WholeTextOf(text + text, limit + 1000).has_value());
  EXPECT_FALSE(WholeTextOf(text, 0).has_value());
  EXPECT_GT(DefaultWholeTextLimitBytes(), 0u);  // this machine has a /proc/meminfo
}

}  // namespace
}  // namespace stallscope
