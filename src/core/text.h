// Tokenizing and parsing text (the files of /proc and /sys, logs, flags),
// and the small string helpers every layer shares (StartsWith, JoinCommand).
// Parsers take the text plus its source name, never a path, so fuzz targets
// drive them without touching the file system; reading files is
// core/file.h's. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace stallscope {

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
// Whether `text` ends with `suffix`.
inline bool EndsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// A command's words joined by single spaces, as it is shown and recorded:
// {"python", "train.py"} -> "python train.py". No quoting.
std::string JoinCommand(const std::vector<std::string>& argv);

// Every piece between separators, empty ones included: "a,,b" -> a "" b.
std::vector<std::string_view> Split(std::string_view text, char separator);
// `parts` with `separator` between each two: {"a", "b"}, ", " -> "a, b".
std::string Join(const std::vector<std::string>& parts, std::string_view separator);

}  // namespace stallscope
