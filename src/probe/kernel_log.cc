// The kernel log: OOM kills, Xids, port events (see kernel_log.h).
#include "probe/kernel_log.h"

#include <fcntl.h>
#include <sys/klog.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>

#include "core/file.h"
#include "core/read_log.h"
#include "core/text.h"

namespace stallscope {
namespace {

constexpr std::string_view kKilled = "Killed process ";

bool IsDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// "PRI,SEQ,USEC,FLAGS;message" (FLAGS and further fields are optional).
bool SplitKmsgRecord(std::string_view line, std::optional<double>& t, std::string_view& message) {
  size_t semi = line.find(';');
  if (semi == std::string_view::npos) return false;
  std::string_view head = line.substr(0, semi);
  size_t c1 = head.find(',');
  if (c1 == std::string_view::npos || !IsDigits(head.substr(0, c1))) return false;
  size_t c2 = head.find(',', c1 + 1);
  if (c2 == std::string_view::npos || !IsDigits(head.substr(c1 + 1, c2 - c1 - 1))) return false;
  size_t c3 = head.find(',', c2 + 1);
  std::string_view usec = head.substr(c2 + 1, c3 == std::string_view::npos ? c3 : c3 - c2 - 1);
  std::optional<uint64_t> us = IsDigits(usec) ? ParseUint(usec) : std::nullopt;
  if (!us) return false;
  t = static_cast<double>(*us) / 1e6;
  message = line.substr(semi + 1);
  return true;
}

// "[  190.838925] message" (dmesg), "[Tue Dec  1 ...] message" (dmesg -T).
bool SplitDmesgLine(std::string_view line, std::optional<double>& t, std::string_view& message) {
  std::string_view s = Trim(line);
  if (s.empty() || s.front() != '[') return false;
  size_t close = s.find(']');
  if (close == std::string_view::npos) return false;
  std::string_view stamp = Trim(s.substr(1, close - 1));
  size_t dot = stamp.find('.');
  if (dot != std::string_view::npos && IsDigits(stamp.substr(0, dot)) &&
      IsDigits(stamp.substr(dot + 1))) {
    t = ParseDouble(stamp);
  }
  message = Trim(s.substr(close + 1));
  return true;
}

// "anon-rss:101888kB" anywhere after the comm: the value in bytes.
uint64_t KilobytesField(std::string_view fields, std::string_view name) {
  for (size_t at = fields.find(name); at != std::string_view::npos;
       at = fields.find(name, at + 1)) {
    if (at > 0 && fields[at - 1] != ' ' && fields[at - 1] != ',') continue;
    size_t begin = at + name.size();
    if (begin >= fields.size() || fields[begin] != ':') continue;
    ++begin;
    size_t end = begin;
    while (end < fields.size() && fields[end] >= '0' && fields[end] <= '9') ++end;
    if (end == begin || fields.substr(end, 2) != "kB") continue;
    std::optional<uint64_t> kib = ParseUint(fields.substr(begin, end - begin));
    if (!kib || *kib > (UINT64_MAX >> 10)) return 0;
    return *kib << 10;
  }
  return 0;
}

std::optional<OomKill> ParseKill(std::string_view message) {
  size_t at = message.find(kKilled);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = message.substr(at + kKilled.size());
  size_t digits = 0;
  while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9') ++digits;
  std::optional<int64_t> pid =
      digits > 0 && digits <= 9 ? ParseInt(rest.substr(0, digits)) : std::nullopt;
  if (!pid || *pid <= 0) return std::nullopt;
  OomKill kill;
  kill.pid = static_cast<int>(*pid);
  rest.remove_prefix(digits);
  std::string_view fields = rest;
  if (rest.substr(0, 2) == " (") {
    // COMM may hold spaces and ')'; the fields start at ") total-vm:".
    size_t end = rest.find(") total-vm:", 2);
    if (end == std::string_view::npos) end = rest.rfind(')');
    if (end != std::string_view::npos && end >= 2) {
      kill.comm = std::string(rest.substr(2, end - 2));
      fields = rest.substr(end + 1);
    }
  }
  kill.total_vm_bytes = KilobytesField(fields, "total-vm");
  kill.anon_rss_bytes = KilobytesField(fields, "anon-rss");
  kill.file_rss_bytes = KilobytesField(fields, "file-rss");
  kill.shmem_rss_bytes = KilobytesField(fields, "shmem-rss");
  kill.cgroup = message.substr(0, at).find("Memory cgroup out of memory") != std::string_view::npos;
  kill.message = std::string(Trim(message));
  return kill;
}

// "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen
// off the bus." (older drivers: "NVRM: Xid (0000:01:00): 13, ...").
std::optional<GpuXid> ParseXid(std::string_view message) {
  constexpr std::string_view kXid = "NVRM: Xid (";
  size_t at = message.find(kXid);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = message.substr(at + kXid.size());
  size_t close = rest.find("): ");
  if (close == std::string_view::npos || close > 32) return std::nullopt;
  std::string_view bus = rest.substr(0, close);
  if (bus.substr(0, 4) == "PCI:") bus.remove_prefix(4);
  rest.remove_prefix(close + 3);
  size_t digits = 0;
  while (digits < rest.size() && digits < 5 &&
         std::isdigit(static_cast<unsigned char>(rest[digits])))
    ++digits;
  if (digits == 0 ||
      (digits < rest.size() && std::isdigit(static_cast<unsigned char>(rest[digits]))))
    return std::nullopt;
  GpuXid xid;
  xid.xid = static_cast<int>(*ParseInt(rest.substr(0, digits)));
  for (char c : bus) xid.bus_id += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  rest.remove_prefix(digits);
  if (size_t p = rest.find("pid="); p != std::string_view::npos) {
    std::string_view v = rest.substr(p + 4);
    size_t n = 0;
    while (n < v.size() && n < 9 && std::isdigit(static_cast<unsigned char>(v[n]))) ++n;
    if (n > 0) xid.pid = static_cast<int>(*ParseInt(v.substr(0, n)));
  }
  if (size_t p = rest.find("name="); p != std::string_view::npos) {
    std::string_view v = rest.substr(p + 5);
    v = v.substr(0, v.find(','));
    if (v != "<unknown>") xid.process = std::string(Trim(v));
  }
  xid.message = std::string(Trim(message));
  return xid;
}

// An mlx5 / InfiniBand port whose link went down or lost its cable:
// "mlx5_core 0000:5e:00.0 ens1f0np0: Link down", "mlx5_core 0000:5e:00.0:
// Port module event: module 0, Cable unplugged", "ib0: lost carrier".
std::optional<PortLogEvent> ParsePortEvent(std::string_view message) {
  static constexpr std::string_view kDown[] = {"Link down",    "link down",       "Link is Down",
                                               "lost carrier", "Cable unplugged", "module absent",
                                               "PORT_DOWN"};
  bool down = false;
  for (std::string_view needle : kDown) down |= message.find(needle) != std::string_view::npos;
  if (!down) return std::nullopt;
  std::string_view s = Trim(message);
  bool rdma =
      s.substr(0, 4) == "mlx5" || s.substr(0, 4) == "mlx4" || s.substr(0, 10) == "infiniband" ||
      (s.size() > 2 && s.substr(0, 2) == "ib" && std::isdigit(static_cast<unsigned char>(s[2])));
  if (!rdma) return std::nullopt;
  PortLogEvent event;
  // The device: the first PCI address on the line, else its first word.
  for (size_t i = 0; i + 12 <= s.size(); ++i) {
    std::string_view candidate = s.substr(i, 12);
    if (candidate[4] == ':' && candidate[7] == ':' && candidate[10] == '.' &&
        (i == 0 || s[i - 1] == ' ')) {
      event.device = std::string(candidate);
      break;
    }
  }
  if (event.device.empty()) {
    std::string_view word = s.substr(0, s.find_first_of(" :"));
    event.device = std::string(word);
  }
  event.message = std::string(s);
  return event;
}

// "<6>[  190.838925] message": klogctl's priority prefix dropped.
std::string_view DropPriority(std::string_view line) {
  if (line.size() > 2 && line.front() == '<') {
    size_t close = line.find('>');
    if (close != std::string_view::npos && close <= 4 && IsDigits(line.substr(1, close - 1)))
      return line.substr(close + 1);
  }
  return line;
}

}  // namespace

KernelLogEvents ParseKernelLog(std::string_view text) {
  KernelLogEvents events;
  size_t number = 0;
  for (std::string_view line : SplitLines(text)) {
    ++number;
    const bool kill_line = line.find(kKilled) != std::string_view::npos;
    const bool xid_line = line.find("NVRM: Xid") != std::string_view::npos;
    const bool port_line =
        !kill_line && !xid_line &&
        (line.find("mlx") != std::string_view::npos || line.find("ib") != std::string_view::npos ||
         line.find("infiniband") != std::string_view::npos);
    if (!kill_line && !xid_line && !port_line) continue;
    line = DropPriority(line);
    std::optional<double> t;
    std::string_view message = line;
    if (!SplitKmsgRecord(line, t, message) && !SplitDmesgLine(line, t, message)) {
      // journalctl -k: "Dec 01 11:50:00 host kernel: message".
      if (size_t k = line.find(" kernel: "); k != std::string_view::npos) {
        message = line.substr(k + 9);
      }
    }
    if (kill_line) {
      if (std::optional<OomKill> kill = ParseKill(message)) {
        kill->monotonic_seconds = t;
        kill->line = number;
        events.kills.push_back(std::move(*kill));
      }
    } else if (xid_line) {
      if (std::optional<GpuXid> xid = ParseXid(message)) {
        xid->monotonic_seconds = t;
        xid->line = number;
        events.xids.push_back(std::move(*xid));
      }
    } else if (std::optional<PortLogEvent> event = ParsePortEvent(message)) {
      event->monotonic_seconds = t;
      event->line = number;
      events.port_events.push_back(std::move(*event));
    }
  }
  return events;
}

std::vector<OomKill> ParseOomKills(std::string_view text) { return ParseKernelLog(text).kills; }

std::vector<GpuXid> ParseXids(std::string_view text) { return ParseKernelLog(text).xids; }

namespace {

// The words of a line a capture keeps (docs/captures.md): what the parser
// reads events from, and the OOM killer's report around them.
constexpr std::string_view kCaptureWords[] = {
    "NVRM", "Xid", "mlx5", "oom", "Out of memory", "Killed process", "Link", "link"};

// `complete` with every line that says nothing the probes read blanked, so
// the line numbers in the findings stay those of the node.
std::string LinesThatMatter(std::string_view complete) {
  std::string out;
  for (std::string_view rest = complete; !rest.empty();) {
    size_t end = rest.find('\n');
    std::string_view line = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    bool keep = false;
    for (std::string_view word : kCaptureWords) keep = keep || line.find(word) != line.npos;
    if (keep) out += line;
    out += '\n';
  }
  return out;
}

// Appends what `complete` (whole lines) holds at or after `since`, its line
// numbers counted on from `lines_before`.
void Collect(std::string_view complete, std::optional<double> since, size_t& lines_before,
             KernelLogEvents& into) {
  if (ReadLog* log = CurrentReadLog()) log->NoteWritten("/dev/kmsg+", LinesThatMatter(complete));
  KernelLogEvents found = ParseKernelLog(complete);
  auto kept = [&](const std::optional<double>& t) { return !(since && t && *t < *since); };
  for (OomKill& k : found.kills) {
    if (!kept(k.monotonic_seconds)) continue;
    k.line += lines_before;
    into.kills.push_back(std::move(k));
  }
  for (GpuXid& x : found.xids) {
    if (!kept(x.monotonic_seconds)) continue;
    x.line += lines_before;
    into.xids.push_back(std::move(x));
  }
  for (PortLogEvent& e : found.port_events) {
    if (!kept(e.monotonic_seconds)) continue;
    e.line += lines_before;
    into.port_events.push_back(std::move(e));
  }
  lines_before += static_cast<size_t>(std::count(complete.begin(), complete.end(), '\n'));
}

// The live ring buffer through klogctl(2), for a host without /dev/kmsg.
Result<KernelLogEvents> ReadKlogctl(std::optional<double> since) {
  int size = klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, nullptr, 0);
  if (size <= 0) return Status::FromErrno("cannot read the kernel log (klogctl)", errno);
  std::string buffer(static_cast<size_t>(std::min(size, 64 << 20)), '\0');
  int n = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, buffer.data(), static_cast<int>(buffer.size()));
  if (n < 0) return Status::FromErrno("cannot read the kernel log (klogctl)", errno);
  buffer.resize(static_cast<size_t>(n));
  KernelLogEvents events;
  size_t lines = 0;
  Collect(buffer, since, lines, events);
  events.source = "klogctl";
  return events;
}

}  // namespace

Result<KernelLogEvents> ReadKernelLog(const Root& root, std::optional<double> since) {
  const std::string path = root.Path("/dev/kmsg");
  int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    if (error == ENOENT && root.IsLive()) return ReadKlogctl(since);
    return Status::FromErrno("cannot read the kernel log " + path, error);
  }
  // /dev/kmsg gives one record a read, a fixture file any chunk: keep whole
  // lines, judge each as it completes, so memory stays one record's worth
  // plus the events.
  KernelLogEvents events;
  events.source = path;
  std::string pending;
  size_t lines_before = 0;
  char buffer[16384];
  Status failure;
  // A ring buffer is a few MiB at most; something that never ends (a
  // device bound over /dev/kmsg) is read no further than this.
  constexpr uint64_t kMaxBytes = 64ull << 20;
  uint64_t total = 0;
  for (; total < kMaxBytes;) {
    ssize_t n = read(fd, buffer, sizeof buffer);
    if (n > 0) {
      total += static_cast<uint64_t>(n);
      pending.append(buffer, static_cast<size_t>(n));
      size_t last = pending.rfind('\n');
      if (last != std::string::npos) {
        Collect(std::string_view(pending).substr(0, last + 1), since, lines_before, events);
        pending.erase(0, last + 1);
      }
      if (pending.size() > (1u << 20)) pending.clear();  // no newline in 1 MiB: not a log
      continue;
    }
    if (n == 0 || errno == EAGAIN) break;
    if (errno == EINTR || errno == EPIPE) continue;  // EPIPE: a record was overwritten
    failure = Status::FromErrno("cannot read the kernel log " + path, errno);
    break;
  }
  close(fd);
  if (!failure.ok()) return failure;
  if (!pending.empty()) Collect(pending, since, lines_before, events);
  return events;
}

Result<std::vector<OomKill>> ReadOomKills(const Root& root, std::optional<double> since) {
  Result<KernelLogEvents> events = ReadKernelLog(root, since);
  if (!events.ok()) return events.status();
  return std::move(events->kills);
}

}  // namespace stallscope
