// The figures of one rank's profiler trace, as Holistic Trace Analysis (HTA)
// defines them (../shared/traces/DEFINITIONS.md has the definitions in
// words): the temporal breakdown (idle, compute, non-compute over the GPU's
// active window), the comm/compute overlap, the kernel-type breakdown and the
// top kernels, the idle time per stream by cause, memcpy/memset bandwidth by
// direction. Plus, per ProfilerStep, what the findings of rules.h
// weigh: blocking syncs, the data loader's next, pageable copies, GPU busy.
//
// The steps: ProfilerStep#A to #B with a range; without one, HTA's rule:
// with two or more step names everything from the start of the last step is
// dropped (the CPU rows starting at or after it, and every GPU row whose
// launch is not kept), unless `include_last_step`. Times are rounded as HTA
// rounds fractional ones: starts up, ends down, to whole µs. Pure;
// thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analyze/trace/annotations.h"
#include "analyze/trace/comm_kernels.h"
#include "analyze/trace/critical_path.h"
#include "analyze/trace/launches.h"
#include "analyze/trace/queue.h"
#include "analyze/trace/stragglers.h"
#include "core/status.h"
#include "sample/trace.h"

namespace stallscope {

// HTA's consecutive_kernel_delay: a gap on a stream under this, with the
// launch already made, is the GPU moving from one kernel to the next.
inline constexpr double kKernelWaitGapUs = 30;

struct TraceStepRange {
  int64_t first = 0;
  int64_t last = 0;  // inclusive
};
// "A:B" -> {A, B}; errors name the text.
Result<TraceStepRange> ParseTraceStepRange(std::string_view text);

struct TraceOptions {
  std::optional<TraceStepRange> steps;
  bool include_last_step = false;
  CriticalPathRequest critical_path;  // default: the second ProfilerStep
  // Find the critical path on a thread of its own while the other analyses
  // run (for a caller with a CPU to spare): the same result, sooner. Only
  // for a trace of kCriticalPathBesideMinEvents events or more: below, the
  // path takes about as long as starting the thread (and its memory arena).
  bool critical_path_beside = false;
};
inline constexpr size_t kCriticalPathBesideMinEvents = 4096;

enum class KernelType : uint8_t { kCommunication, kMemory, kComputation, kOther };
KernelType KernelTypeOf(std::string_view name);
std::string_view KernelTypeName(KernelType type);  // "COMMUNICATION", ...

struct TemporalBreakdown {
  double idle_us = 0;
  double compute_us = 0;
  double non_compute_us = 0;
  double kernel_time_us = 0;  // the GPU's active window: last end - first start
  double idle_pct = 0;        // of kernel_time, rounded to 2 decimals as HTA
  double compute_pct = 0;
  double non_compute_pct = 0;
};

struct StreamIdle {
  int stream = 0;
  double host_wait_us = 0;    // the launch came after the previous row ended
  double kernel_wait_us = 0;  // launched in time, gap under kKernelWaitGapUs
  double other_us = 0;
  uint64_t gaps = 0;
};

struct KernelTypeTime {
  std::string label;  // "COMPUTATION", "COMPUTATION overlapping COMMUNICATION", ...
  double us = 0;      // exclusive wall time with exactly that set running
};

struct KernelStats {
  std::string name;
  KernelType type = KernelType::kComputation;
  uint64_t count = 0;
  double sum_us = 0, min_us = 0, max_us = 0, mean_us = 0, std_us = 0;  // std: sample
};

struct CopyStats {
  std::string kind;  // "Memcpy HtoD", "Memcpy DtoH", "Memcpy DtoD", "Memset", ...
  uint64_t count = 0;
  double time_us = 0;  // summed durations
  // HTA's figure: the concurrent bandwidth at each change point where it is
  // above zero (GB/s, the trace's own per-op figure)
  double mean_gbps = 0, min_gbps = 0, max_gbps = 0;
  std::optional<double> std_gbps;                   // sample; nullopt with one value
  double p25_gbps = 0, p50_gbps = 0, p75_gbps = 0;  // linear interpolation
};

// One ProfilerStep as the findings weigh it. CPU-side figures count the ops
// that start in the step's window; GPU-side ones the GPU rows launched in it.
struct TraceStepFigures {
  int64_t step = 0;
  double start_us = 0;
  double dur_us = 0;
  double sync_us = 0;          // union of blocking-sync ops (cudaDeviceSynchronize, .item(), ...)
  std::string sync_op;         // the longest of them
  double loader_us = 0;        // union of the data loader's __next__
  double pageable_h2d_us = 0;  // Memcpy HtoD (Pageable -> Device) launched in the step
  uint64_t pageable_h2d = 0;
  uint64_t kernels = 0;        // kernels launched in the step
  uint64_t short_kernels = 0;  // of them, under kShortKernelUs
};
inline constexpr double kShortKernelUs = 10;

// The GPU's idle time over the kept window, split by what the host was doing.
struct IdleCauses {
  double host_launch_us = 0;  // nothing else: the host had not launched the next work yet
  double data_loader_us = 0;  // the data loader's __next__ ran through the gap
  double sync_us = 0;         // a blocking sync ran through the gap
  uint64_t long_gaps = 0;     // gaps over kLongIdleGapUs
  double longest_gap_us = 0;
  double longest_gap_start_us = 0;
};
inline constexpr double kLongIdleGapUs = 500e3;

struct TraceRankBreakdown {
  std::string path;
  int rank = 0;
  bool rank_known = false;
  std::optional<int> world_size;
  std::string gpu;
  bool legacy = false;
  std::vector<int64_t> steps;  // the ProfilerStep numbers kept
  bool last_step_dropped = false;
  uint64_t gpu_rows = 0;                        // kept rows with a stream
  std::optional<TemporalBreakdown> temporal;    // nullopt: no GPU rows (CPU-only trace)
  std::optional<double> comm_comp_overlap_pct;  // nullopt: no communication kernels
  double comm_us = 0;                           // union of communication kernels
  double comm_exposed_us = 0;                   // of it, with no compute running
  double wall_us = 0;                           // the kept steps' span on the CPU (0 without steps)
  double busy_window_share = -1;                // share of 1/6 s windows with any GPU row; -1: none
  std::vector<StreamIdle> idle_streams;
  IdleCauses idle_causes;
  std::vector<KernelTypeTime> kernel_types;
  std::vector<KernelStats> kernels;  // every name, by sum_us, largest first
  std::vector<CopyStats> copies;
  QueueLengthSummary queue_length;                   // over the whole trace, as HTA (no step cut)
  std::optional<CriticalPath> critical_path;         // nullopt: no such instance (a note says)
  LaunchStats launches;                              // over the kept rows
  std::vector<UserAnnotationTime> user_annotations;  // gpu_user_annotation rows kept
  StragglerFigures straggler;                        // for FindPotentialStragglers over the ranks
  std::vector<TraceStepFigures> step_figures;
  // Every communication kernel kept (NCCL's and the others'), by start, for
  // the collectives matched across ranks (collectives.h).
  std::vector<CommKernelUse> comm_kernels;
  std::vector<std::string> notes;
};

// The figures of one rank. An error names the file: a --step-range with no
// step of the trace in it.
Result<TraceRankBreakdown> BreakDownTrace(const TraceFile& trace, const TraceOptions& options);

}  // namespace stallscope
