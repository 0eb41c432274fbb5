#include "record/kernel_log_watch.h"

#include <cmath>

namespace stallscope {

KernelLogWatch::Key KernelLogWatch::KeyOf(const std::optional<double>& seconds,
                                          const std::string& message) {
  return {seconds ? static_cast<int64_t>(std::llround(*seconds * 1e6)) : -1, message};
}

KernelLogWatch::KernelLogWatch(const Root& root, double start_monotonic_seconds)
    : root_(root), start_(start_monotonic_seconds) {
  Result<KernelLogEvents> now = ReadKernelLog(root_);
  if (!now.ok()) return;
  baseline_read_ = true;
  for (const GpuXid& x : now->xids) before_.insert(KeyOf(x.monotonic_seconds, x.message));
  for (const PortLogEvent& p : now->port_events)
    before_.insert(KeyOf(p.monotonic_seconds, p.message));
}

Result<KernelLogEvents> KernelLogWatch::SinceStart() const {
  // Without the first read, the records timed from the start on (those
  // without a time cannot be placed and are left out).
  Result<KernelLogEvents> log =
      baseline_read_ ? ReadKernelLog(root_) : ReadKernelLog(root_, start_);
  if (!log.ok()) return log.status();
  KernelLogEvents out;
  out.source = log->source;
  auto is_new = [&](const std::optional<double>& t, const std::string& message) {
    if (baseline_read_) return before_.count(KeyOf(t, message)) == 0;
    return t.has_value();
  };
  auto since_start = [&](std::optional<double> t) -> std::optional<double> {
    if (!t) return std::nullopt;
    return *t - start_;
  };
  for (GpuXid& x : log->xids) {
    if (!is_new(x.monotonic_seconds, x.message)) continue;
    x.monotonic_seconds = since_start(x.monotonic_seconds);
    out.xids.push_back(std::move(x));
  }
  for (PortLogEvent& p : log->port_events) {
    if (!is_new(p.monotonic_seconds, p.message)) continue;
    p.monotonic_seconds = since_start(p.monotonic_seconds);
    out.port_events.push_back(std::move(p));
  }
  return out;
}

}  // namespace stallscope
