// libFuzzer target: the profiler-trace reader (JSON or gzip'd JSON, Kineto
// or the legacy list) and HTA's breakdown of what it read. Whatever the
// bytes: an error, or a trace whose breakdown holds its own invariants (the
// temporal parts add up to the window; percentages within 0..100 where the
// window is positive; no more kept steps than step rows; a critical path of
// two nodes at least whose bounds add up to its total). The same bytes read
// with every row kept give the trace diff's ops: a diff of the trace with
// itself changes nothing. The text held whole (libdeflate, parsed in place),
// held whole and cut in three parts read by threads of their own, and
// streamed (zlib, blocks) give the same trace or the same error.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "analyze/trace/breakdown.h"
#include "analyze/trace/diff.h"
#include "analyze/trace/rules.h"
#include "formats/trace/file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  stallscope::Result<stallscope::TraceFile> trace = stallscope::ParseTraceBytes(bytes, "fuzz");
  stallscope::TraceReading how;
  how.whole_text_limit_bytes = 0;
  stallscope::Result<stallscope::TraceFile> streamed =
      stallscope::ParseTraceBytes(bytes, "fuzz", how);
  how.whole_text_limit_bytes = std::nullopt;
  how.parse_threads = 3;
  how.min_part_bytes = 0;
  stallscope::Result<stallscope::TraceFile> parts = stallscope::ParseTraceBytes(bytes, "fuzz", how);
  for (const stallscope::Result<stallscope::TraceFile>* other : {&streamed, &parts}) {
    if (trace.ok() != other->ok()) std::abort();
    if (!trace.ok() && trace.status().message() != other->status().message()) std::abort();
    if (trace.ok() &&
        (trace->events.size() != (*other)->events.size() || trace->bytes != (*other)->bytes ||
         trace->names != (*other)->names || trace->skipped_events != (*other)->skipped_events ||
         trace->cpu_rows.size() != (*other)->cpu_rows.size() ||
         trace->devices != (*other)->devices || trace->rank != (*other)->rank ||
         trace->sync_waits.size() != (*other)->sync_waits.size()))
      std::abort();
    if (trace.ok()) {
      for (size_t i = 0; i < trace->events.size(); ++i) {
        const stallscope::TraceEvent& a = trace->events[i];
        const stallscope::TraceEvent& b = (*other)->events[i];
        if (a.index != b.index || a.name != b.name || a.thread != b.thread || a.ts != b.ts)
          std::abort();
      }
    }
  }
  if (!trace.ok()) {
    if (trace.status().message().find("fuzz") == std::string::npos) std::abort();
    return 0;
  }
  if (trace->skipped_events > trace->complete_events) std::abort();
  for (bool last : {false, true}) {
    stallscope::TraceOptions options;
    options.include_last_step = last;
    stallscope::Result<stallscope::TraceRankBreakdown> r =
        stallscope::BreakDownTrace(*trace, options);
    if (!r.ok()) std::abort();  // only a --step-range can miss
    if (r->temporal) {
      const stallscope::TemporalBreakdown& t = *r->temporal;
      double sum = t.idle_us + t.compute_us + t.non_compute_us;
      if (std::isfinite(t.kernel_time_us) &&
          std::fabs(sum - t.kernel_time_us) > 1e-6 * std::max(1.0, std::fabs(t.kernel_time_us))) {
        std::abort();
      }
    }
    if (r->critical_path) {  // a path has two nodes at least; its bounds add up to its total
      const stallscope::CriticalPath& p = *r->critical_path;
      double sum = 0;
      for (double us : p.by_bound_us) sum += us;
      if (p.nodes < 2 ||
          (std::isfinite(p.total_us) &&
           std::fabs(sum - p.total_us) > 1e-6 * std::max(1.0, std::fabs(p.total_us))))
        std::abort();
    }
    (void)stallscope::CheckTraces({*r});
  }
  stallscope::Result<stallscope::TraceFile> every =
      stallscope::ParseTraceBytes(bytes, "fuzz", stallscope::TraceRows::kEvery);
  if (!every.ok() || every->events.size() < trace->events.size()) std::abort();
  stallscope::Result<stallscope::TraceDiffSide> side = stallscope::SummarizeTraceOps(*every, {});
  if (!side.ok()) std::abort();  // only a step range can miss
  stallscope::TraceDiff self = stallscope::DiffTraceOps(*side, *side);
  for (const stallscope::TraceOpDiff& op : self.ops) {
    if (op.change != stallscope::TraceOpChange::kUnchanged || op.diff_us() != 0) std::abort();
  }
  return 0;
}
