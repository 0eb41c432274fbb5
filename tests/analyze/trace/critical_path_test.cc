// The critical path (analyze/trace/critical_path.h) by hand on small traces:
// which bound each edge gets, the default instance, an annotation's
// instances, and errors for a missing one; against HTA's own path on its test
// traces and on multi-rank traces bench/gen_trace.py writes.
#include "analyze/trace/critical_path.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "analyze/run/io_rules.h"
#include "analyze/trace/breakdown.h"
#include "analyze/trace/rules.h"
#include "formats/trace/file.h"
#include "hta_traces.h"

namespace stallscope {
namespace {

// A row appended to `t`, in file order: CPU rows on thread 0, GPU rows on
// the GPU's thread 1.
void Add(TraceFile& t, double ts, double dur, uint32_t name, TraceCategory cat, int stream = -1,
         int64_t corr = -1) {
  TraceEvent e;
  e.ts = ts;
  e.dur = dur;
  e.name = name;
  e.cat = cat;
  e.stream = stream;
  e.correlation = corr;
  e.index = static_cast<uint32_t>(t.events.size());
  e.thread = stream >= 0 || cat == TraceCategory::kCudaSync ? 1 : 0;
  e.role = TraceCpuRoleOf(t.names[name]);
  t.events.push_back(e);
}
constexpr TraceCategory kOp = TraceCategory::kCpuOp, kRuntime = TraceCategory::kRuntime,
                        kKernel = TraceCategory::kKernel, kSync = TraceCategory::kCudaSync,
                        kNote = TraceCategory::kUserAnnotation;

double Bound(const CriticalPath& p, CriticalBound b) { return p.by_bound_us[static_cast<int>(b)]; }

// names: 0 ProfilerStep#1, 1 ProfilerStep#2, 2 aten::mm, 3 cudaLaunchKernel,
// 4 gemm, 5 cudaDeviceSynchronize, 6 ncclKernel_AllReduce, 7 MyRegion,
// 8 the data loader's next, 9 ProfilerStep#3, 10 Context Sync
TraceFile Names() {
  TraceFile t;
  t.names = {"ProfilerStep#1",
             "ProfilerStep#2",
             "aten::mm",
             "cudaLaunchKernel",
             "gemm",
             "cudaDeviceSynchronize",
             "ncclKernel_AllReduce",
             "MyRegion",
             "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
             "ProfilerStep#3",
             "Context Sync"};
  t.threads = {{"100", "100"}, {"0", "7"}};
  return t;
}

TEST(TraceCriticalPath, CpuOnlyPathIsCpuBound) {
  TraceFile t = Names();
  Add(t, 0, 100, 2, kOp);
  Add(t, 10, 20, 2, kOp);
  std::string why;
  auto p = FindCriticalPath(t, {}, &why);
  ASSERT_TRUE(p) << why;
  EXPECT_EQ(p->annotation, "");
  EXPECT_DOUBLE_EQ(p->total_us, 100);
  EXPECT_DOUBLE_EQ(Bound(*p, CriticalBound::kCpu), 100);
  EXPECT_DOUBLE_EQ(p->summary_pct[0], 100);
  ASSERT_FALSE(p->top_cpu_ops.empty());
  EXPECT_EQ(p->top_cpu_ops[0].name, "aten::mm");
}

TEST(TraceCriticalPath, LongKernelAfterSyncIsGpuBound) {
  TraceFile t = Names();
  // op 0..600 launches at 10 (dur 5) a kernel 20..520; the host syncs 16..521
  Add(t, 0, 600, 2, kOp);
  Add(t, 10, 5, 3, kRuntime, -1, 7);
  Add(t, 20, 500, 4, kKernel, 7, 7);
  Add(t, 16, 505, 5, kRuntime, -1, 8);
  Add(t, 20, 501, 10, kSync, -1, 8);  // the device sync's own row
  std::string why;
  auto p = FindCriticalPath(t, {}, &why);
  ASSERT_TRUE(p) << why;
  EXPECT_DOUBLE_EQ(Bound(*p, CriticalBound::kGpuCompute), 500);
  EXPECT_DOUBLE_EQ(Bound(*p, CriticalBound::kKernelLaunchOverhead), 10);
  EXPECT_DOUBLE_EQ(Bound(*p, CriticalBound::kCpu), 89);  // 0..10 and the 79 after the sync
  EXPECT_DOUBLE_EQ(p->total_us, 599);
  // without the sync's row nothing waits for the kernel: the path ends at its
  // end, and the host's time after the sync is not on it (a blocking call's own
  // time counts nothing, as in HTA)
  t.events.pop_back();
  p = FindCriticalPath(t, {}, &why);
  ASSERT_TRUE(p) << why;
  EXPECT_DOUBLE_EQ(p->total_us, 520);
  EXPECT_DOUBLE_EQ(Bound(*p, CriticalBound::kCpu), 10);
}

TEST(TraceCriticalPath, CommunicationAndKernelGapsHaveTheirOwnBounds) {
  TraceFile t = Names();
  Add(t, 0, 30, 2, kOp);
  Add(t, 10, 2, 3, kRuntime, -1, 1);
  Add(t, 14, 2, 3, kRuntime, -1, 2);
  Add(t, 20, 100, 6, kKernel, 7, 1);
  Add(t, 140, 100, 4, kKernel, 7, 2);  // queued behind the first: a kernel-kernel gap
  auto p = FindCriticalPath(t, {}, nullptr);
  ASSERT_TRUE(p);
  EXPECT_DOUBLE_EQ(Bound(*p, CriticalBound::kGpuCommunication), 100);
  EXPECT_DOUBLE_EQ(Bound(*p, CriticalBound::kGpuCompute), 100);
  EXPECT_DOUBLE_EQ(Bound(*p, CriticalBound::kKernelKernelOverhead), 20);
  EXPECT_DOUBLE_EQ(p->total_us, 220);
}

TEST(TraceCriticalPath, DataLoaderTimeIsDataLoading) {
  TraceFile t = Names();
  Add(t, 0, 50, 8, kNote);  // the loader's next, an op inside it
  Add(t, 10, 10, 2, kOp);
  Add(t, 50, 30, 2, kOp);
  auto p = FindCriticalPath(t, {}, nullptr);
  ASSERT_TRUE(p);
  EXPECT_DOUBLE_EQ(Bound(*p, CriticalBound::kDataLoading), 40);
  EXPECT_DOUBLE_EQ(Bound(*p, CriticalBound::kCpu), 40);
}

// HTA's definition: a GPU row gets a launch edge only when its launch was the
// one outstanding on its stream (queue length 1 after the launch, 0 after
// the row starts), and a kernel-kernel edge only within 1.5 ms of its
// stream's previous row. A kernel whose launch had another one queued behind
// it before it started, and with no earlier row on its stream, gets neither,
// so a path can begin at it: the host's time before it is not on the path.
// (Found on the generated ranks: a rank waiting 8 ms in an all-reduce whose
// launch the host had already followed with the next one has that wait alone
// as its path, as in HTA.)
TEST(TraceCriticalPath, KernelQueuedBehindTheNextLaunchStartsThePath) {
  TraceFile t = Names();
  Add(t, 0, 200, 2, kOp);
  Add(t, 10, 2, 3, kRuntime, -1, 1);
  Add(t, 20, 2, 3, kRuntime, -1, 2);     // queued before the first kernel starts
  Add(t, 30, 3000, 6, kKernel, 13, 1);   // waits 3 ms in the all-reduce
  Add(t, 3040, 100, 4, kKernel, 13, 2);  // 10 µs after it on its stream
  auto p = FindCriticalPath(t, {}, nullptr);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->nodes, 4u);
  EXPECT_DOUBLE_EQ(p->total_us, 3110);
  EXPECT_DOUBLE_EQ(Bound(*p, CriticalBound::kCpu), 0);
  EXPECT_DOUBLE_EQ(Bound(*p, CriticalBound::kKernelLaunchOverhead), 0);
  EXPECT_DOUBLE_EQ(Bound(*p, CriticalBound::kGpuCommunication), 3000);
  EXPECT_DOUBLE_EQ(Bound(*p, CriticalBound::kKernelKernelOverhead), 10);
  EXPECT_DOUBLE_EQ(Bound(*p, CriticalBound::kGpuCompute), 100);
  // the second launch after the first kernel started: the first is launched
  // alone, and the path begins on the host (HTA: 6 nodes, 3140 µs, the same
  // bounds)
  t.events[2].ts = 35;
  p = FindCriticalPath(t, {}, nullptr);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->nodes, 6u);
  EXPECT_DOUBLE_EQ(p->total_us, 3140);
  EXPECT_DOUBLE_EQ(Bound(*p, CriticalBound::kCpu), 10);
  EXPECT_DOUBLE_EQ(Bound(*p, CriticalBound::kKernelLaunchOverhead), 20);
  EXPECT_DOUBLE_EQ(Bound(*p, CriticalBound::kGpuCommunication), 3000);
}

TEST(TraceCriticalPath, DefaultInstanceIsTheSecondStep) {
  TraceFile t = Names();
  Add(t, 0, 100, 0, kNote);
  Add(t, 100, 40, 1, kNote);
  Add(t, 140, 60, 9, kNote);
  Add(t, 5, 90, 2, kOp);
  Add(t, 105, 30, 2, kOp);
  Add(t, 145, 50, 2, kOp);
  auto p = FindCriticalPath(t, {}, nullptr);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->annotation, "ProfilerStep");
  EXPECT_EQ(p->first_instance, 1);
  EXPECT_DOUBLE_EQ(p->total_us, 30);  // the time between top-level ops is no one's, as in HTA
  auto first = FindCriticalPath(t, {"", 0, 0}, nullptr);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->annotation, "ProfilerStep");
  EXPECT_DOUBLE_EQ(first->total_us, 90);
  auto both = FindCriticalPath(t, {"", 0, 1}, nullptr);
  ASSERT_TRUE(both);
  EXPECT_DOUBLE_EQ(both->total_us, 120);
  // as HTA's TraceAnalysis: the last step is cut off, so there is no instance 2
  std::string why;
  EXPECT_FALSE(FindCriticalPath(t, {"", 2, 2}, &why));
  EXPECT_NE(why.find("out of range"), std::string::npos) << why;
  CriticalPathRequest last{"", 2, 2};
  last.include_last_step = true;  // as --include-last-step
  auto kept = FindCriticalPath(t, last, &why);
  ASSERT_TRUE(kept) << why;
  EXPECT_DOUBLE_EQ(kept->total_us, 50);
}

TEST(TraceCriticalPath, MissingAnnotationOrInstanceSaysWhich) {
  TraceFile t = Names();
  Add(t, 0, 100, 7, kNote);
  Add(t, 5, 90, 2, kOp);
  std::string why;
  EXPECT_FALSE(FindCriticalPath(t, {"Nope", std::nullopt, std::nullopt}, &why));
  EXPECT_NE(why.find("Nope"), std::string::npos);
  EXPECT_FALSE(FindCriticalPath(t, {"MyRegion", 3, 3}, &why));
  EXPECT_NE(why.find("out of range"), std::string::npos);
  auto p = FindCriticalPath(t, {"Region", std::nullopt, std::nullopt}, &why);  // a substring
  ASSERT_TRUE(p) << why;
  EXPECT_EQ(p->annotation, "Region");
  EXPECT_DOUBLE_EQ(p->total_us, 90);
}

TEST(TraceCriticalPath, EmptyTraceHasNoPath) {
  TraceFile t = Names();
  std::string why;
  EXPECT_FALSE(FindCriticalPath(t, {}, &why));
  EXPECT_FALSE(why.empty());
}

// A rank whose critical path has `cpu` and `loading` percent of 1000 µs.
TraceRankBreakdown RankWithPath(double cpu, double loading, bool gpu = true) {
  TraceRankBreakdown r;
  r.path = "rank0.json";
  if (gpu) r.temporal = TemporalBreakdown{};
  CriticalPath p;
  p.annotation = "ProfilerStep";
  p.first_instance = p.last_instance = 1;
  p.total_us = 1000;
  p.summary_pct[static_cast<int>(CriticalBound::kCpu)] = cpu;
  p.by_bound_us[static_cast<int>(CriticalBound::kCpu)] = cpu * 10;
  p.summary_pct[static_cast<int>(CriticalBound::kDataLoading)] = loading;
  p.top_cpu_ops = {{"aten::index", cpu * 6}, {"aten::copy_", cpu * 4}};
  r.critical_path = p;
  return r;
}

const Finding* Find(const FindingsWithNotes& f, std::string_view id) {
  for (const Finding& x : f.findings)
    if (x.id == id) return &x;
  return nullptr;
}

TEST(TraceCriticalPathRules, CpuBoundStepAtItsThresholds) {
  EXPECT_EQ(Find(CheckTraces({RankWithPath(kCpuBoundPathWarningPercent - 0.1, 0)}),
                 "code.cpu_bound_step"),
            nullptr);
  FindingsWithNotes warn = CheckTraces({RankWithPath(kCpuBoundPathWarningPercent, 0)});
  const Finding* f = Find(warn, "code.cpu_bound_step");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kWarning);
  EXPECT_NE(f->next.find("aten::index"), std::string::npos);  // the top CPU op is named
  FindingsWithNotes crit = CheckTraces({RankWithPath(kCpuBoundPathCriticalPercent, 0)});
  ASSERT_NE(Find(crit, "code.cpu_bound_step"), nullptr);
  EXPECT_EQ(Find(crit, "code.cpu_bound_step")->severity, Severity::kCritical);
}

TEST(TraceCriticalPathRules, CpuOnlyTraceIsNotJudged) {
  EXPECT_EQ(Find(CheckTraces({RankWithPath(100, 0, /*gpu=*/false)}), "code.cpu_bound_step"),
            nullptr);
}

TEST(TraceCriticalPathRules, InputBoundReadsDataLoadingOnThePath) {
  const double warning = kInputBoundWarningFraction * 100;
  EXPECT_EQ(Find(CheckTraces({RankWithPath(0, warning - 0.1)}), "io.input_bound"), nullptr);
  FindingsWithNotes f = CheckTraces({RankWithPath(0, warning)});
  const Finding* input = Find(f, "io.input_bound");
  ASSERT_NE(input, nullptr);
  EXPECT_NE(input->summary.find("critical path"), std::string::npos);
  FindingsWithNotes crit = CheckTraces({RankWithPath(0, kInputBoundCriticalFraction * 100)});
  ASSERT_NE(Find(crit, "io.input_bound"), nullptr);
  EXPECT_EQ(Find(crit, "io.input_bound")->severity, Severity::kCritical);
}

// `got` against one of HTA's paths in the reference: the same nodes, the
// total within 0.1%, each bound's share within 0.05 points, the data
// loader's time charged by name (HTA counts it as cpu_bound: its pattern is
// matched against the shortened name, which has lost "(DataLoader)").
void ExpectLikeHta(const CriticalPath& got, const nlohmann::json& want, const std::string& where) {
  EXPECT_EQ(got.annotation, want.at("annotation").get<std::string>()) << where;
  EXPECT_EQ(got.nodes, want.at("nodes").get<uint64_t>()) << where;
  const double total = want.at("total_us").get<double>();
  EXPECT_NEAR(got.total_us, total, std::max(1.0, total * 1e-3)) << where;
  const double loader = want.at("data_loading_by_name_us").get<double>();
  for (int b = 0; b < kCriticalBounds; ++b) {
    const auto bound = static_cast<CriticalBound>(b);
    const std::string name(CriticalBoundName(bound));
    const auto& us = want.at("by_bound_us");
    double w = us.contains(name) ? us.at(name).get<double>() : 0;
    if (bound == CriticalBound::kCpu) w -= loader;
    if (bound == CriticalBound::kDataLoading) w += loader;
    EXPECT_NEAR(got.summary_pct[b], total != 0 ? 100 * w / total : 0, 0.05) << where << " " << name;
  }
}

// Against HTA's own critical path on its test traces
// (fixtures/traces/hta_critical_path_reference.json, made by
// bench/hta_critical_path_reference.py, every trace HTA's path runs on): the
// default instance, the same with the last step kept, and instances 0:1
// where there are two steps or more.
TEST(TraceCriticalPath, MatchesHtaOnItsTestTraces) {
  const std::filesystem::path root = SharedTraces();
  STALLSCOPE_REQUIRE_SHARED_TRACES(root);
  int compared = 0, ranges = 0, last_kept = 0;
  auto compare = [&](const std::string& dir, const nlohmann::json& ranks, const TraceFile& trace,
                     const std::string& rank) {
    const std::string where = dir + " rank " + rank;
    if (!ranks.contains(rank) || ranks.at(rank).contains("error")) return;
    const nlohmann::json& want = ranks.at(rank);
    std::string why;
    auto got = FindCriticalPath(trace, {}, &why);
    ASSERT_TRUE(got) << where << ": " << why;
    ExpectLikeHta(*got, want, where);
    ++compared;
    if (want.contains("last_step_kept") && !want.at("last_step_kept").contains("error")) {
      CriticalPathRequest kept;
      kept.include_last_step = true;
      auto with_last = FindCriticalPath(trace, kept, &why);
      ASSERT_TRUE(with_last) << where << " last step kept: " << why;
      ExpectLikeHta(*with_last, want.at("last_step_kept"), where + " last step kept");
      ++last_kept;
    }
    if (!want.contains("instances_0_1") || want.at("instances_0_1").contains("error")) return;
    auto range = FindCriticalPath(trace, {"", 0, 1}, &why);
    ASSERT_TRUE(range) << where << " 0:1: " << why;
    ExpectLikeHta(*range, want.at("instances_0_1"), where + " 0:1");
    ++ranges;
  };
  ForEachHtaTrace(root, HtaReference("hta_critical_path_reference.json").at("traces"), compare);
  EXPECT_GT(compared, 3);
  EXPECT_GT(ranges, 3);
  EXPECT_GT(last_kept, 3);
}

// Against HTA on 4-rank traces bench/gen_trace.py writes again here with the
// arguments the reference names (fixtures/traces/hta_critical_path_generated.json,
// bench/hta_critical_path_reference.py --generated): a multiprocess loader's
// __next__ on the main thread, a 20 ms CPU op (a long gap on the GPU), late
// kernels (the other ranks' NCCL kernels wait), several causes at once; each
// set as written and with a device sync under each step's aten::item
// (bench/add_device_sync.py), without which the path never leaves the CPU.
// The default instance, instances 0:1 and the last step kept, each rank;
// beside HTA's shares, each bound's µs within the same 0.05% of the total.
TEST(TraceCriticalPath, MatchesHtaOnGeneratedRanks) {
  const nlohmann::json ref = HtaReference("hta_critical_path_generated.json");
  const std::string bench = std::string(STALLSCOPE_FIXTURES) + "/../../bench/";
  const std::filesystem::path root = std::filesystem::temp_directory_path() /
                                     ("stallscope-critical-gen-" + std::to_string(getpid()));
  auto expect_us = [](const CriticalPath& got, const nlohmann::json& want,
                      const std::string& where) {
    const double total = want.at("total_us").get<double>();
    const double loader = want.at("data_loading_by_name_us").get<double>();
    const auto& us = want.at("by_bound_us");
    for (int b = 0; b < kCriticalBounds; ++b) {
      const auto bound = static_cast<CriticalBound>(b);
      const std::string name(CriticalBoundName(bound));
      double w = us.contains(name) ? us.at(name).get<double>() : 0;
      if (bound == CriticalBound::kCpu) w -= loader;
      if (bound == CriticalBound::kDataLoading) w += loader;
      EXPECT_NEAR(got.by_bound_us[b], w, std::max(1.0, total * 5e-4)) << where << " " << name;
    }
  };
  int compared = 0;
  double most_waiting = 0, most_loading = 0;
  for (const auto& [set, g] : ref.at("generated").items()) {
    const std::filesystem::path dir = root / set;
    std::string cmd = "/usr/bin/python3 " + bench + "gen_trace.py " + dir.string();
    for (const auto& arg : g.at("gen_trace_args")) cmd += " " + arg.get<std::string>();
    cmd += " > /dev/null";
    if (g.at("device_sync").get<bool>()) {
      cmd += " && /usr/bin/python3 " + bench + "add_device_sync.py " + dir.string();
    }
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    const nlohmann::json& ranks = ref.at("traces").at(set);
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      Result<TraceFile> trace = ReadTraceFile(entry.path().string());
      ASSERT_TRUE(trace.ok()) << entry.path() << ": " << trace.status().message();
      const std::string rank = std::to_string(trace->rank.value_or(0));
      const nlohmann::json& want = ranks.at(rank);
      CriticalPathRequest kept;
      kept.include_last_step = true;
      const std::pair<CriticalPathRequest, const nlohmann::json*> cases[] = {
          {CriticalPathRequest{}, &want},
          {CriticalPathRequest{"", 0, 1}, &want.at("instances_0_1")},
          {kept, &want.at("last_step_kept")}};
      const char* labels[] = {"", " 0:1", " last step kept"};
      for (int c = 0; c < 3; ++c) {
        const std::string where = set + " rank " + rank + labels[c];
        std::string why;
        auto got = FindCriticalPath(*trace, cases[c].first, &why);
        ASSERT_TRUE(got) << where << ": " << why;
        ExpectLikeHta(*got, *cases[c].second, where);
        expect_us(*got, *cases[c].second, where);
        most_waiting = std::max(most_waiting, Bound(*got, CriticalBound::kGpuCommunication));
        most_loading = std::max(most_loading, Bound(*got, CriticalBound::kDataLoading));
        ++compared;
      }
    }
  }
  std::filesystem::remove_all(root);
  EXPECT_GE(compared, 100);
  EXPECT_GT(most_waiting, 20000);  // a rank's wait for the 20 ms CPU op is on its path
  EXPECT_GT(most_loading, 5000);   // and the late loader's __next__
}

// The path found on a thread of its own while the other analyses run is the
// one found after them; a trace under kCriticalPathBesideMinEvents events
// (most of HTA's small ones) takes no thread, a larger one does.
TEST(TraceCriticalPath, FoundBesideTheOtherAnalysesIsTheSame) {
  const std::filesystem::path root = SharedTraces();
  STALLSCOPE_REQUIRE_SHARED_TRACES(root);
  int small = 0, large = 0;
  for (const char* dir : {"critical_path/alexnet", "ns_resolution_trace", "trace_filter"}) {
    for (const auto& entry : std::filesystem::directory_iterator(root / dir)) {
      Result<TraceFile> trace = ReadTraceFile(entry.path().string());
      ASSERT_TRUE(trace.ok()) << entry.path() << ": " << trace.status().message();
      (trace->events.size() < kCriticalPathBesideMinEvents ? small : large)++;
      TraceOptions inline_options, beside_options;
      beside_options.critical_path_beside = true;
      Result<TraceRankBreakdown> a = BreakDownTrace(*trace, inline_options);
      Result<TraceRankBreakdown> b = BreakDownTrace(*trace, beside_options);
      ASSERT_TRUE(a.ok() && b.ok()) << entry.path();
      ASSERT_EQ(a->critical_path.has_value(), b->critical_path.has_value()) << entry.path();
      if (!a->critical_path) continue;
      EXPECT_EQ(a->critical_path->nodes, b->critical_path->nodes) << entry.path();
      EXPECT_EQ(a->critical_path->total_us, b->critical_path->total_us) << entry.path();
      for (size_t k = 0; k < kCriticalBounds; ++k) {
        EXPECT_EQ(a->critical_path->by_bound_us[k], b->critical_path->by_bound_us[k])
            << entry.path() << " bound " << k;
      }
    }
  }
  EXPECT_GT(small, 0);
  EXPECT_GT(large, 0);
}

}  // namespace
}  // namespace stallscope
