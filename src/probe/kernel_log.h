// The kernel log probe: the OOM killer's reports (which process it ended and
// how much memory it held then, as `dmesg | grep -i 'killed process'` shows
// them), NVIDIA Xid errors and mlx5/InfiniBand link-down messages
// (sample/kernel_events.h), read in one pass. `run` reads the kills after a
// job died of SIGKILL, so a job killed before the first sample still has its
// peak; `doctor` and `run` read the Xids and port events.
//
// ParseOomKills is pure (text in, kills out) and takes every form a user has
// the log in: /dev/kmsg records ("6,1234,190838925,-;message"), dmesg lines
// ("[  190.838925] message"), dmesg -T and journalctl -k lines (no monotonic
// time), or the bare message. Every kernel since 3.x writes the kill as
// "...Killed process PID (COMM) total-vm:NkB, anon-rss:NkB, file-rss:NkB[,
// shmem-rss:NkB, UID:U pgtables:NkB oom_score_adj:N]" (mm/oom_kill.c); the
// oom_reaper's later "reaped process ... now anon-rss:0kB" is not a kill.
// ReadKernelLog reads /dev/kmsg under a Root without blocking and without
// consuming it (every reader of /dev/kmsg has its own position), 64 MiB at
// most; on the live root without a /dev/kmsg (some containers) it asks
// klogctl(2) for the ring buffer instead. No program is spawned. Stateless;
// thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/file.h"
#include "core/status.h"
#include "sample/kernel_events.h"

namespace stallscope {

struct OomKill {
  int pid = 0;
  std::string comm;
  std::optional<double> monotonic_seconds;  // the record's time since boot, when the form has it
  // "Memory cgroup out of memory" on the kill's own line (5.x+); 4.x kernels
  // print that on the "Kill process" line before it, so this is false there.
  bool cgroup = false;
  uint64_t total_vm_bytes = 0;
  uint64_t anon_rss_bytes = 0;
  uint64_t file_rss_bytes = 0;
  uint64_t shmem_rss_bytes = 0;  // 0 where the kernel (before 4.9) did not print it
  size_t line = 0;               // 1-based line of the text it came from
  std::string message;           // the kill's message, without the record prefix

  uint64_t rss_bytes() const { return anon_rss_bytes + file_rss_bytes + shmem_rss_bytes; }
};

// Every OOM kill in `text`, in order. Lines that are not kills are skipped;
// a kill line whose pid is not a number is skipped too (it cannot be matched
// to a process). Never fails: a kernel log is not ours to reject.
std::vector<OomKill> ParseOomKills(std::string_view text);

// Everything the probe looks for in a kernel log, in order of the text.
struct KernelLogEvents {
  std::vector<OomKill> kills;
  std::vector<GpuXid> xids;
  std::vector<PortLogEvent> port_events;
  std::string source;  // what was read: "/dev/kmsg", "klogctl", a file
};

// Every kill, Xid and port event in `text` (any of the forms above). Never
// fails.
KernelLogEvents ParseKernelLog(std::string_view text);
// The Xids of `text` alone.
std::vector<GpuXid> ParseXids(std::string_view text);

// What /dev/kmsg under `root` still holds, at or after `since` seconds of
// CLOCK_MONOTONIC when given (records without a time are kept). An
// unreadable log is an error naming the file and the errno.
Result<KernelLogEvents> ReadKernelLog(const Root& root, std::optional<double> since = std::nullopt);

// The kills /dev/kmsg under `root` still holds, at or after `since` seconds
// of CLOCK_MONOTONIC when given (records without a time are kept). An
// unreadable log (EPERM under kernel.dmesg_restrict as non-root, no
// /dev/kmsg in a container) is an error naming the file and the errno.
Result<std::vector<OomKill>> ReadOomKills(const Root& root,
                                          std::optional<double> since = std::nullopt);

}  // namespace stallscope
