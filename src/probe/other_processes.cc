// The host's other processes' CPU (see other_processes.h).
#include "probe/other_processes.h"

#include <algorithm>

#include "core/text.h"
#include "probe/cpu_stat.h"
#include "probe/process_tree.h"

namespace stallscope {

OtherProcessesCpu::OtherProcessesCpu(Root root, int64_t clock_ticks_per_second)
    : root_(std::move(root)),
      ticks_per_second_(static_cast<double>(clock_ticks_per_second > 0 ? clock_ticks_per_second
                                                                       : ClockTicksPerSecond())) {}

std::vector<OtherProcessPoint> OtherProcessesCpu::Sample(double t, double monotonic_seconds,
                                                         const std::set<int>& members, size_t top) {
  std::vector<OtherProcessPoint> out;
  Result<std::vector<std::string>> names = ListDirectory(root_.Path("/proc"));
  if (!names.ok()) return out;
  const double seconds = monotonic_seconds - previous_seconds_;
  std::map<int, std::pair<uint64_t, uint64_t>> now;
  for (const std::string& name : *names) {
    std::optional<uint64_t> pid = ParseUint(name);
    if (!pid || *pid == 0 || *pid > 0x7fffffff || members.contains(static_cast<int>(*pid))) {
      continue;
    }
    Result<std::string> text = ReadFile(root_.Path("/proc/" + name + "/stat"), 4096);
    if (!text.ok()) continue;  // exited meanwhile, or refused
    Result<ProcStat> stat = ParseProcStat(*text, name);
    if (!stat.ok()) continue;
    const uint64_t ticks = stat->utime_ticks + stat->stime_ticks;
    now[stat->pid] = {stat->start_time_ticks, ticks};
    if (!have_previous_ || seconds <= 0) continue;
    auto before = previous_.find(stat->pid);
    if (before == previous_.end() || before->second.first != stat->start_time_ticks ||
        ticks <= before->second.second) {
      continue;
    }
    const double cpu =
        static_cast<double>(ticks - before->second.second) / ticks_per_second_ / seconds * 100.0;
    out.push_back({t, stat->pid, stat->comm, cpu});
  }
  previous_ = std::move(now);
  previous_seconds_ = monotonic_seconds;
  have_previous_ = true;
  std::sort(out.begin(), out.end(), [](const OtherProcessPoint& a, const OtherProcessPoint& b) {
    return a.cpu_percent != b.cpu_percent ? a.cpu_percent > b.cpu_percent : a.pid < b.pid;
  });
  if (out.size() > top) out.resize(top);
  return out;
}

}  // namespace stallscope
