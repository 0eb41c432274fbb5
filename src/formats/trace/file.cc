// The profiler-trace reader: a file read whole or streamed, parsed by the
// handler of handler.h, a large text in parts (see file.h).
#include "formats/trace/file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <unordered_map>

#include "core/text.h"
#include "core/threads.h"
#include "formats/trace/handler.h"
#include "formats/trace/parts.h"
#include "formats/trace/text.h"

namespace stallscope {
namespace {

using trace_reading::JoinParts;
using trace_reading::kMaxNesting;
using trace_reading::kTextBytesPerRow;
using trace_reading::SplitParse;
using trace_reading::TraceHandler;

// RapidJSON's input stream over TextBlocks: Peek is '\0' at the end and
// on a read error, which is kept for the caller to report before the
// parser's. RapidJSON copies every string it hands on (not in-situ), so a
// block may go once the stream has moved past it.
class JsonStream {
 public:
  using Ch = char;
  explicit JsonStream(TextBlocks& source) : source_(source) { Refill(); }
  [[gnu::always_inline]] Ch Peek() const { return pos_ < len_ ? data_[pos_] : '\0'; }
  [[gnu::always_inline]] Ch Take() {
    if (pos_ >= len_) return '\0';
    Ch c = data_[pos_++];
    if (pos_ == len_) Refill();
    return c;
  }
  size_t Tell() const { return static_cast<size_t>(offset_ + pos_); }
  // Writing is never used (not in-situ parsing).
  Ch* PutBegin() { return nullptr; }
  void Put(Ch) {}
  void Flush() {}
  size_t PutEnd(Ch*) { return 0; }
  const Status& error() const { return error_; }

 private:
  [[gnu::noinline]] void Refill() {
    offset_ += len_;
    pos_ = len_ = 0;
    if (!error_.ok()) return;
    Result<std::string_view> got = source_.Next();
    if (!got.ok()) {
      error_ = got.status();
      return;
    }
    data_ = got->data();
    len_ = got->size();
  }
  TextBlocks& source_;
  const char* data_ = nullptr;
  size_t pos_ = 0;
  size_t len_ = 0;
  uint64_t offset_ = 0;
  Status error_;
};

const Status& StreamError(const JsonStream& stream) { return stream.error(); }
const Status& StreamError(const rapidjson::InsituStringStream&) {
  static const Status kNone;
  return kNone;
}

// The parse itself, over streamed blocks or over a whole text (which is
// parsed in place: strings are unescaped where they lie, and RapidJSON's
// SIMD scans apply to that stream only). `gzip`: offsets are of the
// inflated text.
template <unsigned kExtraFlags, typename Stream>
Result<TraceFile> ParseText(Stream& stream, std::string_view source, TraceRows rows, bool gzip,
                            size_t text_bytes = 0, SplitParse* splits = nullptr) {
  TraceFile trace;
  trace.path = std::string(source);
  // Room for the rows a text of this size holds (Kineto writes 300-450 bytes
  // an event): the vectors then grow in place, not by copies. Pages never
  // written are never touched, so a reserve too large costs no memory.
  trace.events.reserve(text_bytes / kTextBytesPerRow);
  trace.cpu_rows.reserve(text_bytes / kTextBytesPerRow);
  TraceHandler handler(trace, rows,
                       /*text_stays=*/(kExtraFlags & rapidjson::kParseInsituFlag) != 0);
  rapidjson::Reader reader;
  constexpr unsigned kFlags =
      rapidjson::kParseNumbersAsStringsFlag | rapidjson::kParseStopWhenDoneFlag | kExtraFlags;
  if constexpr ((kExtraFlags & rapidjson::kParseInsituFlag) != 0) {
    if (splits != nullptr) handler.ReadPart(*splits, 0, stream.head_, &stream.src_);
  }
  rapidjson::ParseResult parsed = reader.Parse<kFlags>(stream, handler);
  if (handler.stopped_at() != std::string::npos) return trace;  // a later part reads on
  if (!StreamError(stream).ok()) {
    if (StreamError(stream).code() == Status::Code::kParseError) return StreamError(stream);
    return Status::ParseError(source, 0, StreamError(stream).message());
  }
  const char* where = gzip ? " of the uncompressed JSON" : "";
  if (parsed.IsError()) {
    std::string what = rapidjson::GetParseError_En(parsed.Code());
    if (parsed.Code() == rapidjson::kParseErrorDocumentEmpty) what = "empty: no JSON at all";
    if (parsed.Code() == rapidjson::kParseErrorTermination && handler.too_deep())
      what = "nested deeper than " + std::to_string(kMaxNesting) + " levels";
    return Status::ParseError(
        source, 0,
        "not a profiler trace: " + what + " at byte " + std::to_string(parsed.Offset()) + where);
  }
  // Only whitespace may follow the document.
  while (stream.Peek() == ' ' || stream.Peek() == '\n' || stream.Peek() == '\r' ||
         stream.Peek() == '\t') {
    stream.Take();
  }
  if (!StreamError(stream).ok())
    return Status::ParseError(source, 0, StreamError(stream).message());
  if (stream.Peek() != '\0') {
    return Status::ParseError(source, 0,
                              "not a profiler trace: more after the JSON document, at byte " +
                                  std::to_string(stream.Tell()) + where);
  }
  if (!handler.saw_events()) {
    return Status::ParseError(source, 0,
                              handler.top_is_object()
                                  ? "not a profiler trace: no \"traceEvents\" list"
                                  : "not a profiler trace: neither an object with "
                                    "\"traceEvents\" nor a list of events");
  }
  trace.bytes = stream.Tell();
  return trace;
}

Result<TraceFile> ParseStreamed(ByteSource& raw, std::string_view source, TraceRows rows) {
  Result<std::unique_ptr<TextBlocks>> blocks = StreamText(raw, source);
  if (!blocks.ok()) return blocks.status();
  // The first block tells whether it was gzip: the stream knows, the
  // offsets of a parse error say "of the uncompressed JSON" then.
  JsonStream stream(**blocks);
  Result<TraceFile> trace = ParseText<0>(stream, source, rows, (*blocks)->gzip());
  if (trace.ok()) trace->read_whole = false;
  return trace;
}

// The threads a whole text of `bytes` is read by (TraceReading says how many).
size_t ParseThreads(size_t bytes, const TraceReading& how) {
  size_t n = how.parse_threads.value_or(ParseThreadsEach(UsableCpus(), 1));
  if (how.min_part_bytes > 0) n = std::min(n, bytes / how.min_part_bytes);
  return std::max<size_t>(n, 1);
}

Result<TraceFile> ParseWhole(WholeText& text, std::string_view source, const TraceReading& how) {
  rapidjson::InsituStringStream stream(text.data());
  std::optional<SplitParse> splits;
  // A Kineto object only: the parts after the first read one's traceEvents.
  const std::string_view view(text.data(), text.size());
  const size_t first = view.find_first_not_of(" \t\r\n");
  if (const size_t threads = ParseThreads(text.size(), how);
      threads > 1 && first != std::string_view::npos && view[first] == '{') {
    splits.emplace(view, source, how.rows, threads);
    if (splits->parts() > 1) splits->Start();
  }
  Result<TraceFile> trace = ParseText<rapidjson::kParseInsituFlag>(
      stream, source, how.rows, text.gzip, text.size(), splits ? &*splits : nullptr);
  if (trace.ok() && splits && splits->part(0).ended_at != std::string::npos) {
    JoinParts(*splits, *trace);
  }
  if (trace.ok()) trace->read_whole = true;
  return trace;
}

}  // namespace

size_t TraceThreads(size_t asked) { return asked > 0 ? asked : UsableCpus(); }

size_t ParseThreadsEach(size_t budget, size_t readers) {
  return std::clamp<size_t>(budget / std::max<size_t>(readers, 1), 1, kMaxTraceParseThreads);
}

Result<TraceFile> ReadTraceFile(const std::string& path, const TraceReading& how) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno("cannot open " + path, errno);
  const uint64_t limit = how.whole_text_limit_bytes.value_or(DefaultWholeTextLimitBytes());
  Result<std::optional<WholeText>> whole = ReadWholeText(fd, path, limit);
  Result<TraceFile> out = Status();
  if (!whole.ok()) {
    out = whole.status();
  } else if (*whole) {
    out = ParseWhole(**whole, path, how);
  } else if (::lseek(fd, 0, SEEK_SET) != 0) {
    out = Status::FromErrno("cannot read " + path, errno);
  } else {
    FdSource source(fd, path);
    out = ParseStreamed(source, path, how.rows);
  }
  ::close(fd);
  return out;
}

Result<TraceFile> ReadTraceFile(const std::string& path, TraceRows rows) {
  TraceReading how;
  how.rows = rows;
  return ReadTraceFile(path, how);
}

Result<TraceFile> ParseTraceBytes(std::string_view bytes, std::string_view source,
                                  const TraceReading& how) {
  const uint64_t limit = how.whole_text_limit_bytes.value_or(DefaultWholeTextLimitBytes());
  if (std::optional<WholeText> whole = WholeTextOf(bytes, limit)) {
    return ParseWhole(*whole, source, how);
  }
  MemorySource memory(bytes);
  return ParseStreamed(memory, source, how.rows);
}

Result<TraceFile> ParseTraceBytes(std::string_view bytes, std::string_view source, TraceRows rows) {
  TraceReading how;
  how.rows = rows;
  return ParseTraceBytes(bytes, source, how);
}

Result<std::vector<std::string>> TraceFilesIn(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Status::FromErrno("cannot read " + path, errno);
  if (!S_ISDIR(st.st_mode)) return std::vector<std::string>{path};
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) return Status::FromErrno("cannot list " + path, errno);
  std::vector<std::string> files;
  while (dirent* d = ::readdir(dir)) {
    std::string_view name = d->d_name;
    if (!EndsWith(name, ".json") && !EndsWith(name, ".gz")) continue;
    std::string full = path + (EndsWith(path, "/") ? "" : "/") + std::string(name);
    struct stat fs {};
    if (::stat(full.c_str(), &fs) == 0 && S_ISREG(fs.st_mode)) files.push_back(full);
  }
  ::closedir(dir);
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    return Status::NotFound(path + ": no trace files (*.json, *.json.gz) in the directory");
  }
  return files;
}

}  // namespace stallscope
