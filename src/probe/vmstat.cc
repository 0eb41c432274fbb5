#include "probe/vmstat.h"

#include <cstdint>
#include <string>

#include "core/file.h"
#include "core/text.h"

namespace stallscope {
namespace {

// Adds without wrapping: a fuzzed file with huge per-zone counters must not
// turn a large sum into a small one.
void SaturatingAdd(uint64_t& sum, uint64_t value) {
  sum = value > UINT64_MAX - sum ? UINT64_MAX : sum + value;
}

}  // namespace

Result<VmStat> ParseVmStat(std::string_view text, std::string_view source) {
  VmStat stat;
  int line_number = 0;
  int counters = 0;
  for (std::string_view line : SplitLines(text)) {
    ++line_number;
    std::string_view words[2];
    size_t count = SplitFieldsInto(line, words);
    if (count == 0) continue;
    if (count != 2) return Status::ParseError(source, line_number, "expected 'name value'");
    std::string_view name = words[0];
    std::optional<uint64_t> number = ParseUint(words[1]);
    if (!number) {
      return Status::ParseError(source, line_number, std::string(name) + ": not a number");
    }
    uint64_t value = *number;
    ++counters;
    if (name == "pgpgin") {
      stat.pgpgin_kib = value;
    } else if (name == "pgpgout") {
      stat.pgpgout_kib = value;
    } else if (name == "pswpin") {
      stat.pswpin_pages = value;
    } else if (name == "pswpout") {
      stat.pswpout_pages = value;
    } else if (name == "pgfault") {
      stat.pgfault = value;
    } else if (name == "pgmajfault") {
      stat.pgmajfault = value;
    } else if (name == "oom_kill") {
      stat.oom_kill = value;
    } else if (name == "nr_dirty") {
      stat.nr_dirty_pages = value;
    } else if (name == "nr_writeback") {
      stat.nr_writeback_pages = value;
    } else if (name == "pgscan_direct_throttle") {
      // A count of throttling events, not of pages scanned.
    } else if (StartsWith(name, "pgscan_kswapd")) {
      SaturatingAdd(stat.pgscan_kswapd_pages, value);
    } else if (StartsWith(name, "pgscan_direct")) {
      SaturatingAdd(stat.pgscan_direct_pages, value);
    } else if (StartsWith(name, "pgsteal_kswapd")) {
      SaturatingAdd(stat.pgsteal_kswapd_pages, value);
    } else if (StartsWith(name, "pgsteal_direct")) {
      SaturatingAdd(stat.pgsteal_direct_pages, value);
    } else if (StartsWith(name, "allocstall")) {
      SaturatingAdd(stat.allocstall, value);
    } else if (name == "workingset_refault" || name == "workingset_refault_anon" ||
               name == "workingset_refault_file") {
      // One counter before 5.9, split into anon and file after.
      SaturatingAdd(stat.workingset_refault, value);
    }
  }
  if (counters == 0) return Status::ParseError(source, 0, "no counters");
  return stat;
}

Result<VmStat> ReadVmStat(const Root& root) {
  std::string path = root.Path("/proc/vmstat");
  Result<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  return ParseVmStat(*text, path);
}

}  // namespace stallscope
