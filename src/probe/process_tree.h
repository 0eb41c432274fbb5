// The process tree of a training job: a root PID and every descendant found
// at the moment of the call (so DataLoader workers and torchrun children that
// started since the last call appear, and ones that exited are gone), or every
// process of the host for host-wide sums such as pinned memory.
//
// Each call scans /proc/[0-9]*/stat once for the parent links, then reads
// status, cmdline, io and smaps_rollup of the members, each file once.
// Processes that exit between the scan and the read are counted in
// ProcessTree::vanished, never an error. The parsers are pure (text in,
// struct out) and are what the fuzzers drive. Stateless; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/file.h"
#include "core/status.h"
#include "sample/process.h"

namespace stallscope {

// The fields of /proc/PID/stat a sample uses.
struct ProcStat {
  int32_t pid = 0;
  std::string comm;  // between the first '(' and the last ')'
  char state = '?';
  int32_t ppid = 0;
  uint64_t utime_ticks = 0;
  uint64_t stime_ticks = 0;
  uint64_t minor_faults = 0;  // fields 10 and 12: a copy-on-write break is a minor fault
  uint64_t major_faults = 0;
  int64_t threads = 0;
  uint64_t start_time_ticks = 0;
  // Field 24, resident pages: VmRSS of status divided by the page size, from
  // the same counters. Absent when the line ends after the start time.
  std::optional<uint64_t> rss_pages;
};

// The memory lines of /proc/PID/status (kB in the file, bytes here). Kernel
// threads and zombies have none of them: all stay 0.
struct ProcStatus {
  uint64_t rss_bytes = 0;
  uint64_t vm_peak_bytes = 0;
  uint64_t vm_hwm_bytes = 0;
  uint64_t vm_lck_bytes = 0;
  std::optional<uint64_t> vm_pin_bytes;  // VmPin appeared in Linux 3.2
  uint64_t vm_swap_bytes = 0;
};

// /proc/PID/smaps_rollup (Linux 4.14+): proportional set size, the fair share
// of memory shared between a job's processes (fork()ed DataLoader workers).
struct SmapsRollup {
  uint64_t rss_bytes = 0;
  uint64_t pss_bytes = 0;
  uint64_t swap_pss_bytes = 0;
};

// Parsers: text of one file; source names it in errors ("/proc/42/stat").
Result<ProcStat> ParseProcStat(std::string_view text, std::string_view source);
Result<ProcStatus> ParseProcStatus(std::string_view text, std::string_view source);
Result<ProcessIo> ParseProcessIo(std::string_view text, std::string_view source);
Result<SmapsRollup> ParseSmapsRollup(std::string_view text, std::string_view source);
// /proc/PID/schedstat: "CPU_NS RUN_DELAY_NS TIMESLICES\n".
struct Schedstat {
  uint64_t cpu_ns = 0;
  uint64_t run_delay_ns = 0;
};
Result<Schedstat> ParseSchedstat(std::string_view text, std::string_view source);
// NUL-separated argv; a missing final NUL (truncated, or argv rewritten by
// setproctitle) still ends the last argument. Never fails.
std::vector<std::string> ParseCmdline(std::string_view text);

struct ProcessReadOptions {
  int64_t clock_ticks_per_second = 0;  // 0: ClockTicksPerSecond() of probe/cpu_stat.h
  // The optional files. Host-wide sums of pinned memory need none of them;
  // smaps_rollup is the costly one (the kernel walks every mapping).
  bool read_cmdline = true;
  bool read_io = true;
  bool read_pss = true;
  // /proc/PID/schedstat (time on a CPU and waiting for one): off by default,
  // the samplers of `run` read it through kept descriptors instead.
  bool read_schedstat = false;
};

// root_pid and its descendants under root's /proc. NotFound("pid N") when
// root_pid does not exist; ParseError when a member's stat/status is malformed.
Result<ProcessTree> ReadProcessTree(const Root& root, int32_t root_pid,
                                    const ProcessReadOptions& options = {});
// The trees of several roots from one listing of /proc (the exporter reads
// every reporting rank's tree at each scrape): one tree per root_pids entry,
// in that order; a root that does not exist gives a tree with root_pid set
// and no processes. A process in two trees (a root below another) is read
// once per tree.
Result<std::vector<ProcessTree>> ReadProcessTrees(const Root& root,
                                                  std::span<const int32_t> root_pids,
                                                  const ProcessReadOptions& options = {});
// Every process under root's /proc (root_pid 0 in the result), in pid order.
Result<ProcessTree> ReadAllProcesses(const Root& root, const ProcessReadOptions& options = {});

}  // namespace stallscope
