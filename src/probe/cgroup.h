// The memory cgroup a process lives in (v1 or v2) and whether it runs in a
// container.
//
// The parsers are pure (text in, struct out) so tests and the fuzzer drive
// them without a file system; the readers take a Root. Inside a container
// /proc/self/cgroup often names a path ("/" or the host's
// "/kubepods/.../<id>") that does not exist under the container's
// /sys/fs/cgroup, where the container's own cgroup is the mount root: the
// reader tries the path first, then the mount root. Stateless; thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/file.h"
#include "core/status.h"
#include "sample/container.h"
#include "sample/memory.h"

namespace stallscope {

// One line of /proc/<pid>/cgroup: "hierarchy-id:controllers:path". v2 is
// the line with id 0 and no controllers; v1 lines list theirs ("memory",
// "cpu,cpuacct", "name=systemd").
struct CgroupEntry {
  uint64_t hierarchy_id = 0;
  std::vector<std::string> controllers;
  std::string path;  // starts with '/'
};

// A line without two ':', a non-numeric id or a path not starting with '/'
// is a ParseError naming `source` and the line.
Result<std::vector<CgroupEntry>> ParseProcCgroup(std::string_view text, std::string_view source);

// Flat keyed files: memory.stat, memory.events, memory.oom_control ("key
// <unsigned number>" per line). A line that is not two fields or a value
// that is not a number is a ParseError naming `source` and the line.
using CgroupCounters = std::map<std::string, uint64_t, std::less<>>;
Result<CgroupCounters> ParseCgroupCounters(std::string_view text, std::string_view source);

// A limit file (memory.max, memory.swap.max, memory.limit_in_bytes, ...):
// nullopt when unlimited, i.e. "max" (v2) or at least 2^62 (v1 prints
// PAGE_COUNTER_MAX in bytes, 9223372036854771712 with 4 KiB pages).
Result<std::optional<uint64_t>> ParseCgroupLimit(std::string_view text, std::string_view source);

// The memory cgroup of `pid` ("self" or a number) under root's
// /sys/fs/cgroup. v1 when /proc/<pid>/cgroup has a "memory" controller
// line (also on hybrid hosts), else v2. NotFound when no directory of the
// cgroup can be read (no memory controller, or the host's root cgroup,
// which has no memory.current): the caller then uses the host's numbers.
Result<CgroupMemory> ReadCgroupMemory(const Root& root, std::string_view pid = "self");

// The clues ReadContainerInfo gathers, so that the judgement is pure.
struct ContainerHints {
  bool dockerenv_exists = false;                  // /.dockerenv (docker)
  bool containerenv_exists = false;               // /run/.containerenv (podman)
  std::vector<CgroupEntry> cgroups;               // /proc/self/cgroup
  std::optional<std::string> container_variable;  // container= in /proc/1/environ
};

ContainerInfo ClassifyContainer(const ContainerHints& hints);

// The value of container= in a NUL-separated environ block, if any.
std::optional<std::string> FindContainerVariable(std::string_view environ);

// Never fails: a file it cannot read is just one clue fewer.
ContainerInfo ReadContainerInfo(const Root& root);

}  // namespace stallscope
