// libFuzzer target for the per-process parsers of probe/process_tree.h: the
// first input byte picks stat, status, io, smaps_rollup, schedstat or
// cmdline; the rest
// is the file's text.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "probe/process_tree.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 6) {
    case 0: {
      stallscope::Result<stallscope::ProcStat> stat = stallscope::ParseProcStat(text, "stat");
      if (stat.ok() && stat->comm.size() > text.size()) __builtin_trap();
      break;
    }
    case 1:
      (void)stallscope::ParseProcStatus(text, "status");
      break;
    case 2:
      (void)stallscope::ParseProcessIo(text, "io");
      break;
    case 3:
      (void)stallscope::ParseSmapsRollup(text, "smaps_rollup");
      break;
    case 4: {
      // Two numbers or an error; never both a value and a failure.
      stallscope::Result<stallscope::Schedstat> sched =
          stallscope::ParseSchedstat(text, "schedstat");
      if (!sched.ok() && sched.status().message().empty()) __builtin_trap();
      break;
    }
    default: {
      size_t bytes = 0;
      for (const std::string& arg : stallscope::ParseCmdline(text)) bytes += arg.size();
      if (bytes > text.size()) __builtin_trap();
      break;
    }
  }
  return 0;
}
