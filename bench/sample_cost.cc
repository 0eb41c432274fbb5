// The sampler loop `run` and `watch` will drive, alone, for measuring its CPU
// cost: every interval, one host sample (meminfo, vmstat, /proc/stat,
// diskstats, net/dev, PSI) plus the process tree of ROOT_PID (stat, status,
// cmdline, io, smaps_rollup of each member), and the rates against the
// previous sample. bench/sample_cost.py runs it against pidstat + iostat.
//   sample_cost ROOT_PID SAMPLES INTERVAL_S
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "probe/cpu_stat.h"
#include "probe/process_tree.h"
#include "probe/snapshot.h"
#include "sample/disk_rates.h"

int main(int argc, char** argv) {
  using namespace stallscope;
  if (argc != 4) {
    std::fprintf(stderr, "usage: sample_cost ROOT_PID SAMPLES INTERVAL_S\n");
    return 2;
  }
  int32_t pid = std::atoi(argv[1]);
  int samples = std::atoi(argv[2]);
  double interval = std::atof(argv[3]);
  Root root("/");
  ProcessReadOptions options;
  options.clock_ticks_per_second = ClockTicksPerSecond();
  Snapshot s;
  size_t processes = 0;
  for (int i = 0; i <= samples; ++i) {
    Result<HostSample> host = TakeHostSample(root, nullptr);
    Result<ProcessTree> tree = ReadProcessTree(root, pid, options);
    if (!host.ok() || !tree.ok()) {
      std::fprintf(stderr, "sample_cost: %s\n",
                   (!host.ok() ? host.status() : tree.status()).message().c_str());
      return 1;
    }
    processes = tree->processes.size();
    s.before = std::move(s.after);
    s.after = std::move(*host);
    if (i > 0) ComputeSnapshotRates(s);  // the first sample only sets the baseline
    if (i < samples) std::this_thread::sleep_for(std::chrono::duration<double>(interval));
  }
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  double cpu = usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 + usage.ru_stime.tv_sec +
               usage.ru_stime.tv_usec / 1e6;
  std::printf("%d samples of host + %zu processes: %.3f ms CPU per sample\n", samples, processes,
              cpu / samples * 1e3);
  return 0;
}
