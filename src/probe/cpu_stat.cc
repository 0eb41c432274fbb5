#include "probe/cpu_stat.h"

#include <unistd.h>

#include <algorithm>
#include <iterator>
#include <span>
#include <string>

#include "core/file.h"
#include "core/text.h"

namespace stallscope {
namespace {

constexpr uint64_t CpuTimes::*kColumns[] = {
    &CpuTimes::user_ticks,       &CpuTimes::nice_ticks,   &CpuTimes::system_ticks,
    &CpuTimes::idle_ticks,       &CpuTimes::iowait_ticks, &CpuTimes::irq_ticks,
    &CpuTimes::softirq_ticks,    &CpuTimes::steal_ticks,  &CpuTimes::guest_ticks,
    &CpuTimes::guest_nice_ticks,
};
constexpr size_t kMinColumns = 4;  // user nice system idle: every kernel since 2.4

// `words[0]` is "cpu" or "cpuN"; the rest are the tick columns, `count` in
// all (columns past words.size() are counted, not stored, and not used).
Result<CpuTimes> ParseCpuLine(std::span<const std::string_view> words, size_t count,
                              std::string_view source, int line_number) {
  CpuTimes times;
  std::string_view suffix = words[0].substr(3);
  if (!suffix.empty()) {
    std::optional<uint64_t> index = ParseUint(suffix);
    if (!index || *index > 1u << 20) {
      return Status::ParseError(source, line_number,
                                "bad CPU name '" + std::string(words[0]) + "'");
    }
    times.cpu = static_cast<int>(*index);
  }
  size_t columns = count - 1;
  if (columns < kMinColumns) {
    return Status::ParseError(source, line_number,
                              std::string(words[0]) + ": expected at least 4 time columns");
  }
  for (size_t i = 0; i < columns && i < std::size(kColumns) && i + 1 < words.size(); ++i) {
    std::optional<uint64_t> value = ParseUint(words[i + 1]);
    if (!value) {
      return Status::ParseError(
          source, line_number,
          std::string(words[0]) + ": column " + std::to_string(i + 1) + " is not a number");
    }
    times.*kColumns[i] = *value;
  }
  return times;
}

}  // namespace

Result<CpuStat> ParseCpuStat(std::string_view text, std::string_view source) {
  CpuStat stat;
  bool saw_total = false;
  int line_number = 0;
  for (std::string_view line : SplitLines(text)) {
    ++line_number;
    // The name and the columns a CPU line can have; the intr and softirq
    // lines (hundreds of numbers) are only counted.
    std::string_view words[1 + std::size(kColumns)];
    size_t count = SplitFieldsInto(line, words);
    if (count == 0) continue;
    std::string_view name = words[0];
    if (name.substr(0, 3) == "cpu") {
      Result<CpuTimes> times = ParseCpuLine(std::span(words, std::min(count, std::size(words))),
                                            count, source, line_number);
      if (!times.ok()) return times.status();
      if (times->cpu < 0) {
        stat.total = *times;
        saw_total = true;
      } else {
        stat.per_cpu.push_back(*times);
      }
      continue;
    }
    uint64_t* target = nullptr;
    if (name == "ctxt") target = &stat.context_switches;
    if (name == "processes") target = &stat.processes_created;
    if (name == "procs_running") target = &stat.procs_running;
    if (name == "procs_blocked") target = &stat.procs_blocked;
    if (name == "btime") target = &stat.boot_time_s;
    if (target == nullptr) continue;
    std::optional<uint64_t> value = count == 2 ? ParseUint(words[1]) : std::nullopt;
    if (!value) {
      return Status::ParseError(source, line_number,
                                std::string(name) + ": expected one unsigned number");
    }
    *target = *value;
  }
  if (!saw_total) return Status::ParseError(source, 0, "no 'cpu' line");
  return stat;
}

Result<CpuStat> ReadCpuStat(const Root& root) {
  std::string path = root.Path("/proc/stat");
  // /proc/stat grows with the CPU count and the interrupt list; a 1024-CPU
  // host prints a few hundred KiB, well under ReadFile's default cap.
  Result<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  return ParseCpuStat(*text, path);
}

long ClockTicksPerSecond() {
  long ticks = ::sysconf(_SC_CLK_TCK);
  return ticks > 0 ? ticks : 100;
}

}  // namespace stallscope
