#include "probe/smaps.h"

#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <optional>

#include "core/file.h"
#include "core/text.h"

namespace stallscope {
namespace {

// "7f12a0000000-7f12a0400000 rw-p ...": the area's bounds, or nullopt for a
// line that is not an area's header (a "Key:   N kB" line).
std::optional<std::pair<uint64_t, uint64_t>> AreaHeader(std::string_view line) {
  size_t dash = line.find('-');
  size_t space = line.find(' ');
  if (dash == std::string_view::npos || dash == 0 || space == std::string_view::npos ||
      dash > space) {
    return std::nullopt;
  }
  uint64_t start = 0, end = 0;
  const char* b = line.data();
  auto [p1, e1] = std::from_chars(b, b + dash, start, 16);
  auto [p2, e2] = std::from_chars(b + dash + 1, b + space, end, 16);
  if (e1 != std::errc() || p1 != b + dash || e2 != std::errc() || p2 != b + space) {
    return std::nullopt;
  }
  return std::make_pair(start, end);
}

// "AnonHugePages:      2048 kB" -> bytes; nullopt when malformed.
std::optional<uint64_t> KibField(std::string_view rest) {
  rest = Trim(rest);
  if (!EndsWith(rest, " kB")) return std::nullopt;
  std::optional<uint64_t> kib = ParseUint(Trim(rest.substr(0, rest.size() - 3)));
  if (!kib || *kib > (uint64_t{1} << 50)) return std::nullopt;
  return *kib * 1024;
}

}  // namespace

Result<SmapsArea> ParseSmapsAreaAt(std::string_view text, uint64_t address,
                                   std::string_view source) {
  bool inside = false;
  SmapsArea area;
  size_t line_no = 0;
  for (std::string_view line : SplitLines(text)) {
    ++line_no;
    if (auto header = AreaHeader(line)) {
      if (inside) return area;  // the next area begins: ours is read
      if (header->first <= address && address < header->second) {
        inside = true;
        area.start = header->first;
        area.end = header->second;
      }
      continue;
    }
    if (!inside) continue;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view key = line.substr(0, colon);
    uint64_t* field = key == "Rss"             ? &area.rss_bytes
                      : key == "AnonHugePages" ? &area.anon_huge_pages_bytes
                                               : nullptr;
    if (field == nullptr) continue;
    std::optional<uint64_t> bytes = KibField(line.substr(colon + 1));
    if (!bytes) {
      return Status::InvalidArgument(
          fmt::format("{}: line {}: cannot read '{}'", source, line_no, line.substr(0, 80)));
    }
    *field = *bytes;
  }
  if (inside) return area;
  return Status::NotFound(fmt::format("{}: no area holds address {:#x}", source, address));
}

Result<SmapsArea> ReadOwnSmapsAreaAt(uint64_t address) {
  // smaps of a large process runs to megabytes: read it whole, once.
  Result<std::string> text = ReadFile("/proc/self/smaps", 64 << 20);
  if (!text.ok()) return text.status();
  return ParseSmapsAreaAt(*text, address, "/proc/self/smaps");
}

std::string ParseThpMode(std::string_view text) {
  size_t open = text.find('[');
  if (open == std::string_view::npos) return "";
  size_t close = text.find(']', open);
  if (close == std::string_view::npos || close - open > 16) return "";
  return std::string(text.substr(open + 1, close - open - 1));
}

std::string ReadThpMode() {
  Result<std::string> text = ReadFile("/sys/kernel/mm/transparent_hugepage/enabled", 4096);
  return text.ok() ? ParseThpMode(*text) : "";
}

}  // namespace stallscope
