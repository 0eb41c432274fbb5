// Flight Recorder dumps into plain values: see flight_recorder.h. The values
// a pickle or a JSON text holds (pickle.h) are walked by
// DumpReader, which knows the writer's keys and types and charges every
// value it reads to a budget.
#include "formats/flight_recorder/flight_recorder.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <map>
#include <utility>

#include "core/file.h"
#include "formats/flight_recorder/json.h"
#include "formats/flight_recorder/pickle.h"

namespace stallscope {
namespace {

class DumpReader {
 public:
  DumpReader(const FrValueTree& tree, std::string_view source, bool json)
      : tree_(tree), source_(source), json_(json) {}

  Result<FlightRecorderDump> Read();

 private:
  Status Fail(std::string_view what) const { return Status::ParseError(source_, 0, what); }

  // Charges n values to the budget; false once it is spent.
  bool Charge(size_t n = 1) {
    if (n > budget_) {
      budget_ = 0;
      return false;
    }
    budget_ -= n;
    return true;
  }
  Status Spent() const {
    return Fail(fmt::format("more than {} values to read: the memo repeats a value too often",
                            kFrMaxValuesRead));
  }

  const FrValue& At(uint32_t i) const { return tree_.at(i); }
  // The value of `key` in a dict (nullptr: absent, or not a dict).
  const FrValue* Field(const FrValue& dict, std::string_view key);

  Result<int64_t> Int(const FrValue& v, std::string_view what) const;
  Result<std::optional<int64_t>> OptionalTime(const FrValue* v, std::string_view what) const;
  Result<std::string> Text(const FrValue& v, std::string_view what) const;
  Result<std::vector<std::vector<int64_t>>> Sizes(const FrValue* v, std::string_view what);
  Result<std::vector<std::string>> Texts(const FrValue* v, std::string_view what);
  Result<std::vector<FrFrame>> Frames(const FrValue* v, std::string_view what);
  Result<std::vector<int64_t>> Ranks(const FrValue& v, std::string_view what);
  Status Version(const FrValue& root, FlightRecorderDump& dump);
  Status Groups(const FrValue& root, FlightRecorderDump& dump);
  Status Statuses(const FrValue& root, FlightRecorderDump& dump);
  Status Entries(const FrValue& root, FlightRecorderDump& dump);
  Result<FrEntry> Entry(const FrValue& e, size_t index);
  Status EntryIds(const FrValue& e, const std::string& what, FrEntry& out);
  Status EntryTensors(const FrValue& e, const std::string& what, FrEntry& out);
  Status EntryTimes(const FrValue& e, const std::string& what, FrEntry& out);

  const FrValueTree& tree_;
  std::string_view source_;
  bool json_;
  size_t budget_ = kFrMaxValuesRead;
};

bool IsSequence(const FrValue& v) {
  return v.kind == FrValueKind::kList || v.kind == FrValueKind::kTuple;
}

const FrValue* DumpReader::Field(const FrValue& dict, std::string_view key) {
  if (dict.kind != FrValueKind::kDict) return nullptr;
  for (size_t i = 0; i + 1 < dict.items.size(); i += 2) {
    if (!Charge()) return nullptr;
    const FrValue& k = At(dict.items[i]);
    if (k.kind == FrValueKind::kString && k.text == key) return &At(dict.items[i + 1]);
  }
  return nullptr;
}

// An int, or in the JSON form a number written as text (pg_status).
Result<int64_t> DumpReader::Int(const FrValue& v, std::string_view what) const {
  if (v.kind == FrValueKind::kInt) return v.integer;
  if (v.kind == FrValueKind::kString && json_) {
    int64_t out = 0;
    auto [end, ec] = std::from_chars(v.text.data(), v.text.data() + v.text.size(), out);
    if (ec == std::errc() && end == v.text.data() + v.text.size()) return out;
  }
  return Fail(fmt::format("{} is a {}, not an int", what, FrValueKindName(v.kind)));
}

// A time in ns that may be unknown: None in the pickle, 0 in the JSON form.
Result<std::optional<int64_t>> DumpReader::OptionalTime(const FrValue* v,
                                                        std::string_view what) const {
  if (v == nullptr || v->kind == FrValueKind::kNone) return std::optional<int64_t>();
  Result<int64_t> t = Int(*v, what);
  if (!t.ok()) return t.status();
  if (json_ && *t == 0) return std::optional<int64_t>();
  return std::optional<int64_t>(*t);
}

Result<std::string> DumpReader::Text(const FrValue& v, std::string_view what) const {
  if (v.kind != FrValueKind::kString) {
    return Fail(fmt::format("{} is a {}, not a str", what, FrValueKindName(v.kind)));
  }
  return v.text;
}

// [[d0, d1, ...], ...]: one list of dimensions per tensor.
Result<std::vector<std::vector<int64_t>>> DumpReader::Sizes(const FrValue* v,
                                                            std::string_view what) {
  std::vector<std::vector<int64_t>> out;
  if (v == nullptr) return out;
  if (!IsSequence(*v)) return Fail(fmt::format("{} is not a list", what));
  for (uint32_t t : v->items) {
    const FrValue& dims = At(t);
    if (!IsSequence(dims))
      return Fail(fmt::format("{} holds a {}", what, FrValueKindName(dims.kind)));
    if (!Charge(dims.items.size() + 1)) return Spent();
    std::vector<int64_t>& sizes = out.emplace_back();
    for (uint32_t d : dims.items) {
      Result<int64_t> n = Int(At(d), what);
      if (!n.ok()) return n.status();
      sizes.push_back(*n);
    }
  }
  return out;
}

Result<std::vector<std::string>> DumpReader::Texts(const FrValue* v, std::string_view what) {
  std::vector<std::string> out;
  if (v == nullptr) return out;
  if (!IsSequence(*v)) return Fail(fmt::format("{} is not a list", what));
  if (!Charge(v->items.size())) return Spent();
  for (uint32_t t : v->items) {
    Result<std::string> s = Text(At(t), what);
    if (!s.ok()) return s.status();
    out.push_back(std::move(*s));
  }
  return out;
}

Result<std::vector<FrFrame>> DumpReader::Frames(const FrValue* v, std::string_view what) {
  std::vector<FrFrame> out;
  if (v == nullptr || v->kind == FrValueKind::kNone) return out;
  if (!IsSequence(*v)) return Fail(fmt::format("{} is not a list", what));
  for (uint32_t f : v->items) {
    const FrValue& frame = At(f);
    const FrValue* name = Field(frame, "name");
    const FrValue* file = Field(frame, "filename");
    const FrValue* line = Field(frame, "line");
    if (budget_ == 0) return Spent();
    FrFrame& out_frame = out.emplace_back();
    if (name && name->kind == FrValueKind::kString) out_frame.name = name->text;
    if (file && file->kind == FrValueKind::kString) out_frame.filename = file->text;
    if (line && line->kind == FrValueKind::kInt) out_frame.line = line->integer;
  }
  return out;
}

// A group's ranks: torch writes the text of a Python list ("[0, 1, 2]");
// a list of ints is read too.
Result<std::vector<int64_t>> DumpReader::Ranks(const FrValue& v, std::string_view what) {
  std::vector<int64_t> out;
  if (IsSequence(v)) {
    if (!Charge(v.items.size())) return Spent();
    for (uint32_t r : v.items) {
      Result<int64_t> n = Int(At(r), what);
      if (!n.ok()) return n.status();
      out.push_back(*n);
    }
    return out;
  }
  if (v.kind != FrValueKind::kString) return Fail(fmt::format("{} is not a list of ranks", what));
  const char* p = v.text.data();
  const char* end = p + v.text.size();
  while (p < end) {
    if (std::isdigit(static_cast<unsigned char>(*p)) || *p == '-') {
      int64_t n = 0;
      auto [next, ec] = std::from_chars(p, end, n);
      if (ec != std::errc())
        return Fail(fmt::format("{}: '{}' is not a list of ranks", what, v.text));
      out.push_back(n);
      p = next;
    } else if (*p == '[' || *p == ']' || *p == ',' || *p == ' ') {
      ++p;
    } else {
      return Fail(fmt::format("{}: '{}' is not a list of ranks", what, v.text));
    }
  }
  return out;
}

Status DumpReader::Version(const FrValue& root, FlightRecorderDump& dump) {
  const FrValue* version = Field(root, "version");
  if (version == nullptr) return Fail("no \"version\": not a Flight Recorder dump");
  Result<std::string> text = Text(*version, "\"version\"");
  if (!text.ok()) return text.status();
  dump.version = *text;
  int major = 0, minor = 0;
  const char* b = text->data();
  const char* e = b + text->size();
  auto [dot, ec] = std::from_chars(b, e, major);
  bool ok = ec == std::errc() && dot < e && *dot == '.';
  if (ok) {
    auto [end, ec2] = std::from_chars(dot + 1, e, minor);
    ok = ec2 == std::errc() && end == e;
  }
  if (!ok) return Fail(fmt::format("version \"{}\" is not MAJOR.MINOR", *text));
  if (major != kFrMajorVersion) {
    return Fail(fmt::format(
        "format version {}: this reader knows {}.0 to {}.{}; a new major version changes the "
        "fields it reads",
        *text, kFrMajorVersion, kFrMajorVersion, kFrNewestMinorKnown));
  }
  dump.version_major = major;
  dump.version_minor = minor;
  for (std::string_view key : {"comm_lib_version", "nccl_version"}) {
    const FrValue* lib = Field(root, key);
    if (lib && lib->kind == FrValueKind::kString && dump.comm_lib_version.empty()) {
      dump.comm_lib_version = lib->text;
    }
  }
  return Status::Ok();
}

Status DumpReader::Groups(const FrValue& root, FlightRecorderDump& dump) {
  const FrValue* config = Field(root, "pg_config");
  if (config == nullptr) return Status::Ok();
  if (config->kind != FrValueKind::kDict) return Fail("\"pg_config\" is not a dict");
  for (size_t i = 0; i + 1 < config->items.size(); i += 2) {
    Result<std::string> name = Text(At(config->items[i]), "a pg_config key");
    if (!name.ok()) return name.status();
    const FrValue& info = At(config->items[i + 1]);
    FrGroupConfig& g = dump.groups.emplace_back();
    g.name = *name;
    const FrValue* desc = Field(info, "desc");
    if (desc && desc->kind == FrValueKind::kString) g.desc = desc->text;
    const FrValue* ranks = Field(info, "ranks");
    if (budget_ == 0) return Spent();
    if (ranks == nullptr) continue;
    Result<std::vector<int64_t>> r = Ranks(*ranks, "pg_config " + *name + " ranks");
    if (!r.ok()) return r.status();
    g.ranks = std::move(*r);
  }
  return Status::Ok();
}

Status DumpReader::Statuses(const FrValue& root, FlightRecorderDump& dump) {
  const FrValue* all = Field(root, "pg_status");
  if (all == nullptr) return Status::Ok();
  if (all->kind != FrValueKind::kDict) return Fail("\"pg_status\" is not a dict");
  for (size_t i = 0; i + 1 < all->items.size(); i += 2) {
    const FrValue& key = At(all->items[i]);
    bool numeric_text = key.kind == FrValueKind::kString;
    FrValue as_int = key;
    if (numeric_text) {
      int64_t id = 0;
      auto [end, ec] = std::from_chars(key.text.data(), key.text.data() + key.text.size(), id);
      if (ec != std::errc() || end != key.text.data() + key.text.size()) {
        return Fail(fmt::format("pg_status key '{}' is not a group id", key.text));
      }
      as_int.kind = FrValueKind::kInt;
      as_int.integer = id;
    }
    Result<int64_t> id = Int(as_int, "a pg_status key");
    if (!id.ok()) return id.status();
    const FrValue& s = At(all->items[i + 1]);
    FrGroupStatus& out = dump.statuses.emplace_back();
    out.pg_id = *id;
    std::pair<std::string_view, int64_t*> fields[] = {
        {"last_enqueued_collective", &out.last_enqueued},
        {"last_started_collective", &out.last_started},
        {"last_completed_collective", &out.last_completed}};
    for (auto& [name, into] : fields) {
      const FrValue* v = Field(s, name);
      if (budget_ == 0) return Spent();
      if (v == nullptr) continue;
      Result<int64_t> n = Int(*v, fmt::format("pg_status {} {}", *id, name));
      if (!n.ok()) return n.status();
      *into = *n;
    }
  }
  return Status::Ok();
}

Status DumpReader::EntryIds(const FrValue& e, const std::string& what, FrEntry& out) {
  const FrValue* pg = Field(e, "process_group");
  if (pg == nullptr || !IsSequence(*pg) || pg->items.size() != 2 ||
      At(pg->items[0]).kind != FrValueKind::kString ||
      At(pg->items[1]).kind != FrValueKind::kString) {
    return Fail(what + ": \"process_group\" is not (name, desc)");
  }
  out.pg_name = At(pg->items[0]).text;
  out.pg_desc = At(pg->items[1]).text;
  const FrValue* name = Field(e, "profiling_name");
  if (name == nullptr) return Fail(what + " has no \"profiling_name\"");
  Result<std::string> n = Text(*name, what + " profiling_name");
  if (!n.ok()) return n.status();
  out.profiling_name = std::move(*n);
  // seq_id: the one counter of formats before 2.2.
  std::pair<std::string_view, int64_t*> ids[] = {
      {"record_id", &out.record_id},      {"pg_id", &out.pg_id},
      {"seq_id", &out.collective_seq_id}, {"collective_seq_id", &out.collective_seq_id},
      {"p2p_seq_id", &out.p2p_seq_id},    {"op_id", &out.op_id}};
  for (auto& [key, into] : ids) {
    const FrValue* v = Field(e, key);
    if (v == nullptr) continue;
    Result<int64_t> x = Int(*v, what + " " + std::string(key));
    if (!x.ok()) return x.status();
    *into = *x;
  }
  const FrValue* p2p = Field(e, "is_p2p");
  std::string_view kind =
      std::string_view(out.profiling_name)
          .substr(std::min(out.profiling_name.find(':') + 1, out.profiling_name.size()));
  out.is_p2p = p2p ? p2p->kind == FrValueKind::kBool && p2p->boolean
                   : kind.starts_with("send") || kind.starts_with("recv");
  return Status::Ok();
}

Status DumpReader::EntryTensors(const FrValue& e, const std::string& what, FrEntry& out) {
  auto in = Sizes(Field(e, "input_sizes"), what + " input_sizes");
  if (!in.ok()) return in.status();
  auto outs = Sizes(Field(e, "output_sizes"), what + " output_sizes");
  if (!outs.ok()) return outs.status();
  auto in_types = Texts(Field(e, "input_dtypes"), what + " input_dtypes");
  if (!in_types.ok()) return in_types.status();
  auto out_types = Texts(Field(e, "output_dtypes"), what + " output_dtypes");
  if (!out_types.ok()) return out_types.status();
  out.input_sizes = std::move(*in);
  out.output_sizes = std::move(*outs);
  out.input_dtypes = std::move(*in_types);
  out.output_dtypes = std::move(*out_types);
  auto frames = Frames(Field(e, "frames"), what + " frames");
  if (!frames.ok()) return frames.status();
  out.frames = std::move(*frames);
  return Status::Ok();
}

Status DumpReader::EntryTimes(const FrValue& e, const std::string& what, FrEntry& out) {
  std::pair<std::string_view, std::optional<int64_t>*> times[] = {
      {"time_created_ns", &out.time_created_ns},
      {"time_discovered_started_ns", &out.time_discovered_started_ns},
      {"time_discovered_completed_ns", &out.time_discovered_completed_ns},
      {"timeout_ms", &out.timeout_ms}};
  for (auto& [key, into] : times) {
    auto t = OptionalTime(Field(e, key), what + " " + std::string(key));
    if (!t.ok()) return t.status();
    *into = *t;
  }
  const FrValue* duration = Field(e, "duration_ms");
  if (duration && duration->kind == FrValueKind::kFloat) out.duration_ms = duration->number;
  if (duration && duration->kind == FrValueKind::kInt) out.duration_ms = duration->integer;
  const FrValue* retired = Field(e, "retired");
  out.retired = retired && retired->kind == FrValueKind::kBool && retired->boolean;
  const FrValue* thread = Field(e, "thread_name");
  if (thread && thread->kind == FrValueKind::kString) out.thread_name = thread->text;
  const FrValue* state = Field(e, "state");
  if (state && state->kind == FrValueKind::kString) {
    out.state = state->text;
  } else {
    out.state = out.time_discovered_completed_ns ? "completed"
                : out.time_discovered_started_ns ? "started"
                                                 : "scheduled";
  }
  return Status::Ok();
}

Result<FrEntry> DumpReader::Entry(const FrValue& e, size_t index) {
  std::string what = fmt::format("entry {}", index);
  if (e.kind != FrValueKind::kDict) {
    return Fail(fmt::format("{} is a {}, not a dict", what, FrValueKindName(e.kind)));
  }
  FrEntry out;
  if (Status s = EntryIds(e, what, out); !s.ok()) return s;
  if (Status s = EntryTensors(e, what, out); !s.ok()) return s;
  if (Status s = EntryTimes(e, what, out); !s.ok()) return s;
  if (budget_ == 0) return Spent();
  return out;
}

Status DumpReader::Entries(const FrValue& root, FlightRecorderDump& dump) {
  const FrValue* entries = Field(root, "entries");
  if (entries == nullptr) return Status::Ok();  // JSON leaves it out when empty
  if (!IsSequence(*entries)) return Fail("\"entries\" is not a list");
  for (size_t i = 0; i < entries->items.size(); ++i) {
    Result<FrEntry> e = Entry(At(entries->items[i]), i);
    if (!e.ok()) return e.status();
    dump.entries.push_back(std::move(*e));
  }
  return Status::Ok();
}

Result<FlightRecorderDump> DumpReader::Read() {
  const FrValue& root = At(tree_.root);
  if (root.kind != FrValueKind::kDict) {
    return Fail(fmt::format("holds a {}, not the dict of a Flight Recorder dump",
                            FrValueKindName(root.kind)));
  }
  FlightRecorderDump dump;
  dump.format = json_ ? "json" : "pickle";
  for (auto step :
       {&DumpReader::Version, &DumpReader::Groups, &DumpReader::Statuses, &DumpReader::Entries}) {
    if (Status s = (this->*step)(root, dump); !s.ok()) return s;
    if (budget_ == 0) return Spent();
  }
  return dump;
}

}  // namespace

Result<FlightRecorderDump> ParseFlightRecorderDump(std::string_view bytes, std::string_view source,
                                                   int64_t rank) {
  size_t first = bytes.find_first_not_of(" \t\r\n");
  bool json = first != std::string_view::npos && bytes[first] == '{';
  Result<FrValueTree> tree = json ? ParseJsonValues(bytes, source) : ParsePickle(bytes, source);
  if (!tree.ok()) return tree.status();
  Result<FlightRecorderDump> dump = DumpReader(*tree, source, json).Read();
  if (!dump.ok()) return dump.status();
  dump->source = std::string(source);
  dump->rank = rank;
  return dump;
}

std::optional<int64_t> RankFromFileName(std::string_view name) {
  size_t end = name.size();
  size_t begin = end;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(name[begin - 1]))) --begin;
  if (begin == end || end - begin > 9) return std::nullopt;
  int64_t rank = 0;
  std::from_chars(name.data() + begin, name.data() + end, rank);
  return rank;
}

namespace {

struct DumpFile {
  std::string path;
  bool in_folder = false;  // found, not named
};

// A pickle of protocol 2 or later opens with PROTO; a JSON dump with '{'.
bool LooksLikeDump(std::string_view bytes) {
  size_t first = bytes.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos &&
         (static_cast<uint8_t>(bytes[first]) == 0x80 || bytes[first] == '{');
}

// The files to read: those named, and the digit-ended files under folders.
Result<std::vector<DumpFile>> DumpFiles(const std::vector<std::string>& paths,
                                        std::vector<std::string>& notes) {
  std::vector<DumpFile> files;
  for (const std::string& path : paths) {
    std::error_code ec;
    if (!std::filesystem::is_directory(path, ec)) {
      files.push_back({path, false});
      continue;
    }
    std::vector<std::string> found;
    size_t passed = 0;
    auto it = std::filesystem::recursive_directory_iterator(
        path, std::filesystem::directory_options::skip_permission_denied, ec);
    for (; !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      if (!it->is_regular_file(ec)) continue;
      if (RankFromFileName(it->path().filename().string())) {
        found.push_back(it->path().string());
      } else {
        ++passed;
      }
    }
    if (ec) return Status::FromErrno("cannot list " + path, ec.value());
    std::sort(found.begin(), found.end());
    if (passed > 0) {
      notes.push_back(
          fmt::format("{}: {} file(s) whose names end in no rank were passed over", path, passed));
    }
    for (std::string& f : found) files.push_back({std::move(f), true});
  }
  return files;
}

// Versions newer than this reader, or that differ between ranks (fr_trace
// refuses those; here each dump is read by its own version).
void NoteVersions(FlightRecorderDumps& out) {
  std::map<std::string, std::vector<int64_t>> by_version;
  for (const FlightRecorderDump& d : out.dumps) by_version[d.version].push_back(d.rank);
  for (const auto& [version, ranks] : by_version) {
    const FlightRecorderDump* d = nullptr;
    for (const auto& dump : out.dumps) {
      if (dump.version == version) d = &dump;
    }
    if (d && d->version_minor > kFrNewestMinorKnown) {
      out.notes.push_back(
          fmt::format("format version {} is newer than {}.{}: read by the fields this reader knows",
                      version, kFrMajorVersion, kFrNewestMinorKnown));
    }
  }
  if (by_version.size() > 1) {
    std::string list;
    for (const auto& [version, ranks] : by_version) {
      list +=
          fmt::format("{}{} (ranks {})", list.empty() ? "" : ", ", version, fmt::join(ranks, ","));
    }
    out.notes.push_back("the dumps are of different format versions: " + list);
  }
}

}  // namespace

Result<FlightRecorderDumps> ReadFlightRecorderDumps(const std::vector<std::string>& paths) {
  FlightRecorderDumps out;
  Result<std::vector<DumpFile>> files = DumpFiles(paths, out.notes);
  if (!files.ok()) return files.status();
  std::map<int64_t, std::string> seen;
  for (const DumpFile& file : *files) {
    std::optional<int64_t> rank =
        RankFromFileName(std::filesystem::path(file.path).filename().string());
    if (!rank) {
      return Status::InvalidArgument(fmt::format(
          "{}: no rank in the file name (torch names each rank's dump PREFIX<rank>)", file.path));
    }
    Result<std::string> bytes = ReadFile(file.path, kFrMaxDumpBytes);
    if (!bytes.ok()) return bytes.status();
    if (file.in_folder && !LooksLikeDump(*bytes)) {
      out.notes.push_back(file.path + ": neither a pickle nor JSON: passed over");
      continue;
    }
    if (auto [it, fresh] = seen.emplace(*rank, file.path); !fresh) {
      return Status::InvalidArgument(
          fmt::format("two dumps of rank {}: {} and {} (one job's dumps at a time)", *rank,
                      it->second, file.path));
    }
    Result<FlightRecorderDump> dump = ParseFlightRecorderDump(*bytes, file.path, *rank);
    if (!dump.ok()) return dump.status();
    out.dumps.push_back(std::move(*dump));
  }
  NoteVersions(out);
  if (out.dumps.empty()) {
    return Status::NotFound("no Flight Recorder dump (a file named PREFIX<rank>) in " +
                            fmt::format("{}", fmt::join(paths, ", ")));
  }
  std::sort(out.dumps.begin(), out.dumps.end(),
            [](const auto& a, const auto& b) { return a.rank < b.rank; });
  return out;
}

}  // namespace stallscope
