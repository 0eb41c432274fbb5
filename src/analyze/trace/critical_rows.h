// The rows of one rank's trace as Holistic Trace Analysis (HTA) sees them
// before its critical_path_analysis builds a graph: every kept row and CPU
// row of the trace in file order, times rounded to whole µs as HTA rounds a
// trace with fractional times (start up, end down), each row linked to its
// counterpart by correlation (HTA's index_correlation), the trace cut as
// HTA's TraceAnalysis cuts it (with two or more ProfilerSteps: rows from
// the last step on are dropped, and GPU rows whose launch went with them),
// the window of an annotation's instances and the rows in it, each GPU
// stream's queue length at every launch and GPU row, and the launch a
// cudaEventRecord or cudaStreamWaitEvent refers to. Each lookup is a hash
// or an array index: linear in the rows after sorts by time. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "analyze/trace/critical_path.h"
#include "sample/trace.h"

namespace stallscope {

struct HtaRow {
  const TraceEvent* event = nullptr;
  double ts = 0, dur = 0;          // rounded as HTA rounds
  uint32_t index = 0;              // place in the file's events
  int32_t index_correlation = -1;  // the counterpart's index; 0 absent, -1 none
  double End() const { return ts + dur; }
  bool OnCpu() const { return event->stream == -1; }
};

// What a name is to HTA's rows, looked at once per name, not per row.
enum HtaName : uint8_t {
  kDeviceSync = 1,       // "Event Sync", "Context Sync": GPU-side without a stream
  kStepName = 2,         // ProfilerStep#N
  kStepPrefix = 4,       // starts "ProfilerStep#"
  kLaunchCall = 8,       // IsHtaLaunch (queue.h)
  kStreamWaitRow = 16,   // "Stream Wait Event"
  kEventRecord = 32,     // "cudaEventRecord"
  kStreamWaitCall = 64,  // "cudaStreamWaitEvent"
};

struct HtaRows {
  const TraceFile* trace = nullptr;
  std::vector<uint8_t> name_flags;  // by name: HtaName bits
  std::vector<HtaRow> rows;         // the cut trace, in HTA's order (GPU rows first when cut)
  std::vector<int32_t> by_index;    // HTA index -> position in rows; -1 absent
  std::vector<uint32_t> window;     // positions of the rows in the window, by index
  std::unordered_map<int64_t, double> queue_length;          // by index: launches and GPU rows
  std::unordered_map<int64_t, int64_t> previous_launch;      // record correlation -> launch index
  std::unordered_map<int64_t, int64_t> next_launch;          // cudaStreamWaitEvent index -> launch
  std::unordered_map<uint32_t, const TraceSyncWait*> waits;  // by index
  bool has_event_records = false;                            // cudaEventRecord in the trace
  const HtaRow* At(int64_t index) const {
    if (index < 0 || index >= static_cast<int64_t>(by_index.size())) return nullptr;
    const int32_t at = by_index[static_cast<size_t>(index)];
    return at < 0 ? nullptr : &rows[static_cast<size_t>(at)];
  }
  const std::string& Name(const HtaRow& r) const { return trace->names[r.event->name]; }
  bool Is(const HtaRow& r, HtaName what) const { return name_flags[r.event->name] & what; }
  const TraceThread& ThreadOf(const HtaRow& r) const {
    static const TraceThread kNone;
    return r.event->thread < trace->threads.size() ? trace->threads[r.event->thread] : kNone;
  }
};

// The rows, the window chosen as HTA chooses it (filled into `path`), the
// rows in it. nullopt: no such annotation or instance (`why_not` says).
std::optional<HtaRows> HtaRowsFor(const TraceFile& trace, const CriticalPathRequest& request,
                                  CriticalPath& path, std::string* why_not);

}  // namespace stallscope
