// Reading the files of /proc, /sys and /dev under a Root. Every probe reads
// its files through here so that (a) a probe takes a root directory and
// tests point it at a fixture tree, (b) reads are bounded, and (c) errors
// name the file. The pure layers (sample, plan, analyze, render) never
// include it (scripts/check-layers.py). Stateless; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace stallscope {

// The file system a probe reads: "/" on a live host, a fixture directory in
// tests. Path("/proc/meminfo") is the file under this root.
class Root {
 public:
  explicit Root(std::string dir = "/");
  std::string Path(std::string_view absolute) const;
  const std::string& dir() const { return dir_; }
  bool IsLive() const { return dir_ == "/"; }

 private:
  std::string dir_;
};

// Whole file, at most max_bytes (procfs files report size 0, so this reads
// until EOF). Larger files are an error rather than a silent truncation.
Result<std::string> ReadFile(const std::string& path, size_t max_bytes = 8 << 20);

// Opens a regular file read-only (O_CLOEXEC) and gives its descriptor and
// size; errors name the path. The caller owns the descriptor.
struct OpenedFile {
  int fd = -1;
  uint64_t size = 0;
};
Result<OpenedFile> OpenForReading(const std::string& path);

// First line of a small sysfs attribute, trailing whitespace removed.
Result<std::string> ReadAttribute(const std::string& path);
// Same, parsed as an unsigned integer; nullopt when missing or not a number.
std::optional<uint64_t> ReadUintAttribute(const std::string& path);

// Names in a directory, sorted, without "." and "..". Missing dir -> NotFound.
Result<std::vector<std::string>> ListDirectory(const std::string& path);

}  // namespace stallscope
