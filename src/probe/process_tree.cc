#include "probe/process_tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <initializer_list>
#include <limits>
#include <unordered_map>
#include <utility>

#include "core/file.h"
#include "core/read_log.h"
#include "core/text.h"
#include "probe/cpu_stat.h"

namespace stallscope {
namespace {

// Walks a text line by line without allocating; counts lines from 1.
class LineCursor {
 public:
  explicit LineCursor(std::string_view text) : rest_(text) {}
  bool Next(std::string_view* line) {
    if (rest_.empty()) return false;
    size_t end = rest_.find('\n');
    if (end == std::string_view::npos) end = rest_.size();
    *line = rest_.substr(0, end);
    rest_.remove_prefix(std::min(end + 1, rest_.size()));
    ++number_;
    return true;
  }
  int number() const { return number_; }

 private:
  std::string_view rest_;
  int number_ = 0;
};

// Splits "Key:   value" at the first ':'; false when there is none.
bool SplitKeyValue(std::string_view line, std::string_view* key, std::string_view* value) {
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) return false;
  *key = line.substr(0, colon);
  *value = line.substr(colon + 1);
  return true;
}

// "   3060 kB" -> 3060 * 1024.
std::optional<uint64_t> ParseKilobytes(std::string_view value) {
  value = Trim(value);
  if (value.size() < 3 || value.substr(value.size() - 2) != "kB") return std::nullopt;
  std::optional<uint64_t> kb = ParseUint(value.substr(0, value.size() - 2));
  if (!kb || *kb > std::numeric_limits<uint64_t>::max() / 1024) return std::nullopt;
  return *kb * 1024;
}

// A whole field (no spaces: the caller split on them) as a number; stat is
// parsed on every sample, so without ParseUint's trimming.
template <typename T>
bool ParseWhole(std::string_view field, T* value) {
  const char* end = field.data() + field.size();
  auto [ptr, ec] = std::from_chars(field.data(), end, *value);
  return ec == std::errc() && ptr == end && !field.empty();
}

std::optional<int32_t> ParsePid(std::string_view text) {
  std::optional<int64_t> value = ParseInt(text);
  if (!value || *value < 0 || *value > std::numeric_limits<int32_t>::max()) return std::nullopt;
  return static_cast<int32_t>(*value);
}

// Reads a whole /proc file into *out, reusing its capacity; at most max_bytes
// (the rest is dropped: only cmdline gets that long). Returns 0 or errno, so
// the caller can tell a vanished process (ENOENT, ESRCH) from a denied one.
int ReadProcFile(const std::string& path, std::string* out, size_t max_bytes = 1 << 20) {
  out->clear();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  size_t used = 0;
  for (;;) {
    if (out->size() < used + 4096) out->resize(std::max<size_t>(used + 4096, out->size() * 2));
    ssize_t n = ::read(fd, out->data() + used, out->size() - used);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      out->clear();
      return err;
    }
    if (n == 0) break;
    used += static_cast<size_t>(n);
    if (used >= max_bytes) {
      used = max_bytes;
      break;
    }
  }
  ::close(fd);
  out->resize(used);
  if (ReadLog* log = CurrentReadLog()) log->NoteFile(path, *out);
  return 0;
}

bool IsVanished(int err) { return err == ENOENT || err == ESRCH; }

// Builds "<proc>/<pid>/<file>" into a reused buffer.
class ProcPaths {
 public:
  explicit ProcPaths(const Root& root) : proc_(root.Path("/proc")) {}
  const std::string& proc() const { return proc_; }
  const std::string& Of(int32_t pid, std::string_view file) {
    path_.assign(proc_);
    path_ += '/';
    char digits[16];
    auto [end, ec] = std::to_chars(digits, digits + sizeof digits, pid);
    path_.append(digits, end);
    path_ += '/';
    path_ += file;
    return path_;
  }

 private:
  std::string proc_;
  std::string path_;
};

// Every numeric entry of /proc, in pid order.
Result<std::vector<int32_t>> ListPids(const std::string& proc) {
  DIR* dir = ::opendir(proc.c_str());
  if (dir == nullptr) return Status::FromErrno(proc, errno);
  std::vector<int32_t> pids;
  while (struct dirent* entry = ::readdir(dir)) {
    std::string_view name = entry->d_name;
    if (name.empty() || name.front() < '0' || name.front() > '9') continue;
    if (std::optional<int32_t> pid = ParsePid(name)) pids.push_back(*pid);
  }
  ::closedir(dir);
  std::sort(pids.begin(), pids.end());
  return pids;
}

struct Scan {
  std::vector<ProcStat> stats;  // pid order
  int vanished = 0;
  int unreadable = 0;
};

// Reads the stat of every process: the parent links and the CPU counters.
Result<Scan> ScanProcesses(ProcPaths& paths, std::string& buffer) {
  Result<std::vector<int32_t>> pids = ListPids(paths.proc());
  if (!pids.ok()) return pids.status();
  Scan scan;
  scan.stats.reserve(pids->size());
  for (int32_t pid : *pids) {
    const std::string& path = paths.Of(pid, "stat");
    int err = ReadProcFile(path, &buffer);
    if (err != 0) {
      ++(IsVanished(err) ? scan.vanished : scan.unreadable);
      continue;
    }
    // A zombie reaped between open and read leaves an empty file.
    if (buffer.empty()) {
      ++scan.vanished;
      continue;
    }
    Result<ProcStat> stat = ParseProcStat(buffer, path);
    if (!stat.ok()) return stat.status();
    scan.stats.push_back(std::move(stat).value());
  }
  return scan;
}

// Fills one sample from its scanned stat plus the other files. Returns the
// errno that made the process unusable (0 when the sample is complete).
Result<int> ReadMember(ProcPaths& paths, std::string& buffer, const ProcStat& stat,
                       const ProcessReadOptions& options, double ticks_per_second,
                       ProcessSample* sample) {
  const std::string& status_path = paths.Of(stat.pid, "status");
  int err = ReadProcFile(status_path, &buffer);
  if (err != 0) return err;
  if (buffer.empty()) return ESRCH;
  Result<ProcStatus> status = ParseProcStatus(buffer, status_path);
  if (!status.ok()) return status.status();

  sample->pid = stat.pid;
  sample->ppid = stat.ppid;
  sample->comm = stat.comm;
  sample->state = stat.state;
  sample->utime_ticks = stat.utime_ticks;
  sample->stime_ticks = stat.stime_ticks;
  sample->utime_seconds = static_cast<double>(stat.utime_ticks) / ticks_per_second;
  sample->stime_seconds = static_cast<double>(stat.stime_ticks) / ticks_per_second;
  sample->start_time_ticks = stat.start_time_ticks;
  sample->start_time_seconds = static_cast<double>(stat.start_time_ticks) / ticks_per_second;
  sample->threads = stat.threads;
  sample->rss_bytes = status->rss_bytes;
  sample->vm_peak_bytes = status->vm_peak_bytes;
  sample->vm_hwm_bytes = status->vm_hwm_bytes;
  sample->vm_lck_bytes = status->vm_lck_bytes;
  sample->vm_pin_bytes = status->vm_pin_bytes;
  sample->vm_swap_bytes = status->vm_swap_bytes;

  // The optional files: unreadable (other users' io, kernel threads'
  // smaps_rollup gives ESRCH) or malformed leaves the field absent.
  if (options.read_cmdline &&
      ReadProcFile(paths.Of(stat.pid, "cmdline"), &buffer, 256 << 10) == 0) {
    sample->cmdline = ParseCmdline(buffer);
  }
  if (options.read_io) {
    const std::string& path = paths.Of(stat.pid, "io");
    if (ReadProcFile(path, &buffer) == 0 && !buffer.empty()) {
      if (Result<ProcessIo> io = ParseProcessIo(buffer, path); io.ok()) sample->io = *io;
    }
  }
  if (options.read_schedstat) {
    const std::string& path = paths.Of(stat.pid, "schedstat");
    if (ReadProcFile(path, &buffer) == 0 && !buffer.empty()) {
      if (Result<Schedstat> sched = ParseSchedstat(buffer, path); sched.ok()) {
        sample->sched_cpu_ns = sched->cpu_ns;
        sample->run_delay_ns = sched->run_delay_ns;
      }
    }
  }
  if (options.read_pss) {
    const std::string& path = paths.Of(stat.pid, "smaps_rollup");
    if (ReadProcFile(path, &buffer) == 0 && !buffer.empty()) {
      if (Result<SmapsRollup> rollup = ParseSmapsRollup(buffer, path); rollup.ok()) {
        sample->pss_bytes = rollup->pss_bytes;
      }
    }
  }
  return 0;
}

double TicksPerSecond(const ProcessReadOptions& options) {
  int64_t ticks =
      options.clock_ticks_per_second > 0 ? options.clock_ticks_per_second : ClockTicksPerSecond();
  return static_cast<double>(ticks > 0 ? ticks : 100);
}

// Reads the members (indexes into scan.stats) into tree, in the given order.
Status ReadMembers(ProcPaths& paths, std::string& buffer, const Scan& scan,
                   const std::vector<size_t>& members, const ProcessReadOptions& options,
                   ProcessTree* tree) {
  double ticks_per_second = TicksPerSecond(options);
  tree->processes.reserve(members.size());
  for (size_t index : members) {
    ProcessSample sample;
    Result<int> err =
        ReadMember(paths, buffer, scan.stats[index], options, ticks_per_second, &sample);
    if (!err.ok()) return err.status();
    if (*err == 0) {
      tree->processes.push_back(std::move(sample));
    } else {
      ++(IsVanished(*err) ? tree->vanished : tree->unreadable);
    }
  }
  return Status::Ok();
}

}  // namespace

Result<ProcStat> ParseProcStat(std::string_view text, std::string_view source) {
  size_t open = text.find('(');
  size_t close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return Status::ParseError(source, 1, "no '(comm)' in stat line");
  }
  ProcStat stat;
  std::optional<int32_t> pid = ParsePid(text.substr(0, open));
  if (!pid) return Status::ParseError(source, 1, "pid before '(comm)' is not a number");
  stat.pid = *pid;
  stat.comm.assign(text.substr(open + 1, close - open - 1));

  // Fields after the comm, numbered from 0 (the state, stat's field 3).
  constexpr int kState = 0, kPpid = 1, kMinflt = 7, kMajflt = 9, kUtime = 11, kStime = 12,
                kThreads = 17, kStartTime = 19, kRss = 21;
  std::string_view rest = text.substr(close + 1);
  int index = 0;
  size_t i = 0;
  while (i < rest.size() && index <= kRss) {
    while (i < rest.size() && (rest[i] == ' ' || rest[i] == '\n')) ++i;
    size_t start = i;
    while (i < rest.size() && rest[i] != ' ' && rest[i] != '\n') ++i;
    if (i == start) break;
    std::string_view field = rest.substr(start, i - start);
    bool ok = true;
    switch (index) {
      case kState:
        ok = field.size() == 1;
        stat.state = field.front();
        break;
      case kPpid:
        ok = ParseWhole(field, &stat.ppid) && stat.ppid >= 0;
        break;
      case kMinflt:
        ok = ParseWhole(field, &stat.minor_faults);
        break;
      case kMajflt:
        ok = ParseWhole(field, &stat.major_faults);
        break;
      case kUtime:
        ok = ParseWhole(field, &stat.utime_ticks);
        break;
      case kStime:
        ok = ParseWhole(field, &stat.stime_ticks);
        break;
      case kStartTime:
        ok = ParseWhole(field, &stat.start_time_ticks);
        break;
      case kThreads:
        ok = ParseWhole(field, &stat.threads);
        break;
      case kRss: {
        uint64_t pages = 0;
        ok = ParseWhole(field, &pages);
        if (ok) stat.rss_pages = pages;
        break;
      }
      default:
        break;
    }
    if (!ok) {
      return Status::ParseError(source, 1,
                                "field " + std::to_string(index + 3) + " is malformed: '" +
                                    std::string(field.substr(0, 32)) + "'");
    }
    ++index;
  }
  if (index <= kStartTime) {
    return Status::ParseError(
        source, 1, "truncated: " + std::to_string(index + 2) + " fields, expected at least 22");
  }
  return stat;
}

namespace {

// One "Key: value" line a parser keeps: where its number goes, and a flag
// set when it was seen (for the lines a file must have).
struct KeyedField {
  std::string_view key;
  uint64_t* target;
  bool* seen = nullptr;
};

enum class ValueUnit { kCount, kKilobytes };

// The loop status, io and smaps_rollup share: "Key: value" lines, listed
// keys parsed (kB lines as bytes), the others skipped unparsed. A first line
// containing `header` (smaps_rollup's address range) is skipped too.
Status ParseKeyedLines(std::string_view text, std::string_view source,
                       std::initializer_list<KeyedField> fields, ValueUnit unit,
                       std::string_view header = {}) {
  LineCursor lines(text);
  std::string_view line, key, value;
  while (lines.Next(&line)) {
    if (line.empty()) continue;
    if (!header.empty() && lines.number() == 1 && line.find(header) != std::string_view::npos) {
      continue;
    }
    if (!SplitKeyValue(line, &key, &value)) {
      return Status::ParseError(source, lines.number(), "no ':' in line");
    }
    const KeyedField* field = nullptr;
    for (const KeyedField& f : fields) {
      if (f.key == key) field = &f;
    }
    if (field == nullptr) continue;
    std::optional<uint64_t> number =
        unit == ValueUnit::kKilobytes ? ParseKilobytes(value) : ParseUint(value);
    if (!number) {
      return Status::ParseError(
          source, lines.number(),
          std::string(key) +
              (unit == ValueUnit::kKilobytes ? " is not '<number> kB'" : " is not a number"));
    }
    *field->target = *number;
    if (field->seen) *field->seen = true;
  }
  return Status::Ok();
}

}  // namespace

Result<ProcStatus> ParseProcStatus(std::string_view text, std::string_view source) {
  // Only the memory lines matter. Kernel threads and zombies have none.
  ProcStatus status;
  uint64_t pin = 0;
  bool seen_pin = false;
  Status parsed = ParseKeyedLines(text, source,
                                  {{"VmRSS", &status.rss_bytes},
                                   {"VmPeak", &status.vm_peak_bytes},
                                   {"VmHWM", &status.vm_hwm_bytes},
                                   {"VmLck", &status.vm_lck_bytes},
                                   {"VmSwap", &status.vm_swap_bytes},
                                   {"VmPin", &pin, &seen_pin}},
                                  ValueUnit::kKilobytes);
  if (!parsed.ok()) return parsed;
  if (seen_pin) status.vm_pin_bytes = pin;  // VmPin appeared in Linux 3.2
  return status;
}

Result<ProcessIo> ParseProcessIo(std::string_view text, std::string_view source) {
  ProcessIo io;
  bool seen_rchar = false, seen_read = false, seen_write = false;
  Status parsed = ParseKeyedLines(text, source,
                                  {{"rchar", &io.rchar_bytes, &seen_rchar},
                                   {"wchar", &io.wchar_bytes},
                                   {"read_bytes", &io.read_bytes, &seen_read},
                                   {"write_bytes", &io.write_bytes, &seen_write},
                                   {"cancelled_write_bytes", &io.cancelled_write_bytes}},
                                  ValueUnit::kCount);
  if (!parsed.ok()) return parsed;
  if (!seen_rchar || !seen_read || !seen_write) {
    return Status::ParseError(source, 0, "truncated: no rchar, read_bytes or write_bytes line");
  }
  return io;
}

Result<SmapsRollup> ParseSmapsRollup(std::string_view text, std::string_view source) {
  SmapsRollup rollup;
  bool seen_pss = false;
  // The first line names the address range: "55aa...-7ffe... ---p ... [rollup]".
  Status parsed = ParseKeyedLines(text, source,
                                  {{"Rss", &rollup.rss_bytes},
                                   {"Pss", &rollup.pss_bytes, &seen_pss},
                                   {"SwapPss", &rollup.swap_pss_bytes}},
                                  ValueUnit::kKilobytes, "[rollup]");
  if (!parsed.ok()) return parsed;
  if (!seen_pss) return Status::ParseError(source, 0, "truncated: no Pss line");
  return rollup;
}

Result<Schedstat> ParseSchedstat(std::string_view text, std::string_view source) {
  std::vector<std::string_view> fields = SplitFields(text);
  std::optional<uint64_t> cpu = fields.size() >= 2 ? ParseUint(fields[0]) : std::nullopt;
  std::optional<uint64_t> delay = fields.size() >= 2 ? ParseUint(fields[1]) : std::nullopt;
  if (!cpu || !delay) return Status::ParseError(source, 1, "expected \"CPU_NS RUN_DELAY_NS ...\"");
  return Schedstat{*cpu, *delay};
}

std::vector<std::string> ParseCmdline(std::string_view text) {
  std::vector<std::string> args;
  while (!text.empty()) {
    size_t end = text.find('\0');
    if (end == std::string_view::npos) end = text.size();
    args.emplace_back(text.substr(0, end));
    text.remove_prefix(std::min(end + 1, text.size()));
  }
  return args;
}

namespace {

// The children of each process, from (ppid, index) pairs sorted by ppid then
// pid, so that a walk gives the members depth-first, siblings in pid order.
struct ParentIndex {
  explicit ParentIndex(const Scan& scan) : scan_(scan) {
    by_parent_.reserve(scan.stats.size());
    for (size_t i = 0; i < scan.stats.size(); ++i) {
      by_parent_.emplace_back(scan.stats[i].ppid, i);
      by_pid_.emplace(scan.stats[i].pid, i);
    }
    std::sort(by_parent_.begin(), by_parent_.end(), [&](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first
                                : scan_.stats[a.second].pid < scan_.stats[b.second].pid;
    });
  }

  // root_pid and its descendants, as indexes into scan.stats; empty when
  // root_pid is not listed.
  std::vector<size_t> Members(int32_t root_pid) const {
    std::vector<size_t> members;
    auto root = by_pid_.find(root_pid);
    if (root == by_pid_.end()) return members;
    std::vector<bool> visited(scan_.stats.size(), false);
    std::vector<size_t> stack = {root->second};
    while (!stack.empty()) {
      size_t index = stack.back();
      stack.pop_back();
      // Parent links form a cycle only in a corrupt fixture; visit once.
      if (visited[index]) continue;
      visited[index] = true;
      members.push_back(index);
      int32_t pid = scan_.stats[index].pid;
      auto first = std::lower_bound(by_parent_.begin(), by_parent_.end(), pid,
                                    [](const auto& entry, int32_t p) { return entry.first < p; });
      auto last = first;
      while (last != by_parent_.end() && last->first == pid) ++last;
      // Pushed in reverse so the lowest pid is visited first.
      for (auto it = last; it != first;) {
        --it;
        if (!visited[it->second]) stack.push_back(it->second);
      }
    }
    return members;
  }

 private:
  const Scan& scan_;
  std::vector<std::pair<int32_t, size_t>> by_parent_;
  std::unordered_map<int32_t, size_t> by_pid_;
};

}  // namespace

Result<ProcessTree> ReadProcessTree(const Root& root, int32_t root_pid,
                                    const ProcessReadOptions& options) {
  const Status not_found = Status::NotFound("pid " + std::to_string(root_pid));
  if (root_pid <= 0) return not_found;
  ProcPaths paths(root);
  std::string buffer;
  Result<Scan> scan = ScanProcesses(paths, buffer);
  if (!scan.ok()) return scan.status();
  std::vector<size_t> members = ParentIndex(*scan).Members(root_pid);
  if (members.empty()) return not_found;

  ProcessTree tree;
  tree.root_pid = root_pid;
  tree.vanished = scan->vanished;
  tree.unreadable = scan->unreadable;
  Status read = ReadMembers(paths, buffer, *scan, members, options, &tree);
  if (!read.ok()) return read;
  if (tree.processes.empty() || tree.processes.front().pid != root_pid) return not_found;
  return tree;
}

Result<std::vector<ProcessTree>> ReadProcessTrees(const Root& root,
                                                  std::span<const int32_t> root_pids,
                                                  const ProcessReadOptions& options) {
  std::vector<ProcessTree> trees(root_pids.size());
  if (root_pids.empty()) return trees;
  ProcPaths paths(root);
  std::string buffer;
  Result<Scan> scan = ScanProcesses(paths, buffer);
  if (!scan.ok()) return scan.status();
  const ParentIndex index(*scan);
  for (size_t i = 0; i < root_pids.size(); ++i) {
    ProcessTree& tree = trees[i];
    tree.root_pid = root_pids[i];
    std::vector<size_t> members =
        root_pids[i] > 0 ? index.Members(root_pids[i]) : std::vector<size_t>();
    Status read = ReadMembers(paths, buffer, *scan, members, options, &tree);
    if (!read.ok()) return read;
    // The root gone between the listing and the read: no tree.
    if (!tree.processes.empty() && tree.processes.front().pid != root_pids[i]) {
      tree.processes.clear();
    }
  }
  return trees;
}

Result<ProcessTree> ReadAllProcesses(const Root& root, const ProcessReadOptions& options) {
  ProcPaths paths(root);
  std::string buffer;
  Result<Scan> scan = ScanProcesses(paths, buffer);
  if (!scan.ok()) return scan.status();
  std::vector<size_t> members(scan->stats.size());
  for (size_t i = 0; i < members.size(); ++i) members[i] = i;
  ProcessTree tree;
  tree.vanished = scan->vanished;
  tree.unreadable = scan->unreadable;
  Status read = ReadMembers(paths, buffer, *scan, members, options, &tree);
  if (!read.ok()) return read;
  return tree;
}

}  // namespace stallscope
