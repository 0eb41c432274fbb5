// Reading and tokenizing the text files of /proc and /sys, and the small
// string helpers every layer shares (StartsWith, JoinCommand).
//
// Every probe reads its files through here so that (a) a probe takes a root
// directory and tests point it at a fixture tree, (b) reads are bounded, and
// (c) errors name the file. Parsers take the text plus its source name, never
// a path, so fuzz targets drive them without touching the file system.
// Stateless; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
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

// Splits on any run of spaces/tabs; no empty fields.
std::vector<std::string_view> SplitFields(std::string_view line);
// The same fields into `out`, without allocating (for parsers run every
// sample). Returns how many fields the line has, which may be more than
// out.size(): those past it are counted, not stored.
size_t SplitFieldsInto(std::string_view line, std::span<std::string_view> out);
// Splits into lines without the trailing '\n'; a last line without newline counts.
std::vector<std::string_view> SplitLines(std::string_view text);

std::optional<uint64_t> ParseUint(std::string_view text);
std::optional<int64_t> ParseInt(std::string_view text);
std::optional<double> ParseDouble(std::string_view text);
std::string_view Trim(std::string_view text);

// Whether `text` begins with `prefix`. Inline: parsers call it on every line
// they read. (The NCCL log parser keeps its own overload for literals.)
inline bool StartsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

// A command's words joined by single spaces, as it is shown and recorded:
// {"python", "train.py"} -> "python train.py". No quoting.
std::string JoinCommand(const std::vector<std::string>& argv);

}  // namespace stallscope
