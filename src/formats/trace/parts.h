// A whole trace text read by several threads, a part each, for
// formats/trace/file.cc (TraceReading says how many); SplitParse below says how
// the parts are cut and joined so that the trace, or the error, is the one a
// single thread reads. Thread-safe as described there.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "formats/trace/handler.h"

namespace stallscope::trace_reading {

// The first part is parsed in place, the others copy their strings: it
// reads about a third more text in the same time (measured on the HTA
// traces of 10-54 MB of text, 2 CPUs), so it takes a larger share.
inline constexpr double kFirstPartWeight = 1.3;
// How far past its share a part's first event is looked for.
inline constexpr size_t kSplitSearchBytes = size_t{1} << 20;

// The offset of the first event start at or after `from`: a '{', after "},"
// (so an element of a list), before a key of letters, digits and '_' (so
// outside every string: a quote that closed a string is followed by a space
// or one of ",:]}", never by a letter, so the quote after the '{' opens
// one), "ph" first; npos when there is none near. Kineto's pretty-printed
// events and json.dump's one-line ones both start so.
size_t EventStartAfter(std::string_view text, size_t from);

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
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto& p : parts_) p->abandon = true;
    }
    done_.notify_all();
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
  void Start();

  // Part `k`'s parser met part `at`'s '{', inside traceEvents or not: true
  // when part `at` read on from there (k stops), false to read on through it.
  // Part `k` waits for part `at` unless it is told to stop meanwhile (its
  // own result is then never used): a part told to stop wakes from its wait.
  bool Use(size_t k, size_t at, bool inside_events) {
    Part& p = *parts_[at];
    Part& waiting = *parts_[k];
    std::unique_lock<std::mutex> lock(mutex_);
    if (!inside_events) {
      p.abandon = true;
      done_.notify_all();
    }
    done_.wait(lock, [&] { return p.done || waiting.abandon; });
    return p.done && inside_events && p.ok;
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

// The first part's trace with the parts it stopped at joined on, in order:
// each name and thread once, the events' HTA indices following on.
void JoinParts(SplitParse& splits, TraceFile& first);

}  // namespace stallscope::trace_reading
