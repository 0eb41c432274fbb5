// The trace diff (analyze/trace/diff.h, app/trace_diff_files.h): the edges by
// hand on small traces, and against HTA's own `compare_traces`/`ops_diff`
// (fixtures/traces/hta_diff_reference.json, made by
// bench/hta_diff_reference.py): pairs of HTA's test traces read in place from
// ../shared/traces/hta (missing: the test skips outside CI and fails with
// CI=true), and pairs bench/gen_trace.py writes again here, one with a
// kernel made slower. Counts match exactly, times within 0.1%.
#include "analyze/trace/diff.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "app/trace_diff_files.h"
#include "formats/trace/file.h"
#include "hta_traces.h"

namespace stallscope {
namespace {

// A Kineto trace of `events` (JSON objects, comma-separated).
TraceFile Parse(const std::string& events) {
  Result<TraceFile> t =
      ParseTraceBytes("{\"traceEvents\": [" + events + "]}", "mem.json", TraceRows::kEvery);
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.ok() ? *t : TraceFile{};
}

std::string Cpu(const std::string& cat, const std::string& name, double ts, double dur,
                int64_t corr = -1) {
  std::string args = corr >= 0 ? ", \"args\": {\"correlation\": " + std::to_string(corr) + "}" : "";
  return "{\"ph\": \"X\", \"cat\": \"" + cat + "\", \"name\": \"" + name +
         "\", \"ts\": " + std::to_string(ts) + ", \"dur\": " + std::to_string(dur) + args + "}";
}

std::string Gpu(const std::string& name, double ts, double dur, int64_t corr) {
  return "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"" + name +
         "\", \"ts\": " + std::to_string(ts) + ", \"dur\": " + std::to_string(dur) +
         ", \"args\": {\"stream\": 7, \"correlation\": " + std::to_string(corr) + "}}";
}

// Three steps of 100 µs from 0; in each, `op` on the CPU and a launch of
// `kernel` (dur `kdur`), whose GPU row runs after the step ended.
std::string ThreeSteps(const std::string& op, const std::string& kernel, double kdur) {
  std::string out;
  for (int s = 0; s < 3; ++s) {
    double t = 100.0 * s;
    if (!out.empty()) out += ", ";
    out += Cpu("user_annotation", "ProfilerStep#" + std::to_string(s + 4), t, 100) + ", " +
           Cpu("cpu_op", op, t + 10, 20) + ", " +
           Cpu("cuda_runtime", "cudaLaunchKernel", t + 40, 5, s + 1) + ", " +
           Gpu(kernel, t + 150, kdur, s + 1);
  }
  return out;
}

const TraceOpTotal* Op(const TraceDiffSide& side, const std::string& name) {
  for (const TraceOpTotal& op : side.ops) {
    if (op.name == name) return &op;
  }
  return nullptr;
}

TEST(TraceDiff, TheFirstStepsRowsCountAndKernelsGoWithTheirLaunch) {
  Result<TraceDiffSide> side = SummarizeTraceOps(Parse(ThreeSteps("aten::mm", "gemm", 30)), {});
  ASSERT_TRUE(side.ok()) << side.status().message();
  EXPECT_EQ(side->steps, std::vector<int64_t>{4});
  const TraceOpTotal* gemm = Op(*side, "gemm");
  ASSERT_NE(gemm, nullptr);  // ran in step 5's time on the GPU, launched in step 4
  EXPECT_EQ(gemm->count, 1u);
  EXPECT_TRUE(gemm->gpu);
  EXPECT_DOUBLE_EQ(gemm->total_us, 30);
  const TraceOpTotal* mm = Op(*side, "aten::mm");
  ASSERT_NE(mm, nullptr);
  EXPECT_FALSE(mm->gpu);
  EXPECT_EQ(mm->count, 1u);
  ASSERT_NE(Op(*side, "ProfilerStep#4"), nullptr);
  EXPECT_EQ(Op(*side, "ProfilerStep#5"), nullptr);
  ASSERT_TRUE(side->temporal.has_value());
}

TEST(TraceDiff, AStepRangeTakesItsStepsButTheLastIsDroppedAsHtaLoadsIt) {
  TraceDiffOptions range;
  range.steps = TraceStepRange{4, 6};
  Result<TraceDiffSide> side = SummarizeTraceOps(Parse(ThreeSteps("aten::mm", "gemm", 30)), range);
  ASSERT_TRUE(side.ok());
  EXPECT_EQ(side->steps, (std::vector<int64_t>{4, 5, 6}));
  EXPECT_EQ(Op(*side, "aten::mm")->count, 2u);  // step 6 is the last: dropped
  EXPECT_EQ(Op(*side, "gemm")->count, 2u);
  range.steps = TraceStepRange{9, 12};
  Result<TraceDiffSide> none = SummarizeTraceOps(Parse(ThreeSteps("aten::mm", "gemm", 30)), range);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("mem.json"), std::string::npos);
  EXPECT_NE(none.status().message().find("ProfilerStep#9"), std::string::npos);
}

TEST(TraceDiff, AddedRemovedAndChangedOpsAreRankedByTheTimeTheyExplain) {
  Result<TraceDiffSide> a = SummarizeTraceOps(Parse(ThreeSteps("aten::mm", "gemm", 30)), {});
  Result<TraceDiffSide> b = SummarizeTraceOps(
      Parse(ThreeSteps("aten::bmm", "gemm", 90) + ", " + Cpu("cpu_op", "aten::bmm", 50, 1)), {});
  ASSERT_TRUE(a.ok() && b.ok());
  TraceDiff d = DiffTraceOps(*a, *b);
  ASSERT_GE(d.ops.size(), 3u);
  EXPECT_EQ(d.ops[0].name, "gemm");  // +60 µs
  EXPECT_EQ(d.ops[0].change, TraceOpChange::kUnchanged);
  EXPECT_DOUBLE_EQ(d.ops[0].diff_us(), 60);
  std::map<std::string, TraceOpDiff> by;
  for (const TraceOpDiff& op : d.ops) by[op.name] = op;
  EXPECT_EQ(by["aten::bmm"].change, TraceOpChange::kAdded);
  EXPECT_EQ(by["aten::bmm"].test_count, 2u);
  EXPECT_EQ(by["aten::mm"].change, TraceOpChange::kRemoved);
  EXPECT_EQ(by["ProfilerStep#4"].change, TraceOpChange::kUnchanged);
  for (size_t i = 1; i < d.ops.size(); ++i) {
    EXPECT_GE(std::fabs(d.ops[i - 1].diff_us()), std::fabs(d.ops[i].diff_us()));
  }
  EXPECT_TRUE(d.notes.empty());
}

TEST(TraceDiff, ATraceWithoutStepsIsComparedWholeWithANote) {
  std::string bare = Cpu("cpu_op", "aten::add", 0, 10) + ", " +
                     Cpu("cuda_runtime", "cudaLaunchKernel", 20, 5, 3) + ", " + Gpu("k", 30, 4, 3);
  Result<TraceDiffSide> a = SummarizeTraceOps(Parse(bare), {});
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->steps.empty());
  EXPECT_EQ(a->ops.size(), 3u);
  TraceDiff d = DiffTraceOps(*a, *a);
  ASSERT_EQ(d.notes.size(), 2u);
  EXPECT_NE(d.notes[0].find("no ProfilerStep"), std::string::npos);
}

TEST(TraceDiff, BadInputNamesTheSideAndTheFile) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("stallscope-tdiff-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  { std::ofstream(dir / "good.json") << "{\"traceEvents\": [" << ThreeSteps("a", "k", 1) << "]}"; }
  { std::ofstream(dir / "bad.json") << "{\"traceEvents\": [{\"ph\": "; }
  Result<TraceDiff> d =
      DiffTracePaths((dir / "good.json").string(), (dir / "bad.json").string(), std::nullopt, {});
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("test side"), std::string::npos) << d.status().message();
  EXPECT_NE(d.status().message().find("bad.json"), std::string::npos) << d.status().message();
  Result<TraceDiff> missing =
      DiffTracePaths((dir / "nope").string(), (dir / "good.json").string(), std::nullopt, {});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("control side"), std::string::npos);
  EXPECT_NE(missing.status().message().find("nope"), std::string::npos);
  Result<TraceDiff> rank =
      DiffTracePaths((dir / "good.json").string(), (dir / "good.json").string(), 3, {});
  ASSERT_FALSE(rank.ok());
  EXPECT_NE(rank.status().message().find("rank 3"), std::string::npos);
  std::filesystem::remove_all(dir);
}

// Every row of HTA's compare_traces, and its ops_diff lists, against ours.
void ExpectHtaRows(const TraceDiff& got, const nlohmann::json& want, const std::string& what) {
  std::map<std::string, const TraceOpDiff*> by;
  for (const TraceOpDiff& op : got.ops) by[op.name] = &op;
  EXPECT_EQ(by.size(), want.at("rows").size()) << what;
  for (const auto& [name, row] : want.at("rows").items()) {
    auto it = by.find(name);
    if (it == by.end()) {
      ADD_FAILURE() << what << ": " << name << " missing";
      continue;
    }
    const TraceOpDiff& op = *it->second;
    EXPECT_EQ(op.control_count, row.at("control_counts").get<uint64_t>()) << what << ": " << name;
    EXPECT_EQ(op.test_count, row.at("test_counts").get<uint64_t>()) << what << ": " << name;
    const double c = row.at("control_total_duration").get<double>();
    const double t = row.at("test_total_duration").get<double>();
    EXPECT_NEAR(op.control_us, c, 1e-3 * std::fabs(c) + 1e-9) << what << ": " << name;
    EXPECT_NEAR(op.test_us, t, 1e-3 * std::fabs(t) + 1e-9) << what << ": " << name;
  }
  const std::map<std::string, TraceOpChange> lists = {{"added", TraceOpChange::kAdded},
                                                      {"deleted", TraceOpChange::kRemoved},
                                                      {"increased", TraceOpChange::kIncreased},
                                                      {"decreased", TraceOpChange::kDecreased},
                                                      {"unchanged", TraceOpChange::kUnchanged}};
  for (const auto& [list, change] : lists) {
    for (const auto& name : want.at("ops_diff").at(list)) {
      auto it = by.find(name.get<std::string>());
      if (it == by.end()) continue;  // counted missing above
      EXPECT_EQ(it->second->change, change) << what << ": " << name << " not " << list;
    }
  }
}

TEST(TraceDiff, MatchesHtaOnPairsOfItsTestTraces) {
  const std::filesystem::path root = SharedTraces();
  STALLSCOPE_REQUIRE_SHARED_TRACES(root);
  const nlohmann::json ref = HtaReference("hta_diff_reference.json");
  ASSERT_GE(ref.at("pairs").size(), 3u);
  for (const auto& [name, pair] : ref.at("pairs").items()) {
    ASSERT_FALSE(pair.contains("error")) << name << ": " << pair.at("error");
    Result<TraceDiff> got =
        DiffTracePaths((root / pair.at("control").get<std::string>()).string(),
                       (root / pair.at("test").get<std::string>()).string(), std::nullopt, {});
    ASSERT_TRUE(got.ok()) << name << ": " << got.status().message();
    ExpectHtaRows(*got, pair, name);
  }
}

TEST(TraceDiff, MatchesHtaOnGeneratedTracesWithAKernelMadeSlower) {
  const nlohmann::json ref = HtaReference("hta_diff_reference.json");
  const std::string bench = std::string(STALLSCOPE_FIXTURES) + "/../../bench/gen_trace.py";
  const std::filesystem::path root =
      std::filesystem::temp_directory_path() / ("stallscope-tdiff-gen-" + std::to_string(getpid()));
  for (const auto& [name, g] : ref.at("generated").items()) {
    for (const char* side : {"control", "test"}) {
      std::filesystem::create_directories(root / name / side);
      std::string cmd =
          "/usr/bin/python3 " + bench + " " + (root / name / side / "rank0.json").string();
      for (const auto& arg : g.at(std::string(side) + "_args")) {
        cmd += " '" + arg.get<std::string>() + "'";
      }
      ASSERT_EQ(std::system((cmd + " > /dev/null").c_str()), 0) << cmd;
    }
    Result<TraceDiff> got = DiffTracePaths((root / name / "control").string(),
                                           (root / name / "test").string(), std::nullopt, {});
    ASSERT_TRUE(got.ok()) << got.status().message();
    ExpectHtaRows(*got, g, name);
    // The slower kernel is the kernel that explains the most time (the step
    // and the host's wait on the GPU grow with it: CPU rows).
    auto kernel = std::find_if(got->ops.begin(), got->ops.end(),
                               [](const TraceOpDiff& op) { return op.gpu; });
    ASSERT_NE(kernel, got->ops.end());
    EXPECT_NE(kernel->name.find("sm90_xmma_gemm"), std::string::npos) << kernel->name;
    EXPECT_NEAR(kernel->test_us, 1.5 * kernel->control_us, 0.01 * kernel->test_us);
  }
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace stallscope
