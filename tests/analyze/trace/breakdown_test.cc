// HTA's figures on traces built here event by event, each worked out by
// hand from the definitions (../shared/traces/DEFINITIONS.md): the temporal
// breakdown over all streams at once, the overlap over communication time,
// the kernel types by name, the last step's rows dropped by their launch,
// --step-range, HTA's rounding of fractional times, the idle time per stream
// by cause, and the findings the per-step figures raise. The agreement with
// HTA on real traces is tests/e2e/trace_cli.py's.
#include "analyze/trace/breakdown.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "analyze/trace/rules.h"

namespace stallscope {
namespace {

class TraceBuilder {
 public:
  TraceBuilder() { trace_.path = "t.json"; }
  // A CPU-side event (stream -1); `correlation` for a launch.
  TraceBuilder& Cpu(std::string_view name, double ts, double dur, int64_t correlation = -1,
                    TraceCategory cat = TraceCategory::kCpuOp) {
    return Add(name, ts, dur, -1, correlation, cat);
  }
  // A GPU event on `stream`, launched by `correlation`.
  TraceBuilder& Gpu(std::string_view name, double ts, double dur, int stream, int64_t correlation,
                    TraceCategory cat = TraceCategory::kKernel) {
    return Add(name, ts, dur, stream, correlation, cat);
  }
  // A kernel and its launch `launch_before` µs earlier.
  TraceBuilder& Launched(std::string_view name, double ts, double dur, int stream,
                         double launch_at) {
    int64_t c = next_correlation_++;
    Cpu("cudaLaunchKernel", launch_at, 2, c, TraceCategory::kRuntime);
    return Gpu(name, ts, dur, stream, c);
  }
  TraceBuilder& Step(int64_t n, double ts, double dur) {
    return Cpu("ProfilerStep#" + std::to_string(n), ts, dur, -1, TraceCategory::kUserAnnotation);
  }
  const TraceFile& trace() const { return trace_; }

 private:
  TraceBuilder& Add(std::string_view name, double ts, double dur, int stream, int64_t corr,
                    TraceCategory cat) {
    TraceEvent e;
    e.ts = ts;
    e.dur = dur;
    e.stream = stream;
    e.correlation = corr;
    e.cat = cat;
    e.role = TraceCpuRoleOf(name);
    if (ts != std::floor(ts)) trace_.fractional_times = true;  // as the reader marks it
    auto it = std::find(trace_.names.begin(), trace_.names.end(), name);
    e.name = static_cast<uint32_t>(it - trace_.names.begin());
    if (it == trace_.names.end()) trace_.names.emplace_back(name);
    trace_.events.push_back(e);
    return *this;
  }
  TraceFile trace_;
  int64_t next_correlation_ = 1000;
};

TraceRankBreakdown BreakDown(const TraceFile& t, TraceOptions options = {}) {
  Result<TraceRankBreakdown> r = BreakDownTrace(t, options);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : TraceRankBreakdown{};
}

TEST(TraceBreakdown, TemporalBreakdownAndOverlapOverAllStreams) {
  TraceBuilder b;
  b.Launched("sgemm", 0, 10, 7, -5)
      .Launched("relu", 5, 15, 8, -4)                                     // compute [0, 20)
      .Launched("ncclKernel_AllReduce_RING_LL_Sum_float", 30, 20, 9, -3)  // comm [30, 50)
      .Launched("Memcpy DtoD (Device -> Device)", 50, 5, 7, -2)           // touches: [30, 55)
      .Launched("add", 40, 5, 7, -1);                                     // compute under comm
  TraceRankBreakdown r = BreakDown(b.trace());
  ASSERT_TRUE(r.temporal);
  EXPECT_EQ(r.temporal->kernel_time_us, 55);
  EXPECT_EQ(r.temporal->idle_us, 10);  // [20, 30)
  EXPECT_EQ(r.temporal->compute_us, 25);
  EXPECT_EQ(r.temporal->non_compute_us, 20);
  EXPECT_DOUBLE_EQ(r.temporal->idle_pct, 18.18);
  EXPECT_DOUBLE_EQ(r.temporal->compute_pct, 45.45);
  EXPECT_DOUBLE_EQ(r.temporal->non_compute_pct, 36.36);
  ASSERT_TRUE(r.comm_comp_overlap_pct);
  EXPECT_DOUBLE_EQ(*r.comm_comp_overlap_pct, 25);  // 5 of the 20 µs of communication
  EXPECT_EQ(r.comm_exposed_us, 15);
  // Exclusive time per set of types: compute alone 20, comm alone 15,
  // compute with comm 5, memory alone 5.
  auto type_us = [&](std::string_view label) {
    for (const KernelTypeTime& k : r.kernel_types) {
      if (k.label == label) return k.us;
    }
    return -1.0;
  };
  EXPECT_EQ(type_us("COMPUTATION"), 20);
  EXPECT_EQ(type_us("COMMUNICATION"), 15);
  EXPECT_EQ(type_us("COMPUTATION overlapping COMMUNICATION"), 5);
  EXPECT_EQ(type_us("MEMORY"), 5);
  ASSERT_FALSE(r.kernels.empty());
  EXPECT_EQ(r.kernels.front().name, "ncclKernel_AllReduce_RING_LL_Sum_float");
  ASSERT_EQ(r.copies.size(), 1u);
  EXPECT_EQ(r.copies[0].kind, "Memcpy DtoD");
  // No communication: the overlap is null, not 0.
  TraceBuilder c;
  c.Launched("sgemm", 0, 10, 7, -5);
  EXPECT_FALSE(BreakDown(c.trace()).comm_comp_overlap_pct);
}

TEST(TraceBreakdown, TheLastStepIsDroppedByItsLaunchesUnlessAsked) {
  TraceBuilder b;
  b.Step(1, 0, 100).Step(2, 100, 100).Step(3, 200, 100);
  b.Launched("k1", 60, 10, 7, 50);    // step 1
  b.Launched("k2", 250, 10, 7, 150);  // launched in step 2, runs in step 3: kept
  b.Launched("k3", 215, 5, 7, 210);   // step 3: dropped by default
  b.Gpu("orphan", 80, 5, 7, 99);      // no launch in the trace: never kept when filtering
  TraceRankBreakdown def = BreakDown(b.trace());
  EXPECT_TRUE(def.last_step_dropped);
  EXPECT_EQ(def.steps, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(def.gpu_rows, 2u);
  ASSERT_TRUE(def.temporal);
  EXPECT_EQ(def.temporal->kernel_time_us, 200);  // [60, 260)

  TraceOptions all;
  all.include_last_step = true;
  TraceRankBreakdown last = BreakDown(b.trace(), all);
  EXPECT_EQ(last.steps, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(last.gpu_rows, 3u);

  TraceOptions range;
  range.steps = TraceStepRange{2, 2};
  TraceRankBreakdown two = BreakDown(b.trace(), range);
  EXPECT_EQ(two.steps, (std::vector<int64_t>{2}));
  EXPECT_EQ(two.gpu_rows, 1u);  // k2 only

  range.steps = TraceStepRange{5, 9};
  Result<TraceRankBreakdown> none = BreakDownTrace(b.trace(), range);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no step in --step-range 5:9 (it has ProfilerStep#1 "
                                         "to #3)"),
            std::string::npos)
      << none.status().message();

  // One step name: nothing is filtered, the orphan counts too.
  TraceBuilder one;
  one.Step(1, 0, 100).Launched("k1", 60, 10, 7, 50).Gpu("orphan", 80, 5, 7, 99);
  EXPECT_EQ(BreakDown(one.trace()).gpu_rows, 2u);
  EXPECT_FALSE(BreakDown(one.trace()).last_step_dropped);
}

TEST(TraceBreakdown, AStepMarkedTwiceIsOneStepOfBothMarksAndGpuAnnotationsAreNoWindow) {
  TraceBuilder b;
  b.Step(1, 0, 100).Step(1, 500, 100).Step(2, 600, 100);
  b.Cpu("ProfilerStep#2", 600, 5000, -1, TraceCategory::kGpuAnnotation);  // the GPU's mark
  b.Cpu("aten::item", 300, 50);  // between the marks: in no step
  b.Cpu("aten::item", 520, 10);
  TraceOptions all;
  all.include_last_step = true;
  TraceRankBreakdown r = BreakDown(b.trace(), all);
  EXPECT_EQ(r.steps, (std::vector<int64_t>{1, 2}));
  ASSERT_EQ(r.step_figures.size(), 2u);
  EXPECT_EQ(r.step_figures[0].dur_us, 200);  // both marks, not the 600 µs they span
  EXPECT_EQ(r.step_figures[0].sync_us, 10);
  EXPECT_EQ(r.step_figures[1].dur_us, 100);  // the host's window, not the GPU's
}

TEST(TraceBreakdown, FractionalTimesAreRoundedAsHtaRoundsThem) {
  TraceBuilder b;
  b.Launched("k1", 10.2, 5.5, 7, 0);  // [11, 15)
  b.Launched("k2", 20.9, 0.3, 7, 0);  // [21, 21): zero
  TraceRankBreakdown r = BreakDown(b.trace());
  ASSERT_TRUE(r.temporal);
  EXPECT_EQ(r.temporal->kernel_time_us, 10);  // 11 .. 21
  EXPECT_EQ(r.temporal->idle_us, 6);
  // Whole ts with a fractional dur: nothing is rounded (HTA looks at ts).
  TraceBuilder whole;
  whole.Launched("k1", 10, 5.5, 7, 0).Launched("k2", 20, 1, 7, 0);
  TraceRankBreakdown w = BreakDown(whole.trace());
  EXPECT_EQ(w.temporal->kernel_time_us, 11);
  EXPECT_EQ(w.temporal->idle_us, 4.5);
}

TEST(TraceBreakdown, KernelTypesByName) {
  EXPECT_EQ(KernelTypeOf("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)"),
            KernelType::kCommunication);
  EXPECT_EQ(KernelTypeOf("void ncclKernel<...>"), KernelType::kCommunication);
  EXPECT_EQ(KernelTypeOf("Memcpy HtoD (Pinned -> Device)"), KernelType::kMemory);
  EXPECT_EQ(KernelTypeOf("Memset (Device)"), KernelType::kMemory);
  EXPECT_EQ(KernelTypeOf("void at::native::vectorized_elementwise_kernel<4>"),
            KernelType::kComputation);
  EXPECT_EQ(KernelTypeOf("Stream Sync"), KernelType::kOther);
  EXPECT_EQ(KernelTypeOf("Stream Wait Event"), KernelType::kOther);
  EXPECT_EQ(KernelTypeOf("cudaLaunchKernel"), KernelType::kOther);
  EXPECT_EQ(KernelTypeOf("hipLaunchKernel"), KernelType::kCommunication);  // as HTA has it
  EXPECT_EQ(KernelTypeName(KernelType::kMemory), "MEMORY");
}

TEST(TraceBreakdown, IdleTimePerStreamByCause) {
  TraceBuilder b;
  b.Launched("k1", 0, 10, 7, -5)
      .Launched("k2", 12, 8, 7, 11)   // launched after k1 ended: host wait 2
      .Launched("k3", 60, 10, 7, 0)   // launched early, gap 40 >= 30: other
      .Launched("k4", 75, 5, 7, 1)    // launched early, gap 5 < 30: kernel wait
      .Launched("k5", 0, 100, 8, 0);  // another stream, alone: no gap
  TraceRankBreakdown r = BreakDown(b.trace());
  ASSERT_EQ(r.idle_streams.size(), 2u);
  const StreamIdle& s = r.idle_streams[0];
  EXPECT_EQ(s.stream, 7);
  EXPECT_EQ(s.host_wait_us, 2);
  EXPECT_EQ(s.other_us, 40);
  EXPECT_EQ(s.kernel_wait_us, 5);
  EXPECT_EQ(r.idle_streams[1].gaps, 0u);
  // Stream 8 keeps the GPU busy: no idle time overall.
  EXPECT_EQ(r.temporal->idle_us, 0);
}

TEST(TraceRules, ASyncEachStepALoaderAndPageableCopiesAreFound) {
  TraceBuilder b;
  for (int k = 0; k < 4; ++k) {
    double t = k * 1000;
    b.Step(k, t, 1000);
    b.Cpu("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", t, 400);
    b.Launched("sgemm", t + 450, 300, 7, t + 420);
    int64_t c = 5000 + k;
    b.Cpu("cudaMemcpyAsync", t + 410, 5, c, TraceCategory::kRuntime);
    b.Gpu("Memcpy HtoD (Pageable -> Device)", t + 415, 30, 7, c, TraceCategory::kMemcpy);
    b.Cpu("aten::item", t + 760, 100);
    b.Cpu("aten::_local_scalar_dense", t + 761, 98);  // inside item: counted once
  }
  TraceRankBreakdown r = BreakDown(b.trace());
  ASSERT_EQ(r.step_figures.size(), 3u);  // the last step dropped
  EXPECT_EQ(r.step_figures[0].sync_us, 100);
  EXPECT_EQ(r.step_figures[0].sync_op, "aten::item");
  EXPECT_EQ(r.step_figures[0].loader_us, 400);
  EXPECT_EQ(r.step_figures[0].pageable_h2d, 1u);
  FindingsWithNotes f = CheckTraces({r});
  auto find = [&](std::string_view id) -> const Finding* {
    for (const Finding& x : f.findings) {
      if (x.id == id) return &x;
    }
    return nullptr;
  };
  const Finding* sync = find("code.sync_in_step");
  ASSERT_NE(sync, nullptr);
  EXPECT_EQ(sync->severity, Severity::kWarning);  // 10% of the steps' time
  EXPECT_NE(sync->summary.find("aten::item in 3 of 3 steps"), std::string::npos) << sync->summary;
  const Finding* input = find("io.input_bound");
  ASSERT_NE(input, nullptr);
  EXPECT_EQ(input->severity, Severity::kCritical);  // 40%
  const Finding* pageable = find("memory.pageable_h2d");
  ASSERT_NE(pageable, nullptr);
  EXPECT_EQ(pageable->severity, Severity::kInfo);  // 3%
  // The GPU is idle most of each step, while the loader and the sync run.
  const Finding* idle = find("code.gpu_idle");
  ASSERT_NE(idle, nullptr);
  EXPECT_EQ(idle->severity, Severity::kCritical);
  // Between steps the GPU waits 665 µs: 400 of them on the next step's
  // loader, 100 on this step's item (twice: the last step is dropped).
  EXPECT_EQ(r.idle_causes.data_loader_us, 800);
  EXPECT_EQ(r.idle_causes.sync_us, 200);
  EXPECT_NE(idle->next.find("data loader"), std::string::npos) << idle->next;
  EXPECT_EQ(find("code.launch_bound"), nullptr);  // too few kernels to judge
}

TEST(TraceRules, AStragglerAcrossRanksAndNothingOnAHealthyTrace) {
  auto rank = [](int n, double kernel_us) {
    TraceBuilder b;
    b.Launched("sgemm", 0, kernel_us, 7, -1);
    b.Launched("ncclKernel_AllReduce", kernel_us, 2000 - kernel_us, 9, -1);
    TraceRankBreakdown r = BreakDown(b.trace());
    r.rank = n;
    return r;
  };
  FindingsWithNotes f = CheckTraces({rank(0, 1000), rank(1, 1000), rank(2, 1400), rank(3, 1000)});
  ASSERT_EQ(f.findings.size(), 2u);  // the straggler, and communication exposed on every rank
  const Finding* s = nullptr;
  for (const Finding& x : f.findings) {
    if (x.id == "distributed.straggler") s = &x;
  }
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(std::get<int64_t>(s->evidence[0].value), 2);
  EXPECT_EQ(s->severity, Severity::kCritical);  // 40% longer

  TraceBuilder healthy;
  for (int k = 0; k < 200; ++k) healthy.Launched("sgemm", k * 100, 99, 7, k * 100 - 50);
  FindingsWithNotes none = CheckTraces({BreakDown(healthy.trace())});
  EXPECT_TRUE(none.findings.empty());
}

}  // namespace
}  // namespace stallscope
