// The read in parts (see parts.h).
#include "formats/trace/parts.h"

#include <pthread.h>
#include <signal.h>

#include <exception>
#include <system_error>

namespace stallscope::trace_reading {
namespace {

// The events of a later part appended to the earlier ones: names and
// threads each once, indices after those before.
void AppendPart(TraceFile& into, TraceFile& part, bool backend_seen, uint32_t index_base,
                TextIndex& names, TextIndex& threads) {
  std::string key;
  std::vector<uint32_t> name_of(part.names.size()), thread_of(part.threads.size());
  for (size_t i = 0; i < part.names.size(); ++i) {
    auto [it, added] = names.try_emplace(part.names[i], static_cast<uint32_t>(into.names.size()));
    if (added) into.names.push_back(std::move(part.names[i]));
    name_of[i] = it->second;
  }
  for (size_t i = 0; i < part.threads.size(); ++i) {
    ThreadKey(key, part.threads[i].pid, part.threads[i].tid);
    auto [it, added] = threads.try_emplace(key, static_cast<uint32_t>(into.threads.size()));
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
  for (TraceCommArgs& c : part.comm_args) {
    c.index += index_base;
    into.comm_args.push_back(std::move(c));
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

}  // namespace

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

void SplitParse::Start() {
  sigset_t all, before;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &before);
  for (size_t k = 1; k < parts_.size(); ++k) {
    try {
      parts_[k]->thread = std::thread([this, k] { Read(k); });
    } catch (...) {  // std::system_error (EAGAIN), std::bad_alloc
      Done(*parts_[k], false);
    }
  }
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
}

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
  if (splits_->Use(part_, at, event)) {
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

void JoinParts(SplitParse& splits, TraceFile& first) {
  // Names and threads each once: the first part's, looked up by text.
  TextIndex names, threads;
  std::string key;
  for (size_t i = 0; i < first.names.size(); ++i)
    names.emplace(first.names[i], static_cast<uint32_t>(i));
  for (size_t i = 0; i < first.threads.size(); ++i) {
    ThreadKey(key, first.threads[i].pid, first.threads[i].tid);
    threads.emplace(key, static_cast<uint32_t>(i));
  }
  uint32_t index_base = splits.part(0).event_objects;
  for (size_t at = splits.part(0).ended_at; at != std::string::npos;) {
    SplitParse::Part& part = splits.part(at);
    AppendPart(first, part.file, part.backend_seen, index_base, names, threads);
    ++first.parts;
    index_base += part.event_objects;
    at = part.ended_at;
  }
}

}  // namespace stallscope::trace_reading
