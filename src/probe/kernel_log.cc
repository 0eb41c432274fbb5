// The OOM killer's reports in the kernel log (see kernel_log.h).
#include "probe/kernel_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "core/file.h"
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

}  // namespace

std::vector<OomKill> ParseOomKills(std::string_view text) {
  std::vector<OomKill> kills;
  size_t number = 0;
  for (std::string_view line : SplitLines(text)) {
    ++number;
    if (line.find(kKilled) == std::string_view::npos) continue;
    std::optional<double> t;
    std::string_view message = line;
    if (!SplitKmsgRecord(line, t, message) && !SplitDmesgLine(line, t, message)) {
      // journalctl -k: "Dec 01 11:50:00 host kernel: message".
      if (size_t k = line.find(" kernel: "); k != std::string_view::npos) {
        message = line.substr(k + 9);
      }
    }
    std::optional<OomKill> kill = ParseKill(message);
    if (!kill) continue;
    kill->monotonic_seconds = t;
    kill->line = number;
    kills.push_back(std::move(*kill));
  }
  return kills;
}

Result<std::vector<OomKill>> ReadOomKills(const Root& root, std::optional<double> since) {
  const std::string path = root.Path("/dev/kmsg");
  int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno("cannot read the kernel log " + path, errno);
  // /dev/kmsg gives one record a read, a fixture file any chunk: keep whole
  // lines, judge each as it completes, so memory stays one record's worth
  // plus the kills.
  std::vector<OomKill> kills;
  std::string pending;
  size_t lines_before = 0;
  auto judge = [&](std::string_view complete) {
    for (OomKill& k : ParseOomKills(complete)) {
      if (since && k.monotonic_seconds && *k.monotonic_seconds < *since) continue;
      k.line += lines_before;
      kills.push_back(std::move(k));
    }
    lines_before += static_cast<size_t>(std::count(complete.begin(), complete.end(), '\n'));
  };
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
        judge(std::string_view(pending).substr(0, last + 1));
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
  if (!pending.empty()) judge(pending);
  return kills;
}

}  // namespace stallscope
