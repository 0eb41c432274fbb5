#include "probe/cgroup.h"

#include <unistd.h>

#include <algorithm>

#include "core/file.h"
#include "core/read_log.h"
#include "core/text.h"

namespace stallscope {
namespace {

constexpr std::string_view kMountV2 = "/sys/fs/cgroup";
constexpr std::string_view kMountV1Memory = "/sys/fs/cgroup/memory";
// v1 prints "unlimited" as PAGE_COUNTER_MAX * PAGE_SIZE, which depends on
// the page size (9223372036854771712 with 4 KiB, ...710272 with 64 KiB);
// no real limit comes near 4 EiB.
constexpr uint64_t kUnlimitedAtLeast = uint64_t{1} << 62;

uint64_t Subtract(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

std::optional<uint64_t> Min(std::optional<uint64_t> a, std::optional<uint64_t> b) {
  if (!a) return b;
  if (!b) return a;
  return std::min(*a, *b);
}

// A cgroup path joined under a mount; nullopt if it tries to leave it.
std::optional<std::string> Join(std::string_view mount, std::string_view path) {
  std::string out(mount);
  size_t start = 0;
  while (start < path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    std::string_view segment = path.substr(start, end - start);
    if (segment == "..") return std::nullopt;
    if (!segment.empty() && segment != ".") {
      out += '/';
      out += segment;
    }
    start = end + 1;
  }
  return out;
}

// Reads a file of the cgroup. Missing -> nullopt (the kernel lacks the
// feature); other failures and parse errors -> the error.
Result<std::optional<std::string>> ReadOptional(const Root& root, const std::string& file) {
  Result<std::string> text = ReadFile(root.Path(file), 1 << 20);
  if (text.ok()) return std::optional<std::string>(std::move(*text));
  if (text.status().IsNotFound()) return std::optional<std::string>();
  return text.status();
}

Result<std::optional<uint64_t>> ReadNumber(const Root& root, const std::string& file) {
  Result<std::optional<std::string>> text = ReadOptional(root, file);
  if (!text.ok()) return text.status();
  if (!*text) return std::optional<uint64_t>();
  std::optional<uint64_t> value = ParseUint(**text);
  if (!value) return Status::ParseError(root.Path(file), 1, "not a number");
  return value;
}

// Limit files: outer nullopt = file missing, inner nullopt = unlimited.
Result<std::optional<std::optional<uint64_t>>> ReadLimit(const Root& root,
                                                         const std::string& file) {
  Result<std::optional<std::string>> text = ReadOptional(root, file);
  if (!text.ok()) return text.status();
  if (!*text) return std::optional<std::optional<uint64_t>>();
  Result<std::optional<uint64_t>> limit = ParseCgroupLimit(**text, root.Path(file));
  if (!limit.ok()) return limit.status();
  return std::optional<std::optional<uint64_t>>(*limit);
}

Result<CgroupCounters> ReadCounters(const Root& root, const std::string& file) {
  Result<std::optional<std::string>> text = ReadOptional(root, file);
  if (!text.ok()) return text.status();
  if (!*text) return CgroupCounters{};
  return ParseCgroupCounters(**text, root.Path(file));
}

uint64_t Counter(const CgroupCounters& counters, std::string_view key) {
  auto it = counters.find(key);
  return it == counters.end() ? 0 : it->second;
}

std::optional<uint64_t> OptionalCounter(const CgroupCounters& counters, std::string_view key) {
  auto it = counters.find(key);
  if (it == counters.end()) return std::nullopt;
  return it->second;
}

// The first of `path` then the mount root whose `probe_file` can be read.
std::optional<std::string> FindDirectory(const Root& root, std::string_view mount,
                                         std::string_view path, std::string_view probe_file) {
  std::vector<std::string> candidates;
  if (std::optional<std::string> joined = Join(mount, path)) candidates.push_back(*joined);
  if (candidates.empty() || candidates.back() != mount) candidates.emplace_back(mount);
  for (const std::string& dir : candidates) {
    NoteLinksRead(root.Path(dir + "/" + std::string(probe_file)));
    if (::access(root.Path(dir + "/" + std::string(probe_file)).c_str(), R_OK) == 0) return dir;
  }
  return std::nullopt;
}

Status FillV2(const Root& root, const std::string& mount, CgroupMemory& memory) {
  const std::string& dir = memory.directory;
  Result<std::optional<uint64_t>> current = ReadNumber(root, dir + "/memory.current");
  if (!current.ok()) return current.status();
  memory.usage_bytes = current->value_or(0);
  // A parent's memory.max binds too (a pod's limit above its containers'):
  // the effective limit is the smallest on the way up to the mount.
  for (std::string level = dir;;) {
    Result<std::optional<std::optional<uint64_t>>> max = ReadLimit(root, level + "/memory.max");
    if (!max.ok()) return max.status();
    if (*max) memory.limit_bytes = Min(memory.limit_bytes, **max);
    if (level.size() <= mount.size()) break;
    level.resize(level.rfind('/'));
  }
  Result<std::optional<std::optional<uint64_t>>> high = ReadLimit(root, dir + "/memory.high");
  if (!high.ok()) return high.status();
  if (*high) memory.high_bytes = **high;
  Result<std::optional<uint64_t>> peak = ReadNumber(root, dir + "/memory.peak");
  if (!peak.ok()) return peak.status();
  memory.peak_bytes = *peak;

  Result<CgroupCounters> stat = ReadCounters(root, dir + "/memory.stat");
  if (!stat.ok()) return stat.status();
  memory.anon_bytes = Counter(*stat, "anon");
  memory.file_bytes = Counter(*stat, "file");
  memory.inactive_file_bytes = Counter(*stat, "inactive_file");
  memory.active_file_bytes = Counter(*stat, "active_file");
  memory.shmem_bytes = Counter(*stat, "shmem");
  memory.dirty_bytes = Counter(*stat, "file_dirty");
  memory.writeback_bytes = Counter(*stat, "file_writeback");
  memory.working_set_bytes = Subtract(memory.usage_bytes, memory.inactive_file_bytes);

  Result<std::optional<uint64_t>> swap = ReadNumber(root, dir + "/memory.swap.current");
  if (!swap.ok()) return swap.status();
  memory.swap_usage_bytes = *swap;
  Result<std::optional<std::optional<uint64_t>>> swap_max =
      ReadLimit(root, dir + "/memory.swap.max");
  if (!swap_max.ok()) return swap_max.status();
  if (*swap_max) memory.swap_limit_bytes = **swap_max;

  Result<CgroupCounters> events = ReadCounters(root, dir + "/memory.events");
  if (!events.ok()) return events.status();
  memory.oom_events = OptionalCounter(*events, "oom");
  memory.oom_kill_count = OptionalCounter(*events, "oom_kill");
  memory.max_events = OptionalCounter(*events, "max");
  return Status::Ok();
}

Status FillV1(const Root& root, CgroupMemory& memory) {
  const std::string& dir = memory.directory;
  Result<std::optional<uint64_t>> usage = ReadNumber(root, dir + "/memory.usage_in_bytes");
  if (!usage.ok()) return usage.status();
  memory.usage_bytes = usage->value_or(0);
  Result<std::optional<uint64_t>> peak = ReadNumber(root, dir + "/memory.max_usage_in_bytes");
  if (!peak.ok()) return peak.status();
  memory.peak_bytes = *peak;
  Result<std::optional<uint64_t>> failcnt = ReadNumber(root, dir + "/memory.failcnt");
  if (!failcnt.ok()) return failcnt.status();
  memory.max_events = *failcnt;

  Result<CgroupCounters> stat = ReadCounters(root, dir + "/memory.stat");
  if (!stat.ok()) return stat.status();
  // total_* include descendants, which is what the limit counts.
  auto total = [&](std::string_view key) {
    std::optional<uint64_t> value = OptionalCounter(*stat, "total_" + std::string(key));
    return value ? *value : Counter(*stat, key);
  };
  memory.anon_bytes = total("rss");
  memory.file_bytes = total("cache");
  memory.inactive_file_bytes = total("inactive_file");
  memory.active_file_bytes = total("active_file");
  memory.shmem_bytes = total("shmem");
  memory.dirty_bytes = total("dirty");
  memory.writeback_bytes = total("writeback");
  memory.working_set_bytes = Subtract(memory.usage_bytes, memory.inactive_file_bytes);

  // hierarchical_memory_limit is already the smallest limit up the tree.
  Result<std::optional<std::optional<uint64_t>>> limit =
      ReadLimit(root, dir + "/memory.limit_in_bytes");
  if (!limit.ok()) return limit.status();
  if (*limit) memory.limit_bytes = **limit;
  std::optional<uint64_t> hierarchical = OptionalCounter(*stat, "hierarchical_memory_limit");
  if (hierarchical && *hierarchical < kUnlimitedAtLeast) {
    memory.limit_bytes = Min(memory.limit_bytes, hierarchical);
  }

  // Swap is accounted only with swapaccount=1: then memory.stat has
  // total_swap and memory.memsw.* exist. total_swap is exact; memsw minus
  // usage would mix two reads taken at different moments.
  memory.swap_usage_bytes = OptionalCounter(*stat, "total_swap");
  if (!memory.swap_usage_bytes) memory.swap_usage_bytes = OptionalCounter(*stat, "swap");
  if (!memory.swap_usage_bytes) {
    Result<std::optional<uint64_t>> memsw = ReadNumber(root, dir + "/memory.memsw.usage_in_bytes");
    if (!memsw.ok()) return memsw.status();
    if (*memsw) memory.swap_usage_bytes = Subtract(**memsw, memory.usage_bytes);
  }
  Result<std::optional<std::optional<uint64_t>>> memsw_limit =
      ReadLimit(root, dir + "/memory.memsw.limit_in_bytes");
  if (!memsw_limit.ok()) return memsw_limit.status();
  if (*memsw_limit && **memsw_limit && memory.limit_bytes) {
    memory.swap_limit_bytes = Subtract(***memsw_limit, *memory.limit_bytes);
  }

  Result<CgroupCounters> oom = ReadCounters(root, dir + "/memory.oom_control");
  if (!oom.ok()) return oom.status();
  memory.under_oom = Counter(*oom, "under_oom") != 0;
  memory.oom_kill_count = OptionalCounter(*oom, "oom_kill");
  return Status::Ok();
}

// Path segments that name a runtime's cgroup, and the runtime. kubepods
// comes first: a pod's container also has its runtime's name in its path.
struct RuntimeMark {
  std::string_view mark;
  std::string_view runtime;
};
constexpr RuntimeMark kRuntimeMarks[] = {
    {"kubepods", "kubernetes"},   {"libpod", "podman"}, {"crio", "cri-o"},
    {"containerd", "containerd"}, {"docker", "docker"}, {"lxc", "lxc"},
};

// The runtime named by a cgroup path, or "". Segments ending in ".service"
// are the daemons themselves (docker.service, containerd.service) running
// on the host, not containers.
std::string_view RuntimeInPath(std::string_view path) {
  size_t start = 0;
  std::string_view found;
  while (start < path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    std::string_view segment = path.substr(start, end - start);
    start = end + 1;
    if (segment.size() >= 8 && segment.substr(segment.size() - 8) == ".service") continue;
    for (const RuntimeMark& mark : kRuntimeMarks) {
      if (segment.find(mark.mark) == std::string_view::npos) continue;
      if (mark.runtime == "kubernetes") return mark.runtime;
      if (found.empty()) found = mark.runtime;
    }
  }
  return found;
}

}  // namespace

Result<std::vector<CgroupEntry>> ParseProcCgroup(std::string_view text, std::string_view source) {
  std::vector<CgroupEntry> entries;
  int line_number = 0;
  for (std::string_view line : SplitLines(text)) {
    ++line_number;
    if (Trim(line).empty()) continue;
    size_t first = line.find(':');
    size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos) {
      return Status::ParseError(source, line_number, "expected 'id:controllers:path'");
    }
    CgroupEntry entry;
    std::optional<uint64_t> id = ParseUint(line.substr(0, first));
    if (!id) return Status::ParseError(source, line_number, "hierarchy id is not a number");
    entry.hierarchy_id = *id;
    std::string_view controllers = line.substr(first + 1, second - first - 1);
    size_t start = 0;
    while (start < controllers.size()) {
      size_t comma = controllers.find(',', start);
      if (comma == std::string_view::npos) comma = controllers.size();
      if (comma > start) entry.controllers.emplace_back(controllers.substr(start, comma - start));
      start = comma + 1;
    }
    // The path runs to the end of the line: it may itself contain ':'.
    entry.path = std::string(line.substr(second + 1));
    if (entry.path.empty() || entry.path.front() != '/') {
      return Status::ParseError(source, line_number, "path does not start with '/'");
    }
    entries.push_back(std::move(entry));
  }
  if (entries.empty()) return Status::ParseError(source, 0, "no cgroup lines");
  return entries;
}

Result<CgroupCounters> ParseCgroupCounters(std::string_view text, std::string_view source) {
  CgroupCounters counters;
  int line_number = 0;
  for (std::string_view line : SplitLines(text)) {
    ++line_number;
    std::vector<std::string_view> words = SplitFields(line);
    if (words.empty()) continue;
    if (words.size() != 2) return Status::ParseError(source, line_number, "expected 'key value'");
    std::optional<uint64_t> value = ParseUint(words[1]);
    if (!value) {
      return Status::ParseError(source, line_number, std::string(words[0]) + ": not a number");
    }
    counters[std::string(words[0])] = *value;
  }
  return counters;
}

Result<std::optional<uint64_t>> ParseCgroupLimit(std::string_view text, std::string_view source) {
  std::string_view value = Trim(text);
  if (value == "max") return std::optional<uint64_t>();
  std::optional<uint64_t> bytes = ParseUint(value);
  if (!bytes) return Status::ParseError(source, 1, "expected a number of bytes or 'max'");
  if (*bytes >= kUnlimitedAtLeast) return std::optional<uint64_t>();
  return bytes;
}

Result<CgroupMemory> ReadCgroupMemory(const Root& root, std::string_view pid) {
  std::string cgroup_file = root.Path("/proc/" + std::string(pid) + "/cgroup");
  Result<std::string> text = ReadFile(cgroup_file, 1 << 20);
  if (!text.ok()) return text.status();
  Result<std::vector<CgroupEntry>> entries = ParseProcCgroup(*text, cgroup_file);
  if (!entries.ok()) return entries.status();

  const CgroupEntry* v1 = nullptr;
  const CgroupEntry* v2 = nullptr;
  for (const CgroupEntry& entry : *entries) {
    if (std::find(entry.controllers.begin(), entry.controllers.end(), "memory") !=
        entry.controllers.end()) {
      v1 = &entry;
    }
    if (entry.hierarchy_id == 0 && entry.controllers.empty()) v2 = &entry;
  }
  CgroupMemory memory;
  if (v1 != nullptr) {
    memory.version = CgroupVersion::kV1;
    memory.cgroup_path = v1->path;
    std::optional<std::string> dir =
        FindDirectory(root, kMountV1Memory, v1->path, "memory.usage_in_bytes");
    if (!dir) {
      return Status::NotFound("no readable v1 memory cgroup for " + v1->path + " under " +
                              root.Path(kMountV1Memory));
    }
    memory.directory = *dir;
    Status status = FillV1(root, memory);
    if (!status.ok()) return status;
    return memory;
  }
  if (v2 != nullptr) {
    memory.version = CgroupVersion::kV2;
    memory.cgroup_path = v2->path;
    std::optional<std::string> dir = FindDirectory(root, kMountV2, v2->path, "memory.current");
    if (!dir) {
      return Status::NotFound("no readable v2 memory cgroup for " + v2->path + " under " +
                              root.Path(kMountV2));
    }
    memory.directory = *dir;
    Status status = FillV2(root, std::string(kMountV2), memory);
    if (!status.ok()) return status;
    return memory;
  }
  return Status::NotFound(cgroup_file + ": no memory controller");
}

ContainerInfo ClassifyContainer(const ContainerHints& hints) {
  ContainerInfo info;
  std::string_view from_cgroup;
  std::string cgroup_clue;
  for (const CgroupEntry& entry : hints.cgroups) {
    std::string_view runtime = RuntimeInPath(entry.path);
    if (runtime.empty()) continue;
    if (from_cgroup.empty() || (runtime == "kubernetes" && from_cgroup != runtime)) {
      from_cgroup = runtime;
      cgroup_clue = std::to_string(entry.hierarchy_id) + ":";
      for (size_t i = 0; i < entry.controllers.size(); ++i) {
        cgroup_clue += (i ? "," : "") + entry.controllers[i];
      }
      cgroup_clue += ":" + entry.path;
    }
  }
  if (hints.container_variable) {
    info.evidence.push_back("/proc/1/environ: container=" + *hints.container_variable);
  }
  if (hints.containerenv_exists) info.evidence.push_back("/run/.containerenv exists");
  if (hints.dockerenv_exists) info.evidence.push_back("/.dockerenv exists");
  if (!from_cgroup.empty()) info.evidence.push_back("/proc/self/cgroup: " + cgroup_clue);
  info.in_container = !info.evidence.empty();

  // The orchestrator says more than the engine under it, and PID 1's own
  // word more than a marker file.
  if (from_cgroup == "kubernetes") {
    info.runtime = "kubernetes";
  } else if (hints.container_variable && !hints.container_variable->empty()) {
    info.runtime = *hints.container_variable;
  } else if (hints.containerenv_exists) {
    info.runtime = "podman";
  } else if (hints.dockerenv_exists) {
    info.runtime = "docker";
  } else {
    info.runtime = std::string(from_cgroup);
  }
  return info;
}

std::optional<std::string> FindContainerVariable(std::string_view environ) {
  constexpr std::string_view kName = "container=";
  size_t start = 0;
  while (start < environ.size()) {
    size_t end = environ.find('\0', start);
    if (end == std::string_view::npos) end = environ.size();
    std::string_view entry = environ.substr(start, end - start);
    if (entry.substr(0, kName.size()) == kName) return std::string(entry.substr(kName.size()));
    start = end + 1;
  }
  return std::nullopt;
}

ContainerInfo ReadContainerInfo(const Root& root) {
  ContainerHints hints;
  hints.dockerenv_exists = ::access(root.Path("/.dockerenv").c_str(), F_OK) == 0;
  hints.containerenv_exists = ::access(root.Path("/run/.containerenv").c_str(), F_OK) == 0;
  // A capture keeps that they exist, not what they hold (podman's names the image).
  if (hints.dockerenv_exists) NoteWrittenForCapture("/.dockerenv", "");
  if (hints.containerenv_exists) NoteWrittenForCapture("/run/.containerenv", "");
  std::string cgroup_file = root.Path("/proc/self/cgroup");
  if (Result<std::string> text = ReadFile(cgroup_file, 1 << 20); text.ok()) {
    if (auto entries = ParseProcCgroup(*text, cgroup_file); entries.ok()) {
      hints.cgroups = std::move(*entries);
    }
  }
  // Readable only by root or PID 1's owner; unreadable is one clue fewer.
  if (Result<std::string> environ = ReadFile(root.Path("/proc/1/environ"), 1 << 20); environ.ok()) {
    hints.container_variable = FindContainerVariable(*environ);
  }
  return ClassifyContainer(hints);
}

}  // namespace stallscope
