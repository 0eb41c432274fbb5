// Google Benchmark of the samplers `run` and `watch` drive every interval:
// HostSampler::Sample on this host, and ProcessTreeSampler::Sample on the
// tree of this process with forked children (Arg: how many). A hot loop, so
// it shows the CPU of the code and the kernel's text generation, not the
// cache misses of a sample taken after a second of sleep (bench/sample_cost
// measures that). The ReadProcessTree and TakeHostSample runs are the
// stateless readers the samplers replace.
#include <benchmark/benchmark.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vector>

#include "core/file.h"
#include "probe/host_sampler.h"
#include "probe/process_sampler.h"
#include "probe/process_tree.h"
#include "probe/snapshot.h"

namespace stallscope {
namespace {

// Children of this process that sleep until the benchmark ends.
class Children {
 public:
  explicit Children(int count) {
    for (int i = 0; i < count; ++i) {
      pid_t child = ::fork();
      if (child == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        for (;;) ::pause();
      }
      if (child > 0) pids_.push_back(child);
    }
  }
  ~Children() {
    for (pid_t pid : pids_) ::kill(pid, SIGKILL);
    for (pid_t pid : pids_) ::waitpid(pid, nullptr, 0);
  }

 private:
  std::vector<pid_t> pids_;
};

void BM_HostSampler(benchmark::State& state) {
  HostSampler sampler{Root("/")};
  for (auto _ : state) {
    Result<HostSample> sample = sampler.Sample(nullptr);
    if (!sample.ok()) state.SkipWithError(sample.status().message().c_str());
    benchmark::DoNotOptimize(sample);
  }
}
BENCHMARK(BM_HostSampler);

void BM_TakeHostSample(benchmark::State& state) {
  for (auto _ : state) {
    Result<HostSample> sample = TakeHostSample(Root("/"), nullptr);
    if (!sample.ok()) state.SkipWithError(sample.status().message().c_str());
    benchmark::DoNotOptimize(sample);
  }
}
BENCHMARK(BM_TakeHostSample);

// Every sample as `run` takes them: slow files every 10th.
void BM_ProcessTreeSampler(benchmark::State& state) {
  Children children(static_cast<int>(state.range(0)));
  ProcessTreeSampler sampler(Root("/"), ::getpid());
  for (auto _ : state) {
    Result<ProcessTree> tree = sampler.Sample();
    if (!tree.ok()) state.SkipWithError(tree.status().message().c_str());
    benchmark::DoNotOptimize(tree);
  }
  state.counters["processes"] = static_cast<double>(state.range(0) + 1);
}
BENCHMARK(BM_ProcessTreeSampler)->Arg(8)->Arg(63);

// Only the per-sample files (stat, io): slow_every larger than the run.
void BM_ProcessTreeSamplerFast(benchmark::State& state) {
  Children children(static_cast<int>(state.range(0)));
  ProcessSamplerOptions options;
  options.slow_every = 1 << 30;
  ProcessTreeSampler sampler(Root("/"), ::getpid(), options);
  (void)sampler.Sample();  // the first sample reads everything
  for (auto _ : state) {
    Result<ProcessTree> tree = sampler.Sample();
    if (!tree.ok()) state.SkipWithError(tree.status().message().c_str());
    benchmark::DoNotOptimize(tree);
  }
}
BENCHMARK(BM_ProcessTreeSamplerFast)->Arg(63);

void BM_ReadProcessTree(benchmark::State& state) {
  Children children(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    Result<ProcessTree> tree = ReadProcessTree(Root("/"), ::getpid());
    if (!tree.ok()) state.SkipWithError(tree.status().message().c_str());
    benchmark::DoNotOptimize(tree);
  }
}
BENCHMARK(BM_ReadProcessTree)->Arg(63);

}  // namespace
}  // namespace stallscope

BENCHMARK_MAIN();
