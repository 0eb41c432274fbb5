// The sampler loop `run` and `watch` drive, alone, for measuring its CPU
// cost: every interval, one host sample (HostSampler: meminfo, vmstat,
// /proc/stat, diskstats, net/dev, PSI) plus the process tree of ROOT_PID
// (ProcessTreeSampler: stat, io and schedstat of each member that ran, only
// schedstat of a single-threaded one that did not,
// status and smaps_rollup every 10th, cmdline once), and the rates against
// the previous sample; the open input files (/proc/PID/fd and fdinfo,
// probe/open_files.h) of each member that ran since the last sample, as
// `run` reads them (probe/open_files.h OpenInputSampler: at most 8 a
// sample, those read longest ago first). bench/sample_cost.py runs it against pidstat + iostat.
//   sample_cost ROOT_PID SAMPLES INTERVAL_S [QUIET_SLOW_EVERY]
// QUIET_SLOW_EVERY 1 reads every member's slow files on every slow sample
// and every member's open files on every sample, as if each had run since
// the last one (the cost for a busy tree).
// SAMPLE_COST_BOUNDARIES=B in the environment adds B boundary samples
// (record/epoch_boundaries.h: the tree by the same sampler, /proc/diskstats)
// evenly inside each interval, as `run` takes one at each epoch mark: B=1,
// an epoch an interval; B=19 at a 1 s interval, the most the 50 ms spacing
// allows.
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "core/file.h"
#include "probe/cpu_stat.h"
#include "probe/diskstats.h"
#include "probe/host_sampler.h"
#include "probe/open_files.h"
#include "probe/process_sampler.h"
#include "probe/snapshot.h"
#include "record/epoch_boundaries.h"
#include "sample/disk_rates.h"

namespace {

// CPU time of this process so far, user + system, including its start-up.
double CpuSeconds() {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace stallscope;
  const double started = CpuSeconds();
  if (argc != 4 && argc != 5) {
    std::fprintf(stderr, "usage: sample_cost ROOT_PID SAMPLES INTERVAL_S [QUIET_SLOW_EVERY]\n");
    return 2;
  }
  int32_t pid = std::atoi(argv[1]);
  int samples = std::atoi(argv[2]);
  double interval = std::atof(argv[3]);
  Root root("/");
  HostSampler host_sampler(root);
  ProcessSamplerOptions options;
  if (argc == 5) options.quiet_slow_every = std::atoi(argv[4]);
  ProcessTreeSampler tree_sampler(root, pid, options);
  const bool all_ran = argc == 5 && options.quiet_slow_every == 1;
  OpenInputSampler open_files(root);
  std::map<int32_t, uint64_t> ticks;
  size_t open_inputs = 0;
  Snapshot s;
  size_t processes = 0;
  double after_first = 0;
  const char* b_env = std::getenv("SAMPLE_COST_BOUNDARIES");
  const int boundaries = b_env ? std::atoi(b_env) : 0;
  std::set<std::string> whole_disks;
  if (Result<std::vector<BlockDevice>> devices = ReadBlockDevices(root); devices.ok()) {
    for (const BlockDevice& d : *devices) {
      if (!d.is_partition) whole_disks.insert(d.name);
    }
  }
  const double ticks_per_second = static_cast<double>(ClockTicksPerSecond());
  size_t boundaries_taken = 0, boundary_disks = 0;
  for (int i = 0; i <= samples; ++i) {
    Result<HostSample> host = host_sampler.Sample(nullptr);
    Result<ProcessTree> tree = tree_sampler.Sample();
    if (!host.ok() || !tree.ok()) {
      std::fprintf(stderr, "sample_cost: %s\n",
                   (!host.ok() ? host.status() : tree.status()).message().c_str());
      return 1;
    }
    processes = tree->processes.size();
    std::vector<int32_t> ran;
    for (const ProcessSample& p : tree->processes) {
      auto [it, first] = ticks.try_emplace(p.pid, p.cpu_ticks());
      if (first || it->second != p.cpu_ticks() || all_ran) ran.push_back(p.pid);
      it->second = p.cpu_ticks();
    }
    open_inputs += open_files.Sample(ran).size();
    s.before = std::move(s.after);
    s.after = std::move(*host);
    if (i > 0) ComputeSnapshotRates(s);  // the first sample only sets the baseline
    if (i == 0) after_first = CpuSeconds();
    if (i == samples) break;
    // Boundary samples between this interval sample and the next.
    const auto gap = std::chrono::duration<double>(interval / (boundaries + 1));
    for (int b = 0; b < boundaries; ++b) {
      std::this_thread::sleep_for(gap);
      Result<ProcessTree> at = tree_sampler.Sample(/*every_io=*/true);
      DiskstatsSample disks;
      if (Result<DiskstatsSample> read = ReadDiskstats(root); read.ok()) disks = std::move(*read);
      BoundarySample reading =
          MakeBoundarySample(0, b, at.ok() ? &*at : nullptr, disks, whole_disks, ticks_per_second);
      boundary_disks += reading.disk_read_bytes.size();
      ++boundaries_taken;
    }
    std::this_thread::sleep_for(gap);
  }
  // The first sample reads every file of every member (and the stat of every
  // process of the host); the later ones show the steady cost.
  const double cpu = CpuSeconds();
  std::printf("%d samples of host + %zu processes: %.3f ms CPU per sample (%zu open inputs seen)\n",
              samples, processes, cpu / samples * 1e3, open_inputs);
  if (boundaries_taken > 0) {
    std::printf("  with %zu boundary samples (%d an interval, %zu disk counters kept)\n",
                boundaries_taken, boundaries, boundary_disks);
  }
  std::printf("  start-up %.1f ms, first sample %.1f ms, then %.3f ms per sample\n", started * 1e3,
              (after_first - started) * 1e3,
              samples > 0 ? (cpu - after_first) / samples * 1e3 : 0.0);
  return 0;
}
