// The SAX handler of the profiler-trace reader (formats/trace/file.h), and
// what it reads with: the keys it knows, numbers read as Python's float()
// reads them, a field's text. Shared by the one-thread read (file.cc)
// and the read in parts (formats/trace/parts.h); no interface of its own.
// Thread-compatible: a handler per parse.
#pragma once

// RapidJSON's SIMD scans of whitespace and strings (over a whole text in
// memory): SSE2 is in every x86-64's baseline. Defined before every include
// of RapidJSON: include RapidJSON through this header only.
#if defined(__SSE2__) && !defined(RAPIDJSON_SSE2) && !defined(RAPIDJSON_SSE42)
#define RAPIDJSON_SSE2
#endif

#include <rapidjson/error/en.h>
#include <rapidjson/reader.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "formats/trace/file.h"
#include "sample/trace.h"

namespace stallscope::trace_reading {

// Fewer bytes than any of Kineto's events takes (see ParseText).
inline constexpr size_t kTextBytesPerRow = 256;

inline std::optional<double> NumberOf(std::string_view text) {
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
  // A communication kernel's collective (sample/trace.h's TraceCommArgs)
  kGroupName,
  kGroupRanks,
  kCollective,
  kDtype,
  kInNelems,
  kOutNelems,
  kGroupSize,
};

// `key` when `k` is `text`: a compare of a length known when compiled, which
// the compiler makes a load or two, not a call of memcmp.
template <size_t N>
KeyName Is(std::string_view k, const char (&text)[N], KeyName key) {
  return k.size() == N - 1 && std::memcmp(k.data(), text, N - 1) == 0 ? key : KeyName::kOther;
}

// Picked by length, then first letter: one comparison a key, which matters
// at eight keys an event.
inline KeyName KeyOf(std::string_view k) {
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
    case 5:
      return Is(k, "dtype", KeyName::kDtype);
    case 7:
      return Is(k, "backend", KeyName::kBackend);
    case 10:
      return k[0] == 'w' ? Is(k, "world_size", KeyName::kWorldSize)
                         : Is(k, "Group size", KeyName::kGroupSize);
    case 13:
      return Is(k, "In msg nelems", KeyName::kInNelems);
    case 11:
      return k[0] == 't' ? Is(k, "traceEvents", KeyName::kTraceEvents)
                         : Is(k, "correlation", KeyName::kCorrelation);
    case 15:
      return k[0] == 'd' ? Is(k, "distributedInfo", KeyName::kDistributedInfo)
                         : Is(k, "Collective name", KeyName::kCollective);
    case 18:
      return Is(k, "Process Group Name", KeyName::kGroupName);
    case 19:
      return Is(k, "Process Group Ranks", KeyName::kGroupRanks);
    case 16:
      return Is(k, "deviceProperties", KeyName::kDeviceProperties);
    case 14:
      return k[0] == 'w' ? Is(k, "wait_on_stream", KeyName::kWaitStream)
                         : Is(k, "Out msg nelems", KeyName::kOutNelems);
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
inline std::optional<int64_t> SmallIntOf(std::string_view text) {
  std::optional<double> d = NumberOf(text);
  if (!d || !std::isfinite(*d) || *d < -2147483648.0 || *d > 2147483647.0) return std::nullopt;
  return static_cast<int64_t>(*d);
}

// A correlation id: any whole number int64 holds.
inline std::optional<int64_t> IdOf(std::string_view text) {
  std::optional<double> d = NumberOf(text);
  if (!d || !std::isfinite(*d) || *d < -9.2e18 || *d > 9.2e18) return std::nullopt;
  return static_cast<int64_t>(*d);
}

// RapidJSON's recursive parse (about a tenth fewer instructions than its
// iterative one) takes a few hundred bytes of the thread's stack a level:
// nesting is stopped at Python's own recursion limit, which json.load (and
// so HTA) meets too. Kineto nests five levels deep.
inline constexpr size_t kMaxNesting = 1000;

// A collective arg's text kept per kernel (sample/trace.h TraceCommArgs) is
// cut here; PyTorch's are far shorter.
inline constexpr size_t kMaxCommArgBytes = 256;

// Hashes std::string and std::string_view alike, for lookups by view.
struct TextHash {
  using is_transparent = void;
  size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
};

// Each text once, with its index, looked up by view (no string made for a
// text seen before).
using TextIndex = std::unordered_map<std::string, uint32_t, TextHash, std::equal_to<>>;

// The key of an event's (pid, tid) row: both as written, '\x1f' between.
inline void ThreadKey(std::string& key, std::string_view pid, std::string_view tid) {
  key.assign(pid);
  key += '\x1f';
  key += tid;
}

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

  // For a text split among threads (formats/trace/parts.h): the part this
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
          if (comm_seen_) {
            comm_ = TraceCommArgs();
            comm_seen_ = false;
          }
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
    if (key_ >= KeyName::kGroupName) {
      CommField(v, number);
      return;
    }
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

  // A collective's args: texts as written, counts as whole numbers. Out of
  // line: few events have them, and ArgField, which runs for every arg of
  // every event, stays small enough to inline.
  [[gnu::noinline, gnu::cold]] void CommField(std::string_view v, bool number) {
    comm_seen_ = true;
    v = v.substr(0, kMaxCommArgBytes);  // a hostile file's megabyte "name" is not kept per event
    switch (key_) {
      case KeyName::kGroupName:
        comm_.group.assign(v);
        break;
      case KeyName::kGroupRanks:
        comm_.group_ranks.assign(v);
        break;
      case KeyName::kCollective:
        comm_.collective.assign(v);
        break;
      case KeyName::kDtype:
        comm_.dtype.assign(v);
        break;
      case KeyName::kInNelems:
      case KeyName::kOutNelems:
        if (std::optional<int64_t> d = number ? IdOf(v) : std::nullopt; d && *d >= 0)
          (key_ == KeyName::kInNelems ? comm_.in_nelems : comm_.out_nelems) = *d;
        break;
      case KeyName::kGroupSize:
        if (std::optional<int64_t> d = number ? SmallIntOf(v) : std::nullopt; d && *d > 0)
          comm_.group_size = static_cast<int32_t>(*d);
        break;
      default:
        break;
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
    if (comm_seen_ && e.stream >= 0) {
      comm_.index = index_;
      out_.comm_args.push_back(std::move(comm_));
    }
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
    ThreadKey(thread_key_, pid, tid);
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
  TraceCommArgs comm_;  // the event's collective args, when comm_seen_
  bool comm_seen_ = false;
  int device_id_ = -1;
  std::string device_name_;
  // Looked up by view (no string made for a name seen before).
  TextIndex names_;
};

}  // namespace stallscope::trace_reading
