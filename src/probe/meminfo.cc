#include "probe/meminfo.h"

#include <limits>
#include <string>

#include "core/file.h"
#include "core/text.h"

namespace stallscope {
namespace {

enum class Unit { kKib, kCount };

struct Field {
  std::string_view name;
  Unit unit;
  uint64_t MemInfo::*bytes;  // exactly one of bytes / optional_bytes is set
  std::optional<uint64_t> MemInfo::*optional_bytes;
};

// The table is the whole parser: adding a field is one line here and one in
// sample/memory.h.
constexpr Field kFields[] = {
    {"MemTotal", Unit::kKib, &MemInfo::total_bytes, nullptr},
    {"MemFree", Unit::kKib, &MemInfo::free_bytes, nullptr},
    {"MemAvailable", Unit::kKib, nullptr, &MemInfo::available_bytes},
    {"Buffers", Unit::kKib, &MemInfo::buffers_bytes, nullptr},
    {"Cached", Unit::kKib, &MemInfo::cached_bytes, nullptr},
    {"SwapCached", Unit::kKib, &MemInfo::swap_cached_bytes, nullptr},
    {"Active(file)", Unit::kKib, &MemInfo::active_file_bytes, nullptr},
    {"Inactive(file)", Unit::kKib, &MemInfo::inactive_file_bytes, nullptr},
    {"Active(anon)", Unit::kKib, &MemInfo::active_anon_bytes, nullptr},
    {"Inactive(anon)", Unit::kKib, &MemInfo::inactive_anon_bytes, nullptr},
    {"Unevictable", Unit::kKib, &MemInfo::unevictable_bytes, nullptr},
    {"Mlocked", Unit::kKib, &MemInfo::mlocked_bytes, nullptr},
    {"SwapTotal", Unit::kKib, &MemInfo::swap_total_bytes, nullptr},
    {"SwapFree", Unit::kKib, &MemInfo::swap_free_bytes, nullptr},
    {"Dirty", Unit::kKib, &MemInfo::dirty_bytes, nullptr},
    {"Writeback", Unit::kKib, &MemInfo::writeback_bytes, nullptr},
    {"AnonPages", Unit::kKib, &MemInfo::anon_pages_bytes, nullptr},
    {"Mapped", Unit::kKib, &MemInfo::mapped_bytes, nullptr},
    {"Shmem", Unit::kKib, &MemInfo::shmem_bytes, nullptr},
    {"SReclaimable", Unit::kKib, &MemInfo::slab_reclaimable_bytes, nullptr},
    {"SUnreclaim", Unit::kKib, &MemInfo::slab_unreclaimable_bytes, nullptr},
    {"PageTables", Unit::kKib, &MemInfo::page_tables_bytes, nullptr},
    {"CommitLimit", Unit::kKib, &MemInfo::commit_limit_bytes, nullptr},
    {"Committed_AS", Unit::kKib, &MemInfo::committed_as_bytes, nullptr},
    {"AnonHugePages", Unit::kKib, &MemInfo::anon_huge_pages_bytes, nullptr},
    {"HugePages_Total", Unit::kCount, &MemInfo::huge_pages_total, nullptr},
    {"HugePages_Free", Unit::kCount, &MemInfo::huge_pages_free, nullptr},
    {"HugePages_Rsvd", Unit::kCount, &MemInfo::huge_pages_reserved, nullptr},
    {"Hugepagesize", Unit::kKib, &MemInfo::huge_page_size_bytes, nullptr},
    {"Hugetlb", Unit::kKib, &MemInfo::hugetlb_bytes, nullptr},
};

const Field* FindField(std::string_view name) {
  for (const Field& field : kFields) {
    if (field.name == name) return &field;
  }
  return nullptr;
}

}  // namespace

Result<MemInfo> ParseMemInfo(std::string_view text, std::string_view source) {
  MemInfo info;
  bool saw_total = false;
  int line_number = 0;
  for (std::string_view line : SplitLines(text)) {
    ++line_number;
    if (Trim(line).empty()) continue;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      return Status::ParseError(source, line_number, "expected 'Name: value'");
    }
    const Field* field = FindField(Trim(line.substr(0, colon)));
    if (field == nullptr) continue;
    std::string_view words[2];
    size_t count = SplitFieldsInto(line.substr(colon + 1), words);
    std::string_view name = field->name;
    size_t expected_words = field->unit == Unit::kKib ? 2 : 1;
    if (count != expected_words || (field->unit == Unit::kKib && words[1] != "kB")) {
      return Status::ParseError(source, line_number,
                                std::string(name) + ": expected " +
                                    (field->unit == Unit::kKib ? "'<number> kB'" : "a count"));
    }
    std::optional<uint64_t> number = ParseUint(words[0]);
    if (!number) {
      return Status::ParseError(source, line_number, std::string(name) + ": not a number");
    }
    uint64_t value = *number;
    if (field->unit == Unit::kKib) {
      if (value > std::numeric_limits<uint64_t>::max() / 1024) {
        return Status::ParseError(source, line_number,
                                  std::string(name) + ": value overflows bytes");
      }
      value *= 1024;
    }
    if (field->bytes != nullptr) {
      info.*(field->bytes) = value;
    } else {
      info.*(field->optional_bytes) = value;
    }
    if (field->bytes == &MemInfo::total_bytes) saw_total = true;
  }
  if (!saw_total) return Status::ParseError(source, 0, "no MemTotal line");
  return info;
}

Result<MemInfo> ReadMemInfo(const Root& root) {
  std::string path = root.Path("/proc/meminfo");
  Result<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  return ParseMemInfo(*text, path);
}

}  // namespace stallscope
