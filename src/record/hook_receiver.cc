#include "record/hook_receiver.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/text.h"
#include "record/stale_sockets.h"

namespace stallscope {
namespace {

// In double: a hostile or garbled timestamp must not overflow int64.
double Seconds(int64_t ns, int64_t start_ns) {
  return (static_cast<double>(ns) - static_cast<double>(start_ns)) / 1e9;
}

// The hook sends a few per tracing; a garbled job must not grow this (per
// datagram batch; the recorder caps a run's).
constexpr size_t kMaxAllocationReports = 256;
// Stop records: a few per rank; more is a garbled sender.
constexpr size_t kMaxStopRecords = 4096;

bool ToInts(const std::vector<std::string_view>& fields, size_t count, int64_t* out) {
  if (fields.size() != count + 1) return false;
  for (size_t i = 0; i < count; ++i) {
    std::optional<int64_t> v = ParseInt(fields[i + 1]);
    if (!v) return false;
    out[i] = *v;
  }
  return true;
}

// Where the detail of an exception record begins: after its fourth field.
std::string_view AfterFields(std::string_view line, int fields) {
  size_t at = 0;
  for (int i = 0; i < fields; ++i) {
    at = line.find(' ', at);
    if (at == std::string_view::npos) return {};
    ++at;
  }
  return line.substr(at);
}

// The records of how a rank stopped (docs/hook-protocol.md): from the hook
// `bye pid rank t_ns` and `exception pid rank t_ns DETAIL` (DETAIL: where,
// thread, type, message and frame, tab-separated); from `run --procs`'s
// launcher `exit pid rank t_ns code|signal N` and `sent_signal pid rank
// t_ns N`. False: not one of them (or malformed: counted).
bool ParseStopRecord(std::string_view type, std::string_view line,
                     const std::vector<std::string_view>& f, int64_t start_ns, HookEvents& into) {
  const bool from_hook = type == "bye" || type == "exception";
  if (!from_hook && type != "exit" && type != "sent_signal") return false;
  int64_t v[4];
  bool ok = f.size() >= 4;
  for (size_t i = 0; ok && i < 3; ++i) {
    std::optional<int64_t> n = ParseInt(f[i + 1]);
    ok = n.has_value() && (i == 2 || (*n >= INT32_MIN && *n <= INT32_MAX)) && (i != 0 || *n > 1);
    if (ok) v[i] = *n;
  }
  RankStop s;
  if (ok && type == "exit") {
    std::optional<int64_t> n = f.size() == 6 ? ParseInt(f[5]) : std::nullopt;
    ok = n && *n >= 0 && *n < 256 && (f[4] == "code" || f[4] == "signal");
    if (ok && f[4] == "code") s.exit_code = static_cast<int>(*n);
    if (ok && f[4] == "signal") s.signal = static_cast<int>(*n);
    if (ok) s.how = f[4] == "code" ? "exit" : "signal";  // f[4] exists only then
  } else if (ok && type == "sent_signal") {
    std::optional<int64_t> n = f.size() == 5 ? ParseInt(f[4]) : std::nullopt;
    ok = n && *n > 0 && *n < 65;
    if (ok) s.signal = static_cast<int>(*n);
    s.how = "sent_signal";
  } else if (ok && type == "bye") {
    ok = f.size() == 4;
    s.how = "bye";
  } else if (ok) {
    s.detail = std::string(AfterFields(line, 4)).substr(0, 2048);
    s.how = s.detail.rfind("loader\t", 0) == 0 ? "loader_error" : "exception";
    ok = !s.detail.empty();
  }
  if (!ok || into.stops.size() >= kMaxStopRecords) {
    ++into.malformed;
    return true;
  }
  s.pid = static_cast<int>(v[0]);
  s.rank = static_cast<int>(v[1]);
  s.t = Seconds(v[2], start_ns);
  s.source = from_hook ? "hook" : "launcher";
  into.stops.push_back(std::move(s));
  return true;
}

// One line of a datagram, split, with the run's start (times become seconds
// since it). The parsers below take one and return false for a malformed
// line, which is counted.
struct Line {
  std::string_view text;
  std::vector<std::string_view> f;
  int64_t start_ns;
};

// script pid rank TEXT: the script path (spaces kept) or "-m MODULE"
bool ParseScript(const Line& l, HookEvents& into) {
  const std::string_view text = AfterFields(l.text, 3);
  if (l.f.size() < 4 || !ParseInt(l.f[1]) || !ParseInt(l.f[2]) || text.empty()) return false;
  if (into.script.empty()) into.script = std::string(text.substr(0, 4096));
  return true;
}

// step pid rank step t_end_ns wait_ns step_ns
bool ParseStep(const Line& l, HookEvents& into) {
  int64_t v[6];
  if (!ToInts(l.f, 6, v) || v[4] < 0 || v[5] < 0) return false;
  into.steps.push_back(
      {static_cast<int>(v[1]), v[2], Seconds(v[3], l.start_ns), v[4] / 1e9, v[5] / 1e9});
  return true;
}

// epoch pid rank epoch t_ns
bool ParseEpoch(const Line& l, HookEvents& into) {
  int64_t v[4];
  if (!ToInts(l.f, 4, v)) return false;
  into.epochs.push_back(
      {static_cast<int>(v[1]), static_cast<int>(v[2]), Seconds(v[3], l.start_ns)});
  return true;
}

// loader pid rank batch_size num_workers pin_memory prefetch_factor
// persistent_workers dataset_length gpu
bool ParseLoader(const Line& l, HookEvents& into) {
  int64_t v[9];
  if (!ToInts(l.f, 9, v)) return false;
  LoaderConfig c;
  c.pid = static_cast<int>(v[0]);
  c.rank = static_cast<int>(v[1]);
  c.batch_size = static_cast<int>(v[2]);
  c.num_workers = static_cast<int>(v[3]);
  c.pin_memory = v[4] != 0;
  c.prefetch_factor = static_cast<int>(v[5]);
  c.persistent_workers = v[6] != 0;
  c.dataset_length = v[7];
  c.gpu_available = v[8] != 0;
  into.loaders.push_back(c);
  return true;
}

// sync pid rank step sync_ns cpu_ns: follows its step record (stallscope.ddp)
bool ParseSync(const Line& l, HookEvents& into) {
  int64_t v[5];
  if (!ToInts(l.f, 5, v) || v[3] < 0 || v[4] < 0) return false;
  into.syncs.push_back({static_cast<int>(v[1]), v[2], v[3] / 1e9, v[4] / 1e9});
  return true;
}

// span pid rank kind start_ns end_ns: a checkpoint or an evaluation loop.
// A kind this build does not know (a newer hook's) is skipped, not malformed.
bool ParseSpan(const Line& l, HookEvents& into) {
  if (l.f.size() != 6) return false;
  const std::string_view kind = l.f[3];
  std::optional<int64_t> pid = ParseInt(l.f[1]), rank = ParseInt(l.f[2]);
  std::optional<int64_t> start = ParseInt(l.f[4]), end = ParseInt(l.f[5]);
  if (!pid || !rank || !start || !end || *end < *start || *rank < INT32_MIN || *rank > INT32_MAX ||
      *pid < 0 || *pid > INT32_MAX) {
    return false;
  }
  if (kind != "checkpoint" && kind != "eval" && kind != "profile") return true;
  into.spans.push_back({static_cast<int>(*pid), static_cast<int>(*rank), std::string(kind),
                        Seconds(*start, l.start_ns), Seconds(*end, l.start_ns)});
  return true;
}

// hostsync pid rank step sync_ns calls: follows its step record, where the
// loop's thread waited for the GPU in that step
bool ParseHostSync(const Line& l, HookEvents& into) {
  int64_t v[5];
  if (!ToInts(l.f, 5, v) || v[1] < INT32_MIN || v[1] > INT32_MAX || v[2] < 0 || v[3] < 0 ||
      v[4] < 0) {
    return false;
  }
  into.host_syncs.push_back({static_cast<int>(v[1]), v[2], v[3] / 1e9, v[4]});
  return true;
}

// bucket pid rank step index launch_ns done_ns: follows its sync record
bool ParseBucket(const Line& l, HookEvents& into) {
  int64_t v[6];
  if (!ToInts(l.f, 6, v) || v[3] < 0 || v[3] > INT32_MAX || v[5] < v[4]) return false;
  into.buckets.push_back({static_cast<int>(v[1]), v[2], static_cast<int>(v[3]),
                          Seconds(v[4], l.start_ns), Seconds(v[5], l.start_ns)});
  return true;
}

// hello pid rank local_rank world_size; a pid that names no single process
// (0, 1, negative, past int) is refused: ranks' pids may be signalled.
bool ParseHello(const Line& l, HookEvents& into) {
  int64_t v[4];
  if (!ToInts(l.f, 4, v) || v[0] <= 1 || v[0] > INT32_MAX) return false;
  into.pids.insert(static_cast<int>(v[0]));
  into.ranks.push_back({static_cast<int>(v[0]), static_cast<int>(v[1]), static_cast<int>(v[2]),
                        static_cast<int>(v[3]), ""});
  return true;
}

// host pid rank hostname: follows its hello
bool ParseHost(const Line& l, HookEvents& into) {
  std::optional<int64_t> pid = l.f.size() == 4 ? ParseInt(l.f[1]) : std::nullopt;
  std::optional<int64_t> rank = l.f.size() == 4 ? ParseInt(l.f[2]) : std::nullopt;
  if (!pid || !rank) return false;
  auto it = std::find_if(into.ranks.rbegin(), into.ranks.rend(),
                         [&](const RankInfo& r) { return r.pid == *pid; });
  if (it != into.ranks.rend()) {
    it->hostname = std::string(l.f[3]);
  } else {
    into.ranks.push_back(
        {static_cast<int>(*pid), static_cast<int>(*rank), 0, 1, std::string(l.f[3])});
  }
  return true;
}

// alloc_site pid rank t_ns bytes count file:line
// alloc_holder pid rank t_ns tensors bytes grew_bytes file:line|- description...
// alloc_note pid rank t_ns text...
bool ParseAllocation(const Line& l, HookEvents& into) {
  const std::string_view type = l.f[0];
  const std::vector<std::string_view>& f = l.f;
  const size_t ints = type == "alloc_site" ? 5 : type == "alloc_holder" ? 6 : 3;
  const size_t words = ints + 1 + (type == "alloc_note" ? 0 : 1);
  int64_t v[6];
  if (f.size() < words + (type == "alloc_site" ? 0 : 1)) return false;
  for (size_t i = 0; i < ints; ++i) {
    std::optional<int64_t> n = ParseInt(f[i + 1]);
    if (!n) return false;
    v[i] = *n;
  }
  AllocationReport a;
  a.pid = static_cast<int>(v[0]);
  a.rank = static_cast<int>(v[1]);
  a.t = Seconds(v[2], l.start_ns);
  // What follows the fixed fields is the rest of the line, spaces kept.
  auto rest_from = [&](size_t field) {
    size_t at = static_cast<size_t>(f[field].data() - l.text.data());
    return std::string(Trim(l.text.substr(at)));
  };
  if (type == "alloc_site") {
    a.kind = "site";
    a.bytes = v[3];
    a.count = v[4];
    a.where = rest_from(6);
  } else if (type == "alloc_holder") {
    a.kind = "holder";
    a.count = v[3];
    a.bytes = v[4];
    a.grew_bytes = v[5];
    std::string made(f[7]);
    for (size_t at; (at = made.find("%20")) != std::string::npos;) made.replace(at, 3, " ");
    if (made != "-") a.where = std::move(made);
    a.text = rest_from(8);
  } else {
    a.kind = "note";
    a.text = rest_from(4);
  }
  if (into.allocations.size() >= kMaxAllocationReports) return false;  // a garbled job
  into.allocations.push_back(std::move(a));
  return true;
}

// dropped pid rank count
bool ParseDropped(const Line& l, HookEvents& into) {
  int64_t v[3];
  if (!ToInts(l.f, 3, v)) return false;
  into.dropped += v[2];
  return true;
}

// The stop records (ParseStopRecord counts its own malformed lines).
bool ParseStop(const Line& l, HookEvents& into) {
  (void)ParseStopRecord(l.f[0], l.text, l.f, l.start_ns, into);
  return true;
}

using RecordParser = bool (*)(const Line&, HookEvents&);
struct RecordType {
  std::string_view name;
  RecordParser parse;
};
// Every record type docs/hook-protocol.md lists, and its parser.
constexpr RecordType kRecordTypes[] = {
    {"step", ParseStep},
    {"sync", ParseSync},
    {"bucket", ParseBucket},
    {"span", ParseSpan},
    {"hostsync", ParseHostSync},
    {"epoch", ParseEpoch},
    {"loader", ParseLoader},
    {"hello", ParseHello},
    {"host", ParseHost},
    {"script", ParseScript},
    {"alloc_site", ParseAllocation},
    {"alloc_holder", ParseAllocation},
    {"alloc_note", ParseAllocation},
    {"dropped", ParseDropped},
    {"exception", ParseStop},
    {"bye", ParseStop},
    {"exit", ParseStop},
    {"sent_signal", ParseStop},
};

}  // namespace

void ParseHookDatagram(std::string_view datagram, int64_t start_ns, HookEvents& into) {
  for (std::string_view text : SplitLines(datagram)) {
    if (Trim(text).empty()) continue;
    Line line{text, SplitFields(text), start_ns};
    for (const RecordType& type : kRecordTypes) {
      if (type.name != line.f[0]) continue;
      if (!type.parse(line, into)) ++into.malformed;
      break;
    }
    // Anything else: a record type from a newer hook; skipped on purpose.
  }
}

Result<HookReceiver> HookReceiver::Create() {
  const char* tmp = std::getenv("TMPDIR");
  const std::string base = tmp && *tmp ? tmp : "/tmp";
  // What a run killed with SIGKILL left here goes first (stale_sockets.h);
  // the pid in the name is what tells a stale directory from a live one.
  RemoveStaleHookDirectories(base);
  std::string pattern = base + "/stallscope-" + std::to_string(getpid()) + "-XXXXXX";
  std::vector<char> dir(pattern.begin(), pattern.end());
  dir.push_back('\0');
  if (mkdtemp(dir.data()) == nullptr) return Status::FromErrno(pattern, errno);
  Result<HookReceiver> made = CreateIn(dir.data());
  if (!made.ok()) rmdir(dir.data());  // the folder made here, empty
  return made;
}

Result<HookReceiver> HookReceiver::CreateIn(const std::string& directory) {
  HookReceiver r;
  r.directory_ = directory;
  r.socket_path_ = r.directory_ + "/hook.sock";
  struct sockaddr_un addr {};
  addr.sun_family = AF_UNIX;
  if (r.socket_path_.size() >= sizeof addr.sun_path) {
    return Status::InvalidArgument(r.socket_path_ + ": path too long for a Unix socket");
  }
  std::memcpy(addr.sun_path, r.socket_path_.c_str(), r.socket_path_.size() + 1);
  r.fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (r.fd_ < 0) return Status::FromErrno("socket", errno);
  if (bind(r.fd_, reinterpret_cast<struct sockaddr*>(&addr), sizeof addr) != 0) {
    const int err = errno;
    r.socket_path_.clear();  // not ours: left as it is, and the folder too
    r.directory_.clear();
    return Status::FromErrno(directory + "/hook.sock", err);
  }
  // A larger receive buffer rides out a job that sends while we sample.
  int size = 4 << 20;
  setsockopt(r.fd_, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
  return r;
}

HookReceiver::HookReceiver(HookReceiver&& other) noexcept
    : fd_(other.fd_),
      directory_(std::move(other.directory_)),
      socket_path_(std::move(other.socket_path_)) {
  other.fd_ = -1;
  other.directory_.clear();
  other.socket_path_.clear();
}

HookReceiver& HookReceiver::operator=(HookReceiver&& other) noexcept {
  std::swap(fd_, other.fd_);
  std::swap(directory_, other.directory_);
  std::swap(socket_path_, other.socket_path_);
  return *this;
}

HookReceiver::~HookReceiver() {
  if (fd_ >= 0) close(fd_);
  if (!socket_path_.empty()) unlink(socket_path_.c_str());
  if (!directory_.empty()) {
    RemoveStepRings(directory_);
    rmdir(directory_.c_str());
  }
}

void HookReceiver::Drain(int64_t start_ns, HookEvents& into) {
  char buffer[65536];
  for (;;) {
    ssize_t n = recv(fd_, buffer, sizeof buffer, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // EAGAIN: nothing more waiting
    }
    ParseHookDatagram(std::string_view(buffer, static_cast<size_t>(n)), start_ns, into);
  }
}

}  // namespace stallscope
