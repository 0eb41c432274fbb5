// Samples of processes: one ProcessSample per process, read from
// /proc/PID/{stat,status,cmdline,io,smaps_rollup}, and a ProcessTree (a root
// process and every descendant found at that moment, or every process of the
// host). Plain data with sizes in bytes and CPU time both in clock ticks and
// seconds; the reader in probe/process_tree.h fills them. Thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace stallscope {

// /proc/PID/io: bytes a process moved. rchar/wchar count every read()/write()
// (page cache hits, pipes, sockets); read_bytes/write_bytes count what reached
// the block layer, so rchar much larger than read_bytes means a warm cache.
struct ProcessIo {
  uint64_t rchar_bytes = 0;
  uint64_t wchar_bytes = 0;
  uint64_t read_bytes = 0;
  uint64_t write_bytes = 0;
  uint64_t cancelled_write_bytes = 0;
};

struct ProcessSample {
  int32_t pid = 0;
  int32_t ppid = 0;
  std::string comm;                  // kernel's 15-char name, may hold spaces and ')'
  std::vector<std::string> cmdline;  // argv; empty for kernel threads and zombies
  char state = '?';                  // R, S, D, Z, T, I, ...
  uint64_t utime_ticks = 0;          // user CPU time, in clock ticks
  uint64_t stime_ticks = 0;          // system CPU time, in clock ticks
  double utime_seconds = 0;
  double stime_seconds = 0;
  uint64_t start_time_ticks = 0;  // since boot, in clock ticks
  double start_time_seconds = 0;  // since boot
  int64_t threads = 0;
  uint64_t rss_bytes = 0;                // VmRSS
  std::optional<uint64_t> pss_bytes;     // smaps_rollup Pss; absent when unreadable
  uint64_t vm_peak_bytes = 0;            // VmPeak: largest virtual size
  uint64_t vm_hwm_bytes = 0;             // VmHWM: largest RSS (the memory watermark)
  uint64_t vm_lck_bytes = 0;             // VmLck: mlock()ed
  std::optional<uint64_t> vm_pin_bytes;  // VmPin: pinned (e.g. RDMA, CUDA); newer kernels
  uint64_t vm_swap_bytes = 0;            // VmSwap
  std::optional<ProcessIo> io;           // absent when /proc/PID/io is unreadable
  // /proc/PID/schedstat of the process's main thread (the one a DataLoader
  // worker or a rank does its work in): time on a CPU and time spent
  // runnable, waiting for one (the run queue), in nanoseconds. Absent when
  // unreadable or not sampled (a kernel without CONFIG_SCHED_INFO).
  std::optional<uint64_t> sched_cpu_ns;
  std::optional<uint64_t> run_delay_ns;

  // CPU time used so far, user + system.
  uint64_t cpu_ticks() const { return utime_ticks + stime_ticks; }
  // argv joined with single spaces, as ps shows it; "[comm]" when empty.
  std::string cmdline_text() const {
    if (cmdline.empty()) return "[" + comm + "]";
    std::string text;
    for (const std::string& arg : cmdline) {
      if (!text.empty()) text += ' ';
      text += arg;
    }
    return text;
  }
};

// A root process and its descendants (root first, then depth-first in pid
// order), or with root_pid 0 every process of the host in pid order.
struct ProcessTree {
  int32_t root_pid = 0;
  std::vector<ProcessSample> processes;
  // Processes listed in /proc that were gone before they could be read
  // (ENOENT/ESRCH), and ones whose stat/status could not be read (EACCES...).
  // Neither is an error: processes come and go between two reads.
  int vanished = 0;
  int unreadable = 0;
};

// Sums over a set of processes; what the memory and CPU rules look at.
struct ProcessTotals {
  int processes = 0;
  uint64_t rss_bytes = 0;
  uint64_t pss_bytes = 0;     // over the processes whose PSS was read
  int pss_missing = 0;        // processes without a PSS reading
  uint64_t pinned_bytes = 0;  // VmPin + VmLck (what page-locked host memory costs)
  uint64_t swap_bytes = 0;
  uint64_t cpu_ticks = 0;  // utime + stime
  double cpu_seconds = 0;
  uint64_t read_bytes = 0;  // block-layer reads, over processes whose io was read
  uint64_t write_bytes = 0;
};

// Pure sums; no file system.
inline ProcessTotals SumProcesses(std::span<const ProcessSample> processes) {
  ProcessTotals totals;
  for (const ProcessSample& p : processes) {
    ++totals.processes;
    totals.rss_bytes += p.rss_bytes;
    if (p.pss_bytes) {
      totals.pss_bytes += *p.pss_bytes;
    } else {
      ++totals.pss_missing;
    }
    totals.pinned_bytes += p.vm_lck_bytes + p.vm_pin_bytes.value_or(0);
    totals.swap_bytes += p.vm_swap_bytes;
    totals.cpu_ticks += p.cpu_ticks();
    totals.cpu_seconds += p.utime_seconds + p.stime_seconds;
    if (p.io) {
      totals.read_bytes += p.io->read_bytes;
      totals.write_bytes += p.io->write_bytes;
    }
  }
  return totals;
}
inline ProcessTotals SumTree(const ProcessTree& tree) { return SumProcesses(tree.processes); }

}  // namespace stallscope
