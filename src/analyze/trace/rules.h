// The findings a profiler trace shows (breakdown.h's figures of each
// rank), in the user's words, with evidence that names the rank, the step
// and the event:
//
//  - memory.pageable_h2d: host-to-device copies from pageable memory (the
//    pin_memory case), and their share of the steps' time.
//  - code.sync_in_step: a blocking sync (cudaDeviceSynchronize,
//    cudaStreamSynchronize, synchronous cudaMemcpy, .item(), .cpu()) in most
//    steps, with the op and its share of the step.
//  - code.gpu_idle: the GPU idle over the steps, split by what the host was
//    doing meanwhile (launching, the data loader, a sync), gaps over 500 ms.
//  - code.launch_bound: launch-bound steps: most kernels under 10 µs, the
//    GPU busy under half the time while every 1/6 s sample window (what
//    utilization.gpu reads) had a kernel in it; HTA's launch statistics and
//    the kernels with the most launch delay as evidence.
//  - io.input_bound: the data loader's __next__ as a share of the step, or
//    data_loading's share of the critical path, whichever is larger.
//  - code.cpu_bound_step: the critical path (critical_path.h) over the
//    default instance mostly cpu_bound, with the top CPU ops on it.
//  - network.comm_ratio_high: communication kernels not overlapped by
//    compute, against the steps' time.
//  - distributed.straggler: across ranks' traces, a rank whose compute is
//    longer than the others'.
// One finding per id, the worst rank's figures first, every rank it hit
// listed. Thresholds are named here; their reasoning is in catalog.cc. Pure.
#pragma once

#include <cstdint>
#include <vector>

#include "analyze/trace/breakdown.h"
#include "analyze/trace/collectives.h"
#include "sample/finding.h"

namespace stallscope {

// code.gpu_idle: idle share of the GPU's active window.
inline constexpr double kGpuIdleWarningPercent = 20;
inline constexpr double kGpuIdleCriticalPercent = 40;
// code.sync_in_step: in at least this share of the steps; severity by the
// syncs' share of the steps' time.
inline constexpr double kSyncStepsShare = 0.5;
inline constexpr double kSyncWarningFraction = 0.05;
inline constexpr double kSyncCriticalFraction = 0.25;
// memory.pageable_h2d: severity by the copies' share of the steps' time.
inline constexpr double kPageableWarningFraction = 0.05;
inline constexpr double kPageableCriticalFraction = 0.20;
// code.launch_bound: at least this share of the kernels are short
// (breakdown.h's kShortKernelUs); busy and utilization as gpu_rules.h's
// kUtilMisleading* percentages; HTA's launch statistics and the kernels with
// the most launch delay as evidence.
inline constexpr double kLaunchBoundShortShare = 0.5;
inline constexpr uint64_t kLaunchBoundMinKernels = 100;
inline constexpr size_t kLaunchBoundTopKernels = 3;
// code.cpu_bound_step: cpu_bound share of the critical path (percent), in a
// trace with GPU rows.
inline constexpr double kCpuBoundPathWarningPercent = 50;
inline constexpr double kCpuBoundPathCriticalPercent = 80;

// Every finding carries {"source": "trace"} in its evidence. With `split`
// (the collectives matched across the ranks), network.comm_ratio_high is
// judged on the transfer time alone and distributed.straggler names the
// ranks the others wait for; `hta`: HTA's potential stragglers, which the
// straggler finding is compared with.
FindingsWithNotes CheckTraces(const std::vector<TraceRankBreakdown>& ranks,
                              const CollectiveSplit* split = nullptr,
                              const PotentialStragglers* hta = nullptr);

// True for a finding CheckTraces made.
bool FromTrace(const Finding& f);

// Adds a trace's finding to a run's: MergeFinding (analyze/report.h) with
// the hook's of the same id: one finding, "sources": "hook, trace", the
// trace's evidence as "trace.*".
void MergeTraceFinding(std::vector<Finding>& findings, Finding from_trace);

}  // namespace stallscope
