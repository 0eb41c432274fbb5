#include "probe/trace_file.h"

// RapidJSON's SIMD scans of whitespace and strings (over a whole text in
// memory): SSE2 is in every x86-64's baseline.
#if defined(__SSE2__) && !defined(RAPIDJSON_SSE2) && !defined(RAPIDJSON_SSE42)
#define RAPIDJSON_SSE2
#endif

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <rapidjson/error/en.h>
#include <rapidjson/reader.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <unordered_map>

#include "core/text.h"
#include "probe/trace_text.h"

namespace stallscope {
namespace {

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

std::optional<double> NumberOf(std::string_view text) {
  double v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

// The keys the reader looks at, known once as the key is read (no copy of
// every key's text).
enum class KeyName : uint8_t {
  kOther,
  kTraceEvents,
  kDeviceProperties,
  kDistributedInfo,
  kArgs,
  kId,
  kName,
  kRank,
  kWorldSize,
  kBackend,
  kCat,
  kPh,
  kTs,
  kDur,
  kStream,
  kCorrelation,
  kDevice,
  kBandwidth,
  kPid,
  kTid,
  kWaitStream,  // args.wait_on_stream of a cuda_sync
  kWaitRecord,  // args.wait_on_cuda_event_record_corr_id
};

// `key` when `k` is `text`: a compare of a length known when compiled, which
// the compiler makes a load or two, not a call of memcmp.
template <size_t N>
KeyName Is(std::string_view k, const char (&text)[N], KeyName key) {
  return k.size() == N - 1 && std::memcmp(k.data(), text, N - 1) == 0 ? key : KeyName::kOther;
}

// Picked by length, then first letter: one comparison a key, which matters
// at eight keys an event.
KeyName KeyOf(std::string_view k) {
  if (k.empty()) return KeyName::kOther;
  switch (k.size()) {
    case 2:
      if (k[0] == 'i') return Is(k, "id", KeyName::kId);
      if (k[0] == 'p') return Is(k, "ph", KeyName::kPh);
      return Is(k, "ts", KeyName::kTs);
    case 3:
      if (k[0] == 'c') return Is(k, "cat", KeyName::kCat);
      if (k[0] == 'd') return Is(k, "dur", KeyName::kDur);
      return k[0] == 'p' ? Is(k, "pid", KeyName::kPid) : Is(k, "tid", KeyName::kTid);
    case 4:
      if (k[0] == 'a') return Is(k, "args", KeyName::kArgs);
      if (k[0] == 'n') return Is(k, "name", KeyName::kName);
      return Is(k, "rank", KeyName::kRank);
    case 6:
      return k[0] == 'd' ? Is(k, "device", KeyName::kDevice) : Is(k, "stream", KeyName::kStream);
    case 7:
      return Is(k, "backend", KeyName::kBackend);
    case 10:
      return Is(k, "world_size", KeyName::kWorldSize);
    case 11:
      return k[0] == 't' ? Is(k, "traceEvents", KeyName::kTraceEvents)
                         : Is(k, "correlation", KeyName::kCorrelation);
    case 15:
      return Is(k, "distributedInfo", KeyName::kDistributedInfo);
    case 16:
      return Is(k, "deviceProperties", KeyName::kDeviceProperties);
    case 14:
      return Is(k, "wait_on_stream", KeyName::kWaitStream);
    case 23:
      return Is(k, "memory bandwidth (GB/s)", KeyName::kBandwidth);
    case 33:
      return Is(k, "wait_on_cuda_event_record_corr_id", KeyName::kWaitRecord);
    default:
      return KeyName::kOther;
  }
}

// A whole number that fits an int32 (ids, ranks, streams, devices);
// nullopt for anything else, so no cast is ever out of range.
std::optional<int64_t> SmallIntOf(std::string_view text) {
  std::optional<double> d = NumberOf(text);
  if (!d || !std::isfinite(*d) || *d < -2147483648.0 || *d > 2147483647.0) return std::nullopt;
  return static_cast<int64_t>(*d);
}

// A correlation id: any whole number int64 holds.
std::optional<int64_t> IdOf(std::string_view text) {
  std::optional<double> d = NumberOf(text);
  if (!d || !std::isfinite(*d) || *d < -9.2e18 || *d > 9.2e18) return std::nullopt;
  return static_cast<int64_t>(*d);
}

// RapidJSON's recursive parse (about a tenth fewer instructions than its
// iterative one) takes a few hundred bytes of the thread's stack a level:
// nesting is stopped at Python's own recursion limit, which json.load (and
// so HTA) meets too. Kineto nests five levels deep.
constexpr size_t kMaxNesting = 1000;

// Hashes std::string and std::string_view alike, for lookups by view.
struct TextHash {
  using is_transparent = void;
  size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
};

// A field's text: a view of the parsed text where that stays put, else a
// copy (a streamed block goes once the parser has moved past it).
class FieldText {
 public:
  void Set(std::string_view text, bool text_stays) {
    if (text_stays) {
      view_ = text;
    } else {
      copy_.assign(text);
      view_ = copy_;
    }
  }
  void Clear() { view_ = {}; }
  std::string_view view() const { return view_; }

 private:
  std::string copy_;
  std::string_view view_;
};

class SplitParse;

// The SAX handler: a stack of what each open object or array is, and which
// field of the current event the last key named.
class TraceHandler : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, TraceHandler> {
 public:
  // `text_stays`: the strings handed over stay put until the parse ends (a
  // whole text parsed in place), so they are kept as views, not copied.
  TraceHandler(TraceFile& out, TraceRows rows, bool text_stays)
      : out_(out), every_row_(rows == TraceRows::kEvery), text_stays_(text_stays) {}

  bool Null() { return Scalar(std::string_view()); }
  bool Bool(bool) { return Scalar(std::string_view()); }
  bool RawNumber(const char* s, rapidjson::SizeType n, bool) {
    return Scalar(std::string_view(s, n), /*number=*/true);
  }
  bool String(const char* s, rapidjson::SizeType n, bool copy) {
    if (next_string_is_key_) {  // a part's tail, read a value at a time
      next_string_is_key_ = false;
      return Key(s, n, copy);
    }
    return Scalar(std::string_view(s, n), /*number=*/false);
  }
  bool Key(const char* s, rapidjson::SizeType n, bool) {
    key_ = KeyOf(std::string_view(s, n));
    return true;
  }
  bool StartObject() { return Open(/*object=*/true); }
  bool EndObject(rapidjson::SizeType) { return Close(); }
  bool StartArray() { return Open(/*object=*/false); }
  bool EndArray(rapidjson::SizeType) { return Close(); }

  // For a text split among threads (SplitParse below): the part this
  // handler reads, and where its parser's cursor is (`base`: the text's
  // first byte), to tell when it meets the next part's first event.
  void ReadPart(SplitParse& splits, size_t part, const char* base, const char* const* cursor);
  // A part after the first starts inside traceEvents, at an event.
  void StartInsideEvents() {
    top_seen_ = saw_events_ = true;
    top_ = Frame::kTop;
    stack_ = {Frame::kTop, Frame::kEvents};
  }
  // Its tail after traceEvents, read a value at a time.
  void KeyNext() { next_string_is_key_ = true; }
  bool EndTop() { return Close(); }
  // The part it stopped at (that part read on from there), or npos.
  size_t stopped_at() const { return stopped_at_; }
  uint32_t event_objects() const { return next_index_; }
  bool backend_seen() const { return backend_seen_; }

  bool saw_events() const { return saw_events_; }
  bool top_is_object() const { return top_ == Frame::kTop; }
  bool top_seen() const { return top_seen_; }
  bool too_deep() const { return stack_.size() >= kMaxNesting; }

 private:
  enum class Frame : uint8_t {
    kTop,          // the Kineto object
    kEvents,       // traceEvents, or the legacy bare list
    kEvent,        // one event
    kArgs,         // its args
    kDevices,      // deviceProperties
    kDevice,       // one of them
    kDistributed,  // distributedInfo
    kSkip,         // anything else
  };

  Frame Current() const { return stack_.empty() ? Frame::kSkip : stack_.back(); }

  bool Open(bool object) {
    if (stack_.size() >= kMaxNesting) return false;                // the parse stops: too deep
    if (splits_ != nullptr && object && !AtSplit()) return false;  // the next part reads on
    if (stack_.empty() && !top_seen_) {
      top_seen_ = true;
      if (object) {
        top_ = Frame::kTop;
        stack_.push_back(Frame::kTop);
      } else {
        out_.legacy = true;
        saw_events_ = true;
        top_ = Frame::kEvents;
        stack_.push_back(Frame::kEvents);
      }
      return true;
    }
    Frame next = Frame::kSkip;
    switch (Current()) {
      case Frame::kTop:
        if (!object && key_ == KeyName::kTraceEvents) {
          next = Frame::kEvents;
          saw_events_ = true;
        } else if (!object && key_ == KeyName::kDeviceProperties) {
          next = Frame::kDevices;
        } else if (object && key_ == KeyName::kDistributedInfo) {
          next = Frame::kDistributed;
        }
        break;
      case Frame::kEvents:
        if (object) {
          next = Frame::kEvent;
          event_ = Pending();
          pid_.Clear();
          tid_.Clear();
          index_ = next_index_++;
        }
        break;
      case Frame::kEvent:
        if (object && key_ == KeyName::kArgs) next = Frame::kArgs;
        break;
      case Frame::kDevices:
        if (object) {
          next = Frame::kDevice;
          device_id_ = -1;
          device_name_.clear();
        }
        break;
      default:
        break;
    }
    stack_.push_back(next);
    return true;
  }

  bool Close() {
    Frame closing = Current();
    if (!stack_.empty()) stack_.pop_back();
    if (closing == Frame::kEvent) EndEvent();
    if (closing == Frame::kDevice && device_id_ >= 0) {
      out_.devices.emplace_back(device_id_, device_name_);
    }
    return true;
  }

  bool Scalar(std::string_view v, bool number = false) {
    switch (Current()) {
      case Frame::kEvent:
        EventField(v, number);
        break;
      case Frame::kArgs:
        ArgField(v, number);
        break;
      case Frame::kDevice:
        if (key_ == KeyName::kId) {
          if (std::optional<int64_t> d = SmallIntOf(v)) device_id_ = static_cast<int>(*d);
        } else if (key_ == KeyName::kName && !number) {
          device_name_.assign(v);
        }
        break;
      case Frame::kDistributed:
        if (key_ == KeyName::kRank || key_ == KeyName::kWorldSize) {
          if (std::optional<int64_t> d = SmallIntOf(v)) {
            (key_ == KeyName::kRank ? out_.rank : out_.world_size) = static_cast<int>(*d);
          }
        } else if (key_ == KeyName::kBackend && !number) {
          out_.backend.assign(v);
          backend_seen_ = true;
        }
        break;
      default:
        break;
    }
    return true;
  }

  // One event's fields as they come; judged at its end.
  struct Pending {
    bool has_ts = false, has_dur = false, has_cat = false, has_name = false;
    bool has_ph = false, complete_ph = false, fractional = false;
    double ts = 0, dur = 0;
    int64_t correlation = -1, stream = -1, device = -1;
    int64_t wait_stream = -1, wait_record = -1;
    double bandwidth = -1;
  };

  void EventField(std::string_view v, bool number) {
    if (key_ == KeyName::kName) {
      event_.has_name = true;
      name_.Set(v, text_stays_);
    } else if (key_ == KeyName::kCat) {
      event_.has_cat = true;
      cat_.Set(v, text_stays_);
    } else if (key_ == KeyName::kPh) {
      event_.has_ph = true;
      event_.complete_ph = v == "X";
    } else if (key_ == KeyName::kTs || key_ == KeyName::kDur) {
      std::optional<double> d = NumberOf(v);
      if (!d) return;  // a string that is no number: the field is missing
      bool is_ts = key_ == KeyName::kTs;
      (is_ts ? event_.has_ts : event_.has_dur) = true;
      (is_ts ? event_.ts : event_.dur) = *d;
      if (is_ts && *d != std::floor(*d)) event_.fractional = true;  // HTA looks at ts only
    } else if (key_ == KeyName::kPid || key_ == KeyName::kTid) {
      (key_ == KeyName::kPid ? pid_ : tid_).Set(v, text_stays_);
    }
    (void)number;
  }

  void ArgField(std::string_view v, bool number) {
    if (!number) return;  // stream/correlation/device/bandwidth are numbers
    if (key_ == KeyName::kStream) {
      // Any number is a stream to HTA (some runtimes write a handle there):
      // one past int32 is kept as INT32_MAX, still "has a stream".
      if (std::optional<int64_t> d = IdOf(v)) event_.stream = *d;
    } else if (key_ == KeyName::kCorrelation) {
      if (std::optional<int64_t> d = IdOf(v)) event_.correlation = *d;
    } else if (key_ == KeyName::kDevice) {
      if (std::optional<int64_t> d = SmallIntOf(v)) event_.device = *d;
    } else if (key_ == KeyName::kWaitStream || key_ == KeyName::kWaitRecord) {
      if (std::optional<int64_t> d = IdOf(v))
        (key_ == KeyName::kWaitStream ? event_.wait_stream : event_.wait_record) = *d;
    } else if (key_ == KeyName::kBandwidth) {
      std::optional<double> d = NumberOf(v);
      if (d && std::isfinite(*d) && *d >= 0 && *d < 1e30) event_.bandwidth = *d;
    }
  }

  void EndEvent() {
    // HTA's rows: an event with a dur and a cat, cat not "Trace". The legacy
    // list has no cat: its complete events are CPU ops.
    bool legacy_op = out_.legacy && !event_.has_cat && event_.complete_ph;
    if (!event_.has_dur || !(event_.has_cat || legacy_op)) return;
    if (event_.has_cat && cat_.view() == "Trace") return;
    ++out_.complete_events;
    // Times beyond ~3e15 years of µs, or that overflow, are no time at all.
    if (!event_.has_ts || !event_.has_name || !(std::fabs(event_.ts) < 1e17) ||
        !(std::fabs(event_.dur) < 1e17)) {
      ++out_.skipped_events;
      return;
    }
    if (event_.fractional) out_.fractional_times = true;
    TraceCategory cat = legacy_op ? TraceCategory::kCpuOp : TraceCategoryOf(cat_.view());
    TraceCpuRole role = TraceCpuRoleOf(name_.view());
    bool step = ProfilerStepNumber(name_.view()).has_value();
    // Counted, not kept among the analysed rows (user annotations on the GPU
    // are kept for their time); kept aside for the critical path's call
    // stacks when they last.
    const bool aside = !every_row_ && event_.stream == -1 && event_.correlation < 0 &&
                       role == TraceCpuRole::kNone && !step && cat != TraceCategory::kGpuAnnotation;
    if (aside && !(event_.dur > 0)) return;
    TraceEvent e;
    e.ts = event_.ts;
    e.dur = event_.dur;
    e.correlation = event_.correlation;
    e.stream = static_cast<int32_t>(std::clamp<int64_t>(event_.stream, -1, INT32_MAX));
    e.cat = cat;
    e.role = role;
    e.device = static_cast<int16_t>(std::clamp<int64_t>(event_.device, -1, INT16_MAX));
    e.bandwidth_gbps = static_cast<float>(event_.bandwidth);
    e.name = NameOf(name_.view());
    e.index = index_;
    e.thread = ThreadOf();
    if (aside) {
      out_.cpu_rows.push_back(e);
      return;
    }
    if (event_.wait_stream != -1 || event_.wait_record != -1)
      out_.sync_waits.push_back({index_, event_.wait_stream, event_.wait_record});
    out_.events.push_back(e);
  }

  // The index of this name in TraceFile::names, each name once.
  uint32_t NameOf(std::string_view name) {
    auto it = names_.find(name);
    if (it != names_.end()) return it->second;
    const auto id = static_cast<uint32_t>(out_.names.size());
    out_.names.emplace_back(name);
    names_.emplace(name, id);
    return id;
  }

  // The (pid, tid) row of this event, each pair once.
  uint32_t ThreadOf() {
    const std::string_view pid = pid_.view(), tid = tid_.view();
    if (!out_.threads.empty() && out_.threads[last_thread_].pid == pid &&
        out_.threads[last_thread_].tid == tid)
      return last_thread_;
    thread_key_.assign(pid);
    thread_key_ += '\x1f';
    thread_key_ += tid;
    auto it = threads_.find(thread_key_);
    if (it == threads_.end()) {
      it = threads_.emplace(thread_key_, static_cast<uint32_t>(out_.threads.size())).first;
      out_.threads.push_back({std::string(pid), std::string(tid)});
    }
    last_thread_ = it->second;
    return last_thread_;
  }

  bool AtSplit();  // false: stop here

  TraceFile& out_;
  SplitParse* splits_ = nullptr;
  size_t part_ = 0;
  const char* base_ = nullptr;
  const char* const* cursor_ = nullptr;
  ptrdiff_t next_split_ = -1;  // where the next part starts (offset of its '{')
  size_t next_part_ = 0;
  size_t stopped_at_ = std::string::npos;
  bool next_string_is_key_ = false;
  bool backend_seen_ = false;
  bool every_row_ = false;
  bool text_stays_ = false;
  std::vector<Frame> stack_;
  Frame top_ = Frame::kSkip;
  bool top_seen_ = false;
  bool saw_events_ = false;
  KeyName key_ = KeyName::kOther;
  FieldText name_;
  FieldText cat_;
  FieldText pid_, tid_;                  // as written, numbers or text
  uint32_t index_ = 0, next_index_ = 0;  // place in traceEvents, as HTA's index
  uint32_t last_thread_ = 0;
  std::unordered_map<std::string, uint32_t> threads_;  // "pid\x1ftid"
  std::string thread_key_;
  Pending event_;
  int device_id_ = -1;
  std::string device_name_;
  // Looked up by view (no string made for a name seen before).
  std::unordered_map<std::string, uint32_t, TextHash, std::equal_to<>> names_;
};

// Fewer bytes than any of Kineto's events takes (see ParseText).
constexpr size_t kTextBytesPerRow = 256;

constexpr size_t kMaxParseThreads = 8;
// The first part is parsed in place, the others copy their strings: it
// reads about a third more text in the same time (measured on the HTA
// traces of 10-54 MB of text, 2 CPUs), so it takes a larger share.
constexpr double kFirstPartWeight = 1.3;
// How far past its share a part's first event is looked for.
constexpr size_t kSplitSearchBytes = size_t{1} << 20;

// The offset of the first event start at or after `from`: a '{', after "},"
// (so an element of a list), before a key of letters, digits and '_' (so
// outside every string: a quote that closed a string is followed by a space
// or one of ",:]}", never by a letter, so the quote after the '{' opens
// one), "ph" first; npos when there is none near. Kineto's pretty-printed
// events and json.dump's one-line ones both start so.
size_t EventStartAfter(std::string_view text, size_t from) {
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  auto word = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  };
  const size_t end = std::min(text.size(), from + kSplitSearchBytes);
  size_t first = std::string::npos;
  while (from < end) {
    const void* hit = std::memchr(text.data() + from, '{', end - from);
    if (hit == nullptr) break;
    const size_t brace = static_cast<size_t>(static_cast<const char*>(hit) - text.data());
    from = brace + 1;
    size_t after = from;
    while (after < text.size() && space(text[after])) ++after;
    if (after >= text.size() || text[after] != '"') continue;
    size_t key = after + 1;
    while (key < text.size() && word(text[key])) ++key;
    if (key == after + 1 || key >= text.size() || text[key] != '"') continue;
    size_t before = brace;
    while (before > 0 && space(text[before - 1])) --before;
    if (before == 0 || text[before - 1] != ',') continue;
    --before;
    while (before > 0 && space(text[before - 1])) --before;
    if (before == 0 || text[before - 1] != '}') continue;
    // An event's first key is "ph" where Kineto or json.dump wrote it: a
    // list nested in args rarely starts so; another key is taken if no "ph".
    if (text.substr(after + 1, key - after - 1) == "ph") return brace;
    if (first == std::string::npos) first = brace;
  }
  return first;
}

// A whole text read by several threads, a part each, cut at event starts
// (EventStartAfter). The first part is parsed in place on the calling
// thread, as a whole text is; each other part on a thread of its own,
// read-only (its strings copied), from its '{' as an event of traceEvents on.
// Whether a cut is an event of traceEvents is known only to the part before
// it: when that part's parser meets the cut's '{' inside traceEvents, it
// waits for the part that starts there, and stops if that part read to its
// end. A cut met anywhere else (a nested list, deviceProperties), or a part
// that failed, and the part before reads on through it, once that part's
// thread is done with the bytes. So every part used was read from a true
// event start, and the result (events, their order and HTA indices, names,
// errors) is one thread's: a part that fails (a broken text) is read again
// by the part before, which meets the error where one thread would.
class SplitParse {
 public:
  struct Part {
    size_t begin = 0;  // offset of its first '{'
    // Its first event's first key, where the part's reading starts: the
    // bytes from the '{' to the key's opening quote are the part before's
    // (in a broken text a string of that part may end at that quote, its
    // in-place parse writing there).
    size_t key_begin = 0, key_end = 0;
    bool backend_seen = false;  // distributedInfo.backend read, if only ""
    TraceFile file;
    uint32_t event_objects = 0;           // the objects of traceEvents it read
    size_t ended_at = std::string::npos;  // the part it stopped at; npos: read to the end
    bool ok = false;
    bool done = false;
    std::atomic<bool> abandon{false};
    std::thread thread;
  };

  SplitParse(std::string_view text, std::string_view source, TraceRows rows, size_t parts)
      : text_(text), source_(source), rows_(rows) {
    parts_.push_back(std::make_unique<Part>());
    // The first part's share is kFirstPartWeight of another's.
    const double total = kFirstPartWeight + static_cast<double>(parts - 1);
    for (size_t i = 1; i < parts; ++i) {
      const auto share =
          static_cast<size_t>(static_cast<double>(text.size()) *
                              (kFirstPartWeight + static_cast<double>(i - 1)) / total);
      const size_t at = EventStartAfter(text, std::max(share, parts_.back()->begin + 1));
      if (at == std::string::npos) break;
      auto part = std::make_unique<Part>();
      part->begin = at;
      part->key_begin = text.find('"', at) + 1;  // EventStartAfter saw it, and the closing one
      part->key_end = text.find('"', part->key_begin);
      parts_.push_back(std::move(part));
    }
  }
  ~SplitParse() {
    for (auto& p : parts_) p->abandon = true;
    for (auto& p : parts_)
      if (p->thread.joinable()) p->thread.join();
  }
  SplitParse(const SplitParse&) = delete;
  SplitParse& operator=(const SplitParse&) = delete;

  size_t parts() const { return parts_.size(); }
  Part& part(size_t k) { return *parts_[k]; }
  size_t begin(size_t k) const { return parts_[k]->begin; }
  bool abandoned(size_t k) const { return parts_[k]->abandon.load(std::memory_order_relaxed); }

  // Each part's thread, with every signal blocked (a signal for the process
  // goes to a thread that expects it). A thread the system refuses is a
  // part that failed: the part before reads on through it.
  void Start() {
    sigset_t all, before;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &before);
    for (size_t k = 1; k < parts_.size(); ++k) {
      try {
        parts_[k]->thread = std::thread([this, k] { Read(k); });
      } catch (const std::system_error&) {
        Done(*parts_[k], false);
      }
    }
    pthread_sigmask(SIG_SETMASK, &before, nullptr);
  }

  // Part `k`'s parser met part `at`'s '{', inside traceEvents or not: true
  // when part `at` read on from there (k stops), false to read on through it.
  bool Use(size_t at, bool inside_events) {
    Part& p = *parts_[at];
    if (!inside_events) p.abandon = true;
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&p] { return p.done; });
    return inside_events && p.ok;
  }
  void Stopped(size_t k, size_t at, uint32_t event_objects) {
    parts_[k]->ended_at = at;
    parts_[k]->event_objects = event_objects;
  }

 private:
  void Read(size_t k);
  bool ReadFrom(Part& p, size_t k);
  void Done(Part& p, bool ok) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      p.ok = ok;
      p.done = true;
    }
    done_.notify_all();
  }

  std::string_view text_;
  std::string_view source_;
  TraceRows rows_;
  std::vector<std::unique_ptr<Part>> parts_;
  std::mutex mutex_;
  std::condition_variable done_;
};

void TraceHandler::ReadPart(SplitParse& splits, size_t part, const char* base,
                            const char* const* cursor) {
  splits_ = &splits;
  part_ = part;
  base_ = base;
  cursor_ = cursor;
  next_part_ = part + 1;
  next_split_ = next_part_ < splits.parts() ? static_cast<ptrdiff_t>(splits.begin(next_part_)) : -1;
}

bool TraceHandler::AtSplit() {
  if (part_ > 0 && splits_->abandoned(part_)) return false;
  if (*cursor_ - 1 - base_ != next_split_) return true;
  const size_t at = next_part_++;
  next_split_ =
      next_part_ < splits_->parts() ? static_cast<ptrdiff_t>(splits_->begin(next_part_)) : -1;
  // An event of traceEvents (a legacy list's elements are not: the parts
  // after the first read a Kineto object's).
  const bool event = Current() == Frame::kEvents && top_ == Frame::kTop;
  if (splits_->Use(at, event)) {
    stopped_at_ = at;
    splits_->Stopped(part_, at, next_index_);
    return false;
  }
  // That part failed from a true event start: reading on would meet what
  // it met. Only the first part reads on, to give one thread's error.
  if (event && part_ > 0) return false;
  return true;
}

// Part `k`: its first event from its first key on, traceEvents' other
// elements, then the top object's members after it, a value at a time. Any
// failure (a broken text, no memory) is the part failed.
void SplitParse::Read(size_t k) {
  Part& p = *parts_[k];
  bool ok = false;
  try {
    ok = ReadFrom(p, k);
  } catch (const std::exception&) {
    ok = false;
  }
  Done(p, ok);
}

bool SplitParse::ReadFrom(Part& p, size_t k) {
  p.file.path = std::string(source_);
  const size_t end = k + 1 < parts_.size() ? parts_[k + 1]->begin : text_.size();
  p.file.events.reserve((end - p.begin) / kTextBytesPerRow);
  p.file.cpu_rows.reserve((end - p.begin) / kTextBytesPerRow);
  rapidjson::StringStream s(text_.data() + p.key_end + 1);
  TraceHandler h(p.file, rows_, /*text_stays=*/false);
  h.StartInsideEvents();
  h.ReadPart(*this, k, text_.data(), &s.src_);
  rapidjson::Reader reader;
  constexpr unsigned kFlags =
      rapidjson::kParseNumbersAsStringsFlag | rapidjson::kParseStopWhenDoneFlag;
  auto value = [&] { return !reader.Parse<kFlags>(s, h).IsError(); };
  auto key = [&] {
    rapidjson::SkipWhitespace(s);
    if (s.Peek() != '"') return false;
    h.KeyNext();
    return value();
  };
  // After a key: ": value", then ", key: value" until the '}'.
  auto members = [&] {
    while (true) {
      rapidjson::SkipWhitespace(s);
      if (s.Take() != ':' || !value()) return false;
      rapidjson::SkipWhitespace(s);
      if (s.Peek() == '}') return true;
      if (s.Take() != ',' || !key()) return false;
    }
  };
  auto read = [&] {
    const std::string_view first(text_.data() + p.key_begin, p.key_end - p.key_begin);
    if (!h.StartObject() ||
        !h.Key(first.data(), static_cast<rapidjson::SizeType>(first.size()), true) || !members())
      return false;
    s.Take();
    h.EndObject(0);
    while (true) {
      rapidjson::SkipWhitespace(s);
      if (s.Peek() == ']') break;
      if (s.Take() != ',' || !value()) return false;
    }
    s.Take();
    h.EndArray(0);
    rapidjson::SkipWhitespace(s);
    if (s.Peek() == ',') {
      s.Take();
      if (!key() || !members()) return false;
    }
    if (s.Take() != '}') return false;
    h.EndObject(0);
    rapidjson::SkipWhitespace(s);
    return s.Peek() == '\0';
  };
  const bool ok = read() || h.stopped_at() != std::string::npos;
  if (h.stopped_at() == std::string::npos) p.event_objects = h.event_objects();
  p.file.bytes = p.key_end + 1 + s.Tell();
  p.backend_seen = h.backend_seen();
  return ok;
}

// The events of a later part appended to the earlier ones: names and
// threads each once, indices after those before.
void AppendPart(TraceFile& into, TraceFile& part, bool backend_seen, uint32_t index_base,
                std::unordered_map<std::string, uint32_t, TextHash, std::equal_to<>>& names,
                std::unordered_map<std::string, uint32_t, TextHash, std::equal_to<>>& threads) {
  std::vector<uint32_t> name_of(part.names.size()), thread_of(part.threads.size());
  for (size_t i = 0; i < part.names.size(); ++i) {
    auto [it, added] = names.try_emplace(part.names[i], static_cast<uint32_t>(into.names.size()));
    if (added) into.names.push_back(std::move(part.names[i]));
    name_of[i] = it->second;
  }
  for (size_t i = 0; i < part.threads.size(); ++i) {
    auto [it, added] = threads.try_emplace(part.threads[i].pid + '\x1f' + part.threads[i].tid,
                                           static_cast<uint32_t>(into.threads.size()));
    if (added) into.threads.push_back(std::move(part.threads[i]));
    thread_of[i] = it->second;
  }
  auto move_rows = [&](std::vector<TraceEvent>& from, std::vector<TraceEvent>& to) {
    for (TraceEvent& e : from) {
      e.name = name_of[e.name];
      e.thread = thread_of[e.thread];
      e.index += index_base;
      to.push_back(e);
    }
  };
  move_rows(part.events, into.events);
  move_rows(part.cpu_rows, into.cpu_rows);
  for (TraceSyncWait w : part.sync_waits) {
    w.index += index_base;
    into.sync_waits.push_back(w);
  }
  into.devices.insert(into.devices.end(), part.devices.begin(), part.devices.end());
  if (part.rank) into.rank = part.rank;
  if (part.world_size) into.world_size = part.world_size;
  if (backend_seen) into.backend = part.backend;
  into.fractional_times = into.fractional_times || part.fractional_times;
  into.complete_events += part.complete_events;
  into.skipped_events += part.skipped_events;
  into.bytes = part.bytes;
}

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
  size_t n = how.parse_threads.value_or(std::min(TraceCpus(), kMaxParseThreads));
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
    // Names and threads each once: the first part's, looked up by text.
    std::unordered_map<std::string, uint32_t, TextHash, std::equal_to<>> names, threads;
    for (size_t i = 0; i < trace->names.size(); ++i)
      names.emplace(trace->names[i], static_cast<uint32_t>(i));
    for (size_t i = 0; i < trace->threads.size(); ++i)
      threads.emplace(trace->threads[i].pid + '\x1f' + trace->threads[i].tid,
                      static_cast<uint32_t>(i));
    uint32_t index_base = splits->part(0).event_objects;
    for (size_t at = splits->part(0).ended_at; at != std::string::npos;) {
      SplitParse::Part& part = splits->part(at);
      AppendPart(*trace, part.file, part.backend_seen, index_base, names, threads);
      ++trace->parts;
      index_base += part.event_objects;
      at = part.ended_at;
    }
  }
  if (trace.ok()) trace->read_whole = true;
  return trace;
}

}  // namespace

size_t TraceCpus() {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (sched_getaffinity(0, sizeof(cpus), &cpus) != 0) return 1;
  return std::max(1, CPU_COUNT(&cpus));
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
