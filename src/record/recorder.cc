#include "record/recorder.h"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "core/file.h"
#include "core/host_clock.h"
#include "core/text.h"
#include "core/units.h"
#include "probe/cgroup.h"
#include "probe/cpu_stat.h"
#include "probe/diskstats.h"
#include "probe/environment.h"
#include "probe/ethtool_stats.h"
#include "probe/gpu_probe.h"
#include "probe/host_sampler.h"
#include "probe/infiniband.h"
#include "probe/kernel_log.h"
#include "probe/open_files.h"
#include "probe/other_processes.h"
#include "probe/process_sampler.h"
#include "probe/snapshot.h"
#include "probe/vmstat.h"
#include "record/clock_exchange.h"
#include "record/epoch_boundaries.h"
#include "record/input_tracker.h"
#include "record/kernel_log_watch.h"
#include "record/port_counters.h"
#include "sample/counter_delta.h"
#include "sample/disk_rates.h"

namespace stallscope {
namespace {

// Per-epoch accumulators for the epoch line, kept for the lowest rank seen.
struct EpochProgress {
  int epoch = -1;
  double start_t = 0;
  int64_t steps = 0;
  double wait_seconds = 0;
  double step_seconds = 0;
  uint64_t peak_rss_bytes = 0;
};

// Epoch starts whose RSS is kept for the epoch line at once: marks come at
// most one per 50 ms, and the line drops them as it prints.
constexpr size_t kMaxEpochsKeptForTheLine = 4096;

// One interval's figures from two host samples and the process tree.
// A process's rates over the `seconds` since its last sample, from its
// counters then and now: the share its main thread waited for a CPU, and
// its reads and writes. A counter that fell is another process's (a pid
// reused): no rate.
void SetProcessRates(std::optional<uint64_t> delay_was, std::optional<uint64_t> delay_now,
                     const std::optional<ProcessIo>& io_was, const std::optional<ProcessIo>& io_now,
                     double seconds, ProcessPoint& point) {
  if (delay_now && delay_was && *delay_now >= *delay_was) {
    point.run_delay_percent =
        std::min(100.0, static_cast<double>(*delay_now - *delay_was) / 1e9 / seconds * 100.0);
  }
  if (!io_now || !io_was) return;
  auto kib_per_s = [&](uint64_t ProcessIo::*field) -> std::optional<double> {
    std::optional<uint64_t> grew =
        CounterDelta((*io_was).*field, (*io_now).*field, OnReset::kUnknown);
    if (!grew) return std::nullopt;
    return static_cast<double>(*grew) / 1024.0 / seconds;
  };
  std::optional<double> read = kib_per_s(&ProcessIo::read_bytes);
  std::optional<double> rchar = kib_per_s(&ProcessIo::rchar_bytes);
  if (read && rchar) {
    point.read_kib_per_s = read;
    point.rchar_kib_per_s = rchar;
  }
  std::optional<double> written = kib_per_s(&ProcessIo::write_bytes);
  std::optional<double> wchar = kib_per_s(&ProcessIo::wchar_bytes);
  if (written && wchar) {
    point.write_kib_per_s = written;
    point.wchar_kib_per_s = wchar;
  }
}

class IntervalSampler {
 public:
  // Without a data disk, the busiest of `candidate_disks` (whole, physical
  // disks: partitions repeat their disk, loop/ram/zram are never the data)
  // stands for it, interval by interval.
  IntervalSampler(Root root, pid_t root_pid, std::string data_disk,
                  std::set<std::string> candidate_disks, bool read_cgroup, int cpu_count,
                  std::function<std::optional<bool>(int32_t)> adopt)
      : root_(std::move(root)),
        root_pid_(root_pid),
        data_disk_(std::move(data_disk)),
        data_disk_given_(!data_disk_.empty()),
        candidate_disks_(std::move(candidate_disks)),
        read_cgroup_(read_cgroup),
        cpu_count_(cpu_count),
        ticks_per_second_(static_cast<double>(ClockTicksPerSecond())),
        host_(root_),
        tree_(root_, root_pid, TreeOptions(std::move(adopt))),
        others_(root_),
        open_inputs_(root_) {}

  // The first call only sets the baseline (a delta needs two samples).
  // `others` gets the processes outside the tree that took the CPUs, in an
  // interval where the tree left them busy.
  Result<TimelineSample> Sample(double t, const std::set<int>& hook_pids,
                                std::vector<ProcessPoint>& points,
                                std::vector<OtherProcessPoint>* others = nullptr) {
    Result<HostSample> host = host_.Sample(nullptr);
    if (!host.ok()) return host.status();
    TimelineSample s;
    s.t = t;
    Result<ProcessTree> tree = tree_.Sample();
    std::map<int, uint64_t> ticks;
    std::map<int, ProcessCounters> counters;
    std::set<int> members;
    if (tree.ok()) {
      double seconds = have_previous_ ? host->monotonic_seconds - previous_.monotonic_seconds : 0;
      std::map<int, int> parent;
      for (const ProcessSample& p : tree->processes) parent[p.pid] = p.ppid;
      auto under_a_rank = [&](int pid) {
        for (int up = parent.count(pid) ? parent[pid] : 0; up > 0;
             up = parent.count(up) ? parent[up] : 0) {
          if (hook_pids.count(up)) return true;
        }
        return false;
      };
      std::vector<int32_t> ran_pids;
      std::map<int32_t, const char*> roles;
      for (const ProcessSample& p : tree->processes) {
        members.insert(p.pid);
        ticks[p.pid] = p.cpu_ticks();
        double cpu = 0;
        auto before = previous_ticks_.find(p.pid);
        // Ran, or blocked in the kernel (D: a read that does not return).
        const bool ran =
            before == previous_ticks_.end() || p.cpu_ticks() != before->second || p.state == 'D';
        if (seconds > 0 && before != previous_ticks_.end() && p.cpu_ticks() >= before->second) {
          cpu = static_cast<double>(p.cpu_ticks() - before->second) / ticks_per_second_ / seconds *
                100.0;
        }
        ++s.processes;
        s.tree_rss_bytes += p.rss_bytes;
        s.tree_pss_bytes += p.pss_bytes.value_or(0);
        s.tree_cpu_percent += cpu;
        // Loader workers: below a rank that reported through the hook, or,
        // without the hook, everything below the command itself. A job
        // followed without a root (a Slurm job's processes: a batch shell,
        // srun, the tasks) has its ranks named by the hook alone.
        bool loader = hook_pids.empty() ? root_pid_ > 0 && p.pid != root_pid_ : under_a_rank(p.pid);
        if (loader) s.loader_cpu_percent += cpu;
        ProcessPoint& point = points.emplace_back();
        point.t = t;
        point.pid = p.pid;
        point.ppid = p.ppid;
        point.comm = p.comm;
        point.rss_bytes = p.rss_bytes;
        point.cpu_percent = cpu;
        ProcessCounters& now = counters[p.pid];
        now.run_delay_ns = p.run_delay_ns;
        if (p.io) now.io = p.io;
        if (auto last = previous_counters_.find(p.pid);
            seconds > 0 && last != previous_counters_.end()) {
          const ProcessCounters& was = last->second;
          SetProcessRates(was.run_delay_ns, now.run_delay_ns, was.io, now.io, seconds, point);
        }
        // What it reads: only a member that ran since the last sample can
        // have opened or moved through a file (OpenInputSampler bounds how
        // many are read in one sample).
        const char* role = hook_pids.count(p.pid) || (hook_pids.empty() && p.pid == root_pid_)
                               ? "rank"
                           : loader ? "worker"
                                    : nullptr;
        if (ran && role) {
          ran_pids.push_back(p.pid);
          roles[p.pid] = role;
        }
      }
      for (const OpenInput& f : open_inputs_.Sample(ran_pids)) inputs_.Add(t, roles[f.pid], {f});
    }
    previous_ticks_ = std::move(ticks);
    previous_counters_ = std::move(counters);
    // Judged again only when a new file was seen (not every sample over
    // every kept path): which device is read most changes with new files.
    if (!data_disk_given_ && inputs_.paths() != learnt_at_paths_) {
      learnt_at_paths_ = inputs_.paths();
      LearnDataDisk();
    }

    const MemInfo& m = host->memory;
    s.mem_available_bytes =
        m.available_bytes.value_or(m.free_bytes + m.buffers_bytes + m.cached_bytes);
    if (read_cgroup_) {
      if (Result<CgroupMemory> cg = ReadCgroupMemory(root_); cg.ok()) {
        s.mem_available_bytes = EffectiveAvailableBytes(m, *cg);
      }
    }
    s.swap_used_bytes = m.swap_used_bytes();
    if (have_previous_) {
      Snapshot pair;
      pair.page_size_bytes = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
      pair.before = std::move(previous_);
      pair.after = *host;
      ComputeSnapshotRates(pair);
      double seconds = std::max(pair.interval_seconds, 1e-9);
      auto delta = [](uint64_t a, uint64_t b) { return b > a ? static_cast<double>(b - a) : 0.0; };
      s.swap_in_pages_per_s =
          delta(pair.before.vmstat.pswpin_pages, pair.after.vmstat.pswpin_pages) / seconds;
      s.swap_out_pages_per_s =
          delta(pair.before.vmstat.pswpout_pages, pair.after.vmstat.pswpout_pages) / seconds;
      s.cpu_busy_percent = pair.cpu_usage.total.busy_percent();
      // CPU the tree did not use, in percent of one CPU: another job's?
      const double outside = s.cpu_busy_percent * cpu_count_ - s.tree_cpu_percent;
      if (others && cpu_count_ > 0 && outside >= kOthersWorthLookingPercent) {
        members.insert(static_cast<int>(getpid()));  // stallscope is not another job
        *others = others_.Sample(t, host->monotonic_seconds, members);
      }
      s.cpu_iowait_percent = pair.cpu_usage.total.iowait_percent;
      const DiskRates* disk = nullptr;
      for (const DiskRates& r : pair.disk_rates) {
        if (!data_disk_.empty() ? r.name == data_disk_
                                : (!disk || r.util_percent > disk->util_percent) &&
                                      candidate_disks_.count(r.name)) {
          disk = &r;
        }
      }
      if (disk) {
        s.disk_util_percent = disk->util_percent;
        s.disk_await_ms = disk->await_ms;
        s.disk_read_kib_per_s = disk->read_kib_per_second;
        disk_name_ = disk->name;
      }
    }
    previous_ = std::move(*host);
    have_previous_ = true;
    return s;
  }

  // A boundary sample now (record/epoch_boundaries.h): the tree read by the
  // same sampler as the intervals, and /proc/diskstats. The interval figures
  // are untouched (their deltas run from the previous interval).
  BoundarySample Boundary(double t, std::optional<int> epoch,
                          const std::set<std::string>& whole_disks) {
    Result<ProcessTree> tree = tree_.Sample(/*every_io=*/true);
    DiskstatsSample disks;
    if (Result<DiskstatsSample> read = ReadDiskstats(root_); read.ok()) disks = std::move(*read);
    return MakeBoundarySample(t, epoch, tree.ok() ? &*tree : nullptr, disks, whole_disks,
                              ticks_per_second_);
  }

  const std::string& disk_name() const { return disk_name_; }
  const HostSample& last_host() const { return previous_; }
  const InputTracker& inputs() const { return inputs_; }
  // Remote mounts given up by the open-file probe (one note each).
  std::vector<std::string> TakeRemoteNotes() { return open_inputs_.TakeNotes(); }
  // The data disk learnt from what the workers read (empty: not learnt, or
  // given with --data).
  const std::string& learnt_data_disk() const { return learnt_disk_; }

 private:
  struct ProcessCounters {
    std::optional<uint64_t> run_delay_ns;
    std::optional<ProcessIo> io;
  };
  // Other processes are looked at when the host's CPUs did this much more
  // than the tree (percent of one CPU): half a CPU is more than the
  // sampler's own and the system's background.
  static constexpr double kOthersWorthLookingPercent = 50.0;

  // The disk behind the files the workers read stands for the data disk
  // from then on (partitions: their whole disk, as iostat names it).
  void LearnDataDisk() {
    std::optional<std::pair<uint32_t, uint32_t>> device = inputs_.DataDevice();
    if (!device || device == learnt_device_) return;
    learnt_device_ = device;
    Result<BlockDevice> dev = ReadBlockDeviceByNumber(root_, device->first, device->second);
    if (!dev.ok()) return;
    learnt_disk_ = dev->disk.empty() ? dev->name : dev->disk;
    data_disk_ = learnt_disk_;
  }

  Root root_;
  pid_t root_pid_;
  std::string data_disk_;
  bool data_disk_given_;
  std::set<std::string> candidate_disks_;
  bool read_cgroup_;
  int cpu_count_;
  double ticks_per_second_;
  // Kept files re-read each interval (probe/process_sampler.h): the cheap
  // way to sample a large tree every second. cmdline is not needed here.
  static ProcessSamplerOptions TreeOptions(std::function<std::optional<bool>(int32_t)> adopt) {
    ProcessSamplerOptions options;
    options.adopt = std::move(adopt);
    options.read_cmdline = false;
    return options;
  }
  HostSampler host_;
  ProcessTreeSampler tree_;
  HostSample previous_;
  bool have_previous_ = false;
  std::map<int, uint64_t> previous_ticks_;
  std::map<int, ProcessCounters> previous_counters_;
  std::string disk_name_;
  OtherProcessesCpu others_;
  OpenInputSampler open_inputs_;
  InputTracker inputs_;
  std::optional<std::pair<uint32_t, uint32_t>> learnt_device_;
  std::string learnt_disk_;
  size_t learnt_at_paths_ = 0;
};

std::string SummaryLine(const TimelineSample& s, uint64_t mem_total, const std::string& disk,
                        int ranks) {
  std::string line = fmt::format(
      "[{:>6.0f}s] {} | avail {:>5.1f}% | swap in/out {:.0f}/{:.0f} p/s | cpu {:>5.1f}%", s.t,
      s.processes > 0 ? fmt::format("rss {:>9}", FormatBytes(s.tree_rss_bytes)) : "job ended    ",
      mem_total
          ? 100.0 * static_cast<double>(s.mem_available_bytes) / static_cast<double>(mem_total)
          : 0.0,
      s.swap_in_pages_per_s, s.swap_out_pages_per_s, s.cpu_busy_percent);
  if (!disk.empty()) {
    line += fmt::format(" | {} {:.0f}% {:.1f} ms", disk, s.disk_util_percent, s.disk_await_ms);
  }
  if (ranks > 0) {
    line += fmt::format(" | {:.1f} steps/s, data wait {:.0f}%", s.steps_per_s,
                        100.0 * s.data_wait_fraction);
  }
  return line + "\n";
}

void FoldSteps(const std::vector<StepEvent>& steps, double interval_seconds, TimelineSample& s) {
  if (steps.empty() || interval_seconds <= 0) return;
  std::set<int> ranks;
  double wait = 0, total = 0;
  for (const StepEvent& e : steps) {
    ranks.insert(e.rank);
    wait += e.wait_seconds;
    total += e.step_seconds;
  }
  s.steps_per_s =
      static_cast<double>(steps.size()) / static_cast<double>(ranks.size()) / interval_seconds;
  s.data_wait_fraction = total > 0 ? std::min(1.0, wait / total) : 0;
}

std::string EpochLine(const EpochProgress& e, double end_t) {
  double seconds = end_t - e.start_t;
  return fmt::format(
      "epoch {}: {:.1f} s, {} steps, {:.1f} steps/s, data wait {:.0f}%, peak tree RSS {}\n",
      e.epoch, seconds, e.steps, seconds > 0 ? static_cast<double>(e.steps) / seconds : 0.0,
      e.step_seconds > 0 ? 100.0 * e.wait_seconds / e.step_seconds : 0.0,
      FormatBytes(e.peak_rss_bytes));
}

sigset_t RecordSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGCHLD);
  return set;
}

// A job's process tree can fork without end; the pids kept to match OOM
// victims against stop growing here.
constexpr size_t kMaxJobPidsKept = 1 << 16;
// Clock pings: rounds per try, the wait for each answer, and how many
// samples try before giving up (node 0 may start later than this node).
constexpr int kClockRounds = 8;
constexpr int kClockTimeoutMs = 50;
constexpr int kClockTries = 60;

// `run -- LAUNCHER`: what a rank's environment says of its node's place.
// False when it says nothing (no GROUP_RANK, WORLD_SIZE nor MASTER_ADDR).
bool NodeFromRankEnvironment(const Root& root, int pid, NodeInfo& node) {
  Result<TrainingEnvironment> env = ReadProcessEnvironment(root, pid);
  if (!env.ok()) return false;
  auto number = [&](std::string_view name) -> std::optional<int> {
    std::optional<std::string_view> v = env->Get(name);
    if (!v) return std::nullopt;
    std::optional<uint64_t> n = ParseUint(Trim(*v));
    if (!n || *n > (1u << 30)) return std::nullopt;
    return static_cast<int>(*n);
  };
  std::optional<int> world = env->WorldSize();
  std::optional<int> group = number("GROUP_RANK");
  std::optional<std::string_view> master = env->Get("MASTER_ADDR");
  if (!world && !group && !master) return false;
  node.node_rank = group;
  node.world_size = world;
  node.procs_per_node = number("LOCAL_WORLD_SIZE");
  node.nnodes = number("GROUP_WORLD_SIZE");
  if (!node.nnodes && node.world_size && node.procs_per_node && *node.procs_per_node > 0) {
    node.nnodes = *node.world_size / *node.procs_per_node;
  }
  node.master_addr = master ? std::string(*master) : "";
  node.master_port = number("MASTER_PORT");
  if (std::optional<std::string_view> job = env->Get("SLURM_JOB_ID")) {
    node.launcher_job = std::string(*job);
  }
  node.source = fmt::format("the ranks' environment (pid {})", pid);
  return true;
}
// How often, and how far apart, a counted OOM kill's report is looked for.
constexpr int kOomReportRetries = 5;
constexpr useconds_t kOomReportRetryMicroseconds = 50'000;
// Allocation reports kept from one run: the hook sends a few per tracing.
constexpr size_t kMaxAllocationReportsKept = 4096;
// Checkpoints and evaluation loops kept per run: a few per epoch; more is a
// job that wraps every batch (its time breakdown needs no more).
constexpr size_t kMaxPhaseSpansKept = 100000;

// The name the kernel gives a process exec'ed from `path`: its file name,
// cut to TASK_COMM_LEN - 1 bytes.
std::string CommOf(const std::string& path) {
  std::string name = path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1);
  return name.substr(0, 15);
}

// What the kernel kept of the job's memory peak once it ended (MemoryPeak in
// sample/timeline.h): the cgroup's high-water mark when it rose during the
// run, and, when the kernel counted OOM kills during it, the killer's
// reports of processes of the job. Why either is missing goes to `notes`.
std::vector<MemoryPeak> KernelMemoryPeaks(const Root& root, const RunInfo& info,
                                          std::optional<uint64_t> cgroup_peak_at_start,
                                          std::optional<bool> oom_kills_counted,
                                          const std::map<int, std::string>& job_pids,
                                          std::vector<std::string>& notes) {
  std::vector<MemoryPeak> peaks;
  if (info.cgroup_limit_bytes) {
    Result<CgroupMemory> cg = ReadCgroupMemory(root);
    if (cg.ok() && cg->peak_bytes && cgroup_peak_at_start &&
        *cg->peak_bytes > *cgroup_peak_at_start) {
      const char* file =
          cg->version == CgroupVersion::kV1 ? "memory.max_usage_in_bytes" : "memory.peak";
      peaks.push_back({"cgroup", 0, *cg->peak_bytes,
                       fmt::format("{}/{} (every process of the cgroup, page cache included)",
                                   cg->directory, file)});
    } else if (cg.ok() && cg->peak_bytes && cgroup_peak_at_start) {
      notes.push_back(fmt::format(
          "memory: the memory cgroup's peak ({}) did not rise during the run, so it may be an "
          "earlier job's and is not taken as this one's",
          FormatBytes(*cg->peak_bytes)));
    } else if (cg.ok() && cg->peak_bytes) {
      notes.push_back(
          "memory: the memory cgroup's peak was not readable when the run started, so the one "
          "it has now is not taken as this run's");
    }
  }
  if (oom_kills_counted == false) return peaks;
  // The kernel's clock and CLOCK_MONOTONIC drift apart slowly: a minute and
  // a thousandth of the uptime of slack keeps this run's kills in.
  const double since = info.start_monotonic_seconds - 60 - info.start_monotonic_seconds / 1000;
  // The killer sends SIGKILL before it prints its report: a job reaped at
  // once can be here first. A kill counted and not yet found is looked for
  // again, briefly.
  for (int attempt = 0;; ++attempt) {
    Result<std::vector<OomKill>> kills = ReadOomKills(root, since);
    if (!kills.ok()) {
      notes.push_back("memory: the OOM killer's report was not read: " + kills.status().message());
      return peaks;
    }
    for (const OomKill& k : *kills) {
      // The pid and the name both: a kernel in another pid namespace (a
      // container) prints pids that are not ours.
      auto seen = job_pids.find(k.pid);
      if (seen == job_pids.end() || (!seen->second.empty() && seen->second != k.comm)) continue;
      peaks.push_back({"oom_kill", k.pid, k.rss_bytes(), k.message});
    }
    const bool found = std::any_of(peaks.begin(), peaks.end(),
                                   [](const MemoryPeak& p) { return p.source == "oom_kill"; });
    if (found || oom_kills_counted != true || attempt >= kOomReportRetries) {
      if (!found && oom_kills_counted == true) {
        notes.push_back(
            "memory: the kernel counted an OOM kill during the run, but its log names no "
            "process of the job (another process was chosen, the report left the log's ring "
            "buffer, or this is another pid namespace than the kernel's)");
      }
      return peaks;
    }
    usleep(kOomReportRetryMicroseconds);
  }
}

}  // namespace

void BlockRecordSignals() {
  sigset_t set = RecordSignals();
  sigprocmask(SIG_BLOCK, &set, nullptr);
}

Result<int> OpenRecordSignalFd() {
  sigset_t set = RecordSignals();
  int fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (fd < 0) return Status::FromErrno("signalfd", errno);
  return fd;
}

Result<RecordOutcome> RecordJob(Job& job, RunInfo info, const RecordOptions& options,
                                HookReceiver* hook, RunWriter& writer, std::FILE* status) {
  Result<int> opened = OpenRecordSignalFd();
  if (!opened.ok()) return opened.status();
  int signal_fd = *opened;
  const Root root(options.root);

  const int64_t start_ns = static_cast<int64_t>(info.start_monotonic_seconds * 1e9);
  const int64_t interval_ns = static_cast<int64_t>(options.interval_seconds * 1e9);
  std::optional<uint64_t> oom_kills_at_start;
  if (auto v = ReadVmStat(root); v.ok()) oom_kills_at_start = v->oom_kill;
  // What the kernel's log already held is not this run's.
  const KernelLogWatch kernel_log =
      options.kernel_log ? *options.kernel_log : KernelLogWatch(root, info.start_monotonic_seconds);
  std::optional<uint64_t> cgroup_peak_at_start;
  if (info.cgroup_limit_bytes) {
    if (Result<CgroupMemory> cg = ReadCgroupMemory(root); cg.ok()) {
      cgroup_peak_at_start = cg->peak_bytes;
    }
  }
  // Every process of the job seen, with its name, to know its OOM victims.
  std::map<int, std::string> job_pids;
  size_t allocation_reports = 0;
  size_t spans_kept = 0;

  std::set<std::string> disks;
  // Boundary samples read every whole disk that can hold a dataset: loop and
  // device-mapper ones too (the data disk may be learnt as one), not RAM.
  std::set<std::string> whole_disks;
  if (auto devices = ReadBlockDevices(root); devices.ok()) {
    for (const BlockDevice& d : *devices) {
      if (!d.is_partition && !d.is_virtual) disks.insert(d.name);
      if (!d.is_partition && !d.name.starts_with("ram") && !d.name.starts_with("zram")) {
        whole_disks.insert(d.name);
      }
    }
  }
  IntervalSampler sampler(root, job.pid(), info.data_device, std::move(disks),
                          info.cgroup_limit_bytes.has_value(), info.cpu_count, options.adopt);
  std::vector<ProcessPoint> points;
  HookEvents events;
  if (Result<TimelineSample> first = sampler.Sample(0, events.pids, points); !first.ok()) {
    close(signal_fd);
    return first.status();
  }
  for (const ProcessPoint& p : points) job_pids[p.pid] = p.comm;
  // A job `run` started may not have exec'ed yet: its name is the one exec
  // will give it, should it die before the next sample.
  if (options.forward_signals && !info.command.empty()) {
    job_pids[job.pid()] = CommOf(info.command.substr(0, info.command.find(' ')));
  } else if (job.pid() > 0) {
    job_pids.emplace(job.pid(), std::string());
  }
  points.clear();
  // GPUs: a missing library or driver leaves the probe unavailable (no rows).
  std::unique_ptr<GpuProbe> gpu_probe = GpuProbe::Open(root);
  if (gpu_probe->available()) (void)gpu_probe->Sample();  // GPM's first sample
  // Network port error counters: stored when they move (record/port_counters.h).
  // RDMA ports are read each interval only on a host that has them.
  PortCounterTracker port_tracker;
  const bool has_rdma = [&root] {
    Result<std::vector<InfinibandDevice>> devices = ReadInfinibandDevices(root);
    return devices.ok() && !devices->empty();
  }();
  auto read_rdma = [has_rdma, &root] {
    std::vector<InfinibandDevice> devices;
    if (!has_rdma) return devices;
    if (auto read = ReadInfinibandDevices(root); read.ok()) devices = std::move(*read);
    return devices;
  };
  std::vector<InfinibandDevice> rdma_now = read_rdma();
  std::vector<PortCounterPoint> ports = port_tracker.Update(0, sampler.last_host().net, rdma_now);
  // Congestion counters (the NICs' driver statistics, the RDMA ports'
  // xmit_wait and hw_counters): read each interval only when the first
  // reading found a port that counts any.
  CongestionTracker congestion_tracker;
  std::vector<CongestionPoint> congestion =
      congestion_tracker.Update(0, ReadEveryNicStats(root, nullptr), rdma_now);
  const bool has_congestion = !congestion.empty();

  // The run's place in the job, and the clock between nodes.
  NodeInfo node = options.node;
  bool node_known = !options.node_from_ranks;
  // The job's interface, once its master is known, and its last counters.
  bool interface_looked_up = false;
  auto look_up_interface = [&] {
    if (interface_looked_up || !options.interface_toward || node.master_addr.empty()) return;
    interface_looked_up = true;
    node.net_interface = options.interface_toward(node.master_addr);
  };
  look_up_interface();
  std::optional<NetDevCounters> last_nic;
  double last_nic_t = 0;
  auto nic_rates = [&](double t, TimelineSample& s) {
    if (node.net_interface.empty()) return;
    const std::vector<NetDevCounters>& nics = sampler.last_host().net;
    auto it = std::find_if(nics.begin(), nics.end(),
                           [&](const NetDevCounters& n) { return n.name == node.net_interface; });
    if (it == nics.end()) {
      last_nic.reset();
      return;
    }
    // A counter that went back (the interface re-created) starts over.
    if (last_nic && t > last_nic_t) {
      std::optional<uint64_t> rx =
          CounterDelta(last_nic->rx_bytes, it->rx_bytes, OnReset::kUnknown);
      std::optional<uint64_t> tx =
          CounterDelta(last_nic->tx_bytes, it->tx_bytes, OnReset::kUnknown);
      if (rx && tx) {
        s.net_rx_bytes_per_s = static_cast<double>(*rx) / (t - last_nic_t);
        s.net_tx_bytes_per_s = static_cast<double>(*tx) / (t - last_nic_t);
      }
    }
    last_nic = *it;
    last_nic_t = t;
  };
  {
    TimelineSample first;
    nic_rates(0, first);  // the counters the first interval's rates start from
  }
  // Its failure (the file system full since the file was made) stops the
  // recording below, said once; the job, already running, goes on.
  Status node_written = writer.WriteNode(node);
  // Made now, rows or none: a file without it predates the spans.
  if (node_written.ok()) node_written = writer.AppendPhaseSpans({});
  if (node_written.ok()) node_written = writer.AppendHostSyncs({});
  std::optional<ClockServer> clock_server;
  if (options.serve_clock) {
    if (Result<ClockServer> opened = ClockServer::Open(options.clock_port); opened.ok()) {
      clock_server.emplace(std::move(*opened));
    } else {
      std::fprintf(status,
                   "stallscope: cannot answer the other nodes' clock pings (%s); their run files "
                   "align on their own clocks\n",
                   opened.status().message().c_str());
    }
  }
  int clock_tries_left = options.clock_peer.empty() ? 0 : kClockTries;

  RecordOutcome outcome;
  // The ranks' ends and a hang (record/rank_watch.h); their rows wait here
  // until a hang is found or the run ends.
  RankWatch ranks_watch(root, hook ? hook->directory() : std::string(), options.hang, start_ns);
  std::vector<RankStop> stops_pending;
  size_t stops_written = 0;                // of a run's stop records, at most kMaxStopsKept
  std::vector<RankInfo> ranks_hello;       // every hello, for the job's own rank
  std::optional<int64_t> hang_kill_at_ns;  // --hang-action kill: SIGKILL to what is left then
  EpochProgress epoch;
  int64_t next_tick = start_ns + interval_ns;
  double last_t = 0;
  bool ended = false;
  std::set<int> ranks_seen;

  // Boundary samples: at each new epoch mark, and when the job's command
  // exits (before it is reaped, while its counters can still be read).
  EpochBoundaryClock boundary_clock;
  bool end_read = false;
  // Once a write to the run file fails (its file system full or gone),
  // recording stops: said once, with why; what was committed stays readable
  // and the job goes on unharmed.
  bool stopped = false;
  auto stop_recording = [&](const Status& why) {
    if (stopped) return;
    stopped = outcome.recording_stopped = true;
    const double t = static_cast<double>(MonotonicNs() - start_ns) / 1e9;
    std::fprintf(status,
                 "stallscope: recording stopped at %.1f s: %s; the run file keeps what was "
                 "recorded before, and the job goes on\n",
                 t, why.message().c_str());
    // Into the file alone, where space allows (retried when the run ends).
    (void)writer.Checkpoint();
  };
  // The tree's RSS at the readings of epoch starts, for the epoch line of an
  // epoch that no interval sample fell inside (dropped once printed).
  std::map<int, uint64_t> rss_at_epoch_start;
  if (!node_written.ok()) stop_recording(node_written);
  auto take_boundary = [&](std::optional<int> epoch) {
    const double t = static_cast<double>(MonotonicNs() - start_ns) / 1e9;
    const BoundarySample reading = sampler.Boundary(t, epoch, whole_disks);
    if (epoch && rss_at_epoch_start.size() < kMaxEpochsKeptForTheLine) {
      rss_at_epoch_start[*epoch] = reading.tree_rss_bytes;
    }
    if (stopped) return;
    if (Status s = writer.AppendBoundarySample(reading); !s.ok()) stop_recording(s);
  };
  auto take_due_boundary = [&] {
    boundary_clock.Mark(events.epochs);
    const double now_s = static_cast<double>(MonotonicNs() - start_ns) / 1e9;
    if (std::optional<int> epoch = boundary_clock.TakeDue(now_s)) take_boundary(epoch);
  };

  auto write_stops = [&] {
    std::vector<RankStop> stops = ranks_watch.TakeStops();
    stops.insert(stops.begin(), stops_pending.begin(), stops_pending.end());
    stops_pending.clear();
    stops_written += stops.size();
    std::vector<RankState> states = ranks_watch.TakeStates();
    if (stopped) return;
    if (Status s = writer.AppendRankStops(stops, states); !s.ok()) stop_recording(s);
  };
  auto record_interval = [&](int64_t now_ns) -> Status {
    if (hook) hook->Drain(start_ns, events);
    ranks_watch.NoteRanks(events.ranks);
    ranks_watch.NoteSteps(events.steps);
    for (const RankInfo& r : events.ranks) {
      if (ranks_hello.size() < 65536) ranks_hello.push_back(r);
    }
    if (info.script.empty() && !events.script.empty()) info.script = events.script;
    if (ended) ranks_watch.Recover(events);
    for (RankStop& stop : events.stops) {
      if (stops_pending.size() + stops_written >= kMaxStopsKept) break;
      stops_pending.push_back(std::move(stop));
    }
    if (!ended && ranks_watch.Check(now_ns, status) == HangAction::kEndJob) {
      std::fprintf(status,
                   "stallscope: --hang-action kill: ending the job (SIGTERM, then SIGKILL "
                   "after %d s)\n",
                   kRankTermGraceSeconds);
      job.Forward(SIGTERM);
      hang_kill_at_ns = MonotonicNs() + kRankTermGraceSeconds * 1000000000LL;
    }
    if (ranks_watch.has_rows()) write_stops();
    if (!ended) take_due_boundary();
    double t = static_cast<double>(now_ns - start_ns) / 1e9;
    const double realtime = RealtimeSeconds();
    points.clear();
    std::vector<OtherProcessPoint> others;
    Result<TimelineSample> sample = sampler.Sample(t, events.pids, points, &others);
    if (!sample.ok()) return sample.status();
    sample->realtime_seconds = realtime;
    bool node_changed = false;
    if (!node_known) {
      for (const RankInfo& r : events.ranks) {
        if (NodeFromRankEnvironment(root, r.pid, node)) {
          node_known = node_changed = true;
          look_up_interface();
          break;
        }
      }
    }
    nic_rates(t, *sample);
    if (clock_tries_left > 0) {
      --clock_tries_left;
      Result<std::optional<ClockOffsetEstimate>> clock =
          MeasureClockOffset(options.clock_peer, options.clock_port, kClockRounds, kClockTimeoutMs);
      if (!clock.ok()) {
        clock_tries_left = 0;
      } else if (clock->has_value()) {
        node.clock_offset_seconds = (*clock)->offset_seconds;
        node.clock_round_trip_seconds = (*clock)->round_trip_seconds;
        clock_tries_left = 0;
        node_changed = true;
      }
    }
    if (node_changed && !stopped) {
      if (Status s = writer.WriteNode(node); !s.ok()) stop_recording(s);
    }
    for (const ProcessPoint& p : points) {
      if (auto known = job_pids.find(p.pid); known != job_pids.end()) {
        known->second = p.comm;  // it may have exec'ed since
      } else if (job_pids.size() < kMaxJobPidsKept) {
        job_pids.emplace(p.pid, p.comm);
      }
    }
    rdma_now = read_rdma();
    for (PortCounterPoint& p :
         port_tracker.Update(t, sampler.last_host().net, rdma_now, /*all=*/ended)) {
      ports.push_back(std::move(p));
    }
    if (has_congestion) {
      for (CongestionPoint& p : congestion_tracker.Update(t, ReadEveryNicStats(root, nullptr),
                                                          rdma_now, /*all=*/ended)) {
        congestion.push_back(std::move(p));
      }
    }
    FoldSteps(events.steps, t - last_t, *sample);
    last_t = t;
    // The epoch line, for the lowest rank that reports.
    for (const StepEvent& e : events.steps) ranks_seen.insert(e.rank);
    int lead = ranks_seen.empty() ? 0 : *ranks_seen.begin();
    // Steps and epoch marks in time order: a datagram often carries the last
    // steps of one epoch together with the mark of the next.
    size_t next_step = 0;
    auto count_steps_before = [&](double t_limit) {
      for (; next_step < events.steps.size() && events.steps[next_step].t <= t_limit; ++next_step) {
        const StepEvent& e = events.steps[next_step];
        if (e.rank != lead) continue;
        ++epoch.steps;
        epoch.wait_seconds += e.wait_seconds;
        epoch.step_seconds += e.step_seconds;
      }
    };
    std::stable_sort(events.steps.begin(), events.steps.end(),
                     [](const StepEvent& a, const StepEvent& b) { return a.t < b.t; });
    for (const EpochEvent& e : events.epochs) {
      if (e.rank != lead) continue;
      count_steps_before(e.t);
      // Its RSS at its start and at the next one's, read when they were marked.
      const uint64_t rss_at_next =
          rss_at_epoch_start.count(e.epoch) ? rss_at_epoch_start[e.epoch] : 0;
      if (epoch.epoch >= 0) {
        epoch.peak_rss_bytes = std::max(epoch.peak_rss_bytes, rss_at_next);
        std::fputs(EpochLine(epoch, e.t).c_str(), status);
      }
      rss_at_epoch_start.erase(rss_at_epoch_start.begin(), rss_at_epoch_start.lower_bound(e.epoch));
      epoch = EpochProgress{e.epoch, e.t, 0, 0, 0, rss_at_next};
    }
    count_steps_before(std::numeric_limits<double>::infinity());
    epoch.peak_rss_bytes = std::max(epoch.peak_rss_bytes, sample->tree_rss_bytes);
    Status written = stopped
                         ? Status::Ok()
                         : writer.AppendInterval(*sample, points, events.steps, events.epochs,
                                                 events.loaders, ports, events.ranks, events.syncs);
    ports.clear();
    if (written.ok() && !stopped) written = writer.AppendOtherProcesses(others);
    if (written.ok() && !stopped) written = writer.AppendCongestion(congestion);
    if (written.ok() && !stopped) written = writer.AppendBuckets(events.buckets);
    if (written.ok() && !stopped && !events.spans.empty() && spans_kept < kMaxPhaseSpansKept) {
      const size_t keep = std::min(events.spans.size(), kMaxPhaseSpansKept - spans_kept);
      spans_kept += keep;
      written = writer.AppendPhaseSpans(std::span<const PhaseSpan>(events.spans.data(), keep));
    }
    if (written.ok() && !stopped && !events.host_syncs.empty()) {
      written = writer.AppendHostSyncs(events.host_syncs);
    }
    congestion.clear();
    if (written.ok() && !stopped && allocation_reports < kMaxAllocationReportsKept) {
      allocation_reports += events.allocations.size();
      written = writer.AppendAllocations(events.allocations);
    }
    // GPUs (NVML), the job's first; GPM covers the interval since the last call.
    if (written.ok() && !stopped && gpu_probe->available()) {
      std::set<int> sampled_pids;
      for (const ProcessPoint& p : points) sampled_pids.insert(p.pid);
      std::vector<GpuPoint> gpus;
      for (GpuState& g : JobGpusFirst(gpu_probe->Sample().gpus, sampled_pids)) {
        gpus.push_back({t, std::move(g)});
      }
      written = writer.AppendGpuSamples(gpus);
    }
    // Inside a memory limit the share is of the limit, as the job sees it.
    const uint64_t usable =
        std::min(info.mem_total_bytes, info.cgroup_limit_bytes.value_or(info.mem_total_bytes));
    std::fputs(
        SummaryLine(*sample, usable, sampler.disk_name(), static_cast<int>(ranks_seen.size()))
            .c_str(),
        status);
    std::fflush(status);
    std::set<int> pids = std::move(events.pids);
    events = HookEvents{};
    events.pids = std::move(pids);  // ranks stay known for the loader CPU split
    if (!written.ok()) stop_recording(written);
    return Status::Ok();  // the job goes on either way
  };

  Status failure;
  while (!ended) {
    int64_t now = MonotonicNs();
    int64_t wake = next_tick;
    if (std::optional<double> due = boundary_clock.DueAt()) {
      wake = std::min(wake, start_ns + static_cast<int64_t>(*due * 1e9));
    }
    int timeout_ms = static_cast<int>(std::max<int64_t>(0, (wake - now + 999999) / 1000000));
    if (hang_kill_at_ns) {
      timeout_ms = std::min<int>(
          timeout_ms, static_cast<int>(std::max<int64_t>(0, (*hang_kill_at_ns - now) / 1000000)));
    }
    std::vector<pollfd> fds = {{signal_fd, POLLIN, 0},
                               {hook ? hook->fd() : -1, POLLIN, 0},
                               {clock_server ? clock_server->fd() : -1, POLLIN, 0}};
    for (int pidfd : ranks_watch.PidFds()) fds.push_back({pidfd, POLLIN, 0});
    poll(fds.data(), fds.size(), timeout_ms);
    if (fds[2].revents & POLLIN) clock_server->Answer();
    if (fds[0].revents & POLLIN) {
      struct signalfd_siginfo si;
      while (read(signal_fd, &si, sizeof si) == sizeof si) {
        if (si.ssi_signo == SIGCHLD) continue;  // Poll() below reaps it
        if (!options.forward_signals) {
          outcome.interrupted = true;
          ended = true;
        } else if (si.ssi_code == SI_USER || si.ssi_code == SI_QUEUE) {
          // Sent to stallscope alone: the job has not seen it.
          job.Forward(static_cast<int>(si.ssi_signo));
        }
        // From the terminal (SI_KERNEL): the job, in our process group,
        // already got it; sending it again would hit it twice.
      }
    }
    if (hook && (fds[1].revents & POLLIN)) hook->Drain(start_ns, events);
    ranks_watch.NoteRanks(events.ranks);
    ranks_watch.NoteEnds(MonotonicNs());
    if (hang_kill_at_ns && MonotonicNs() >= *hang_kill_at_ns) {
      hang_kill_at_ns.reset();
      job.Forward(SIGKILL);
      ranks_watch.SignalRanks(SIGKILL);
    }
    if (!end_read && job.ExitedUnreaped()) {
      end_read = true;
      take_boundary(std::nullopt);
    } else if (!end_read) {
      take_due_boundary();
    }
    if (std::optional<JobExit> exit = job.Poll()) {
      outcome.exit = *exit;
      ended = true;
    }
    now = MonotonicNs();
    if (ended || now >= next_tick) {
      if (Status s = record_interval(now); !s.ok() && failure.ok()) {
        failure = s;
        std::fprintf(status, "stallscope: %s (recording goes on)\n", s.message().c_str());
      }
      next_tick += interval_ns;
      if (next_tick <= now) next_tick = now + interval_ns;  // fell behind: skip, don't burst
    }
  }
  close(signal_fd);
  if (epoch.epoch >= 0) std::fputs(EpochLine(epoch, last_t).c_str(), status);
  // `run -- LAUNCHER ...`: ranks the launcher left behind when it ended
  // (it crashed, or was killed) are ended as `run --procs`'s launcher ends
  // its own; never for `watch`, which touches nothing.
  if (options.forward_signals) ranks_watch.EndOrphans(status);
  // The job `run` started is itself a rank (run -- python train.py): its
  // status is known here, as the launcher's reports give a rank's.
  if (job.pid() > 0 && events.pids.count(job.pid()) &&
      (outcome.exit.exit_code || outcome.exit.signal)) {
    RankStop s;
    s.pid = job.pid();
    s.t = last_t;
    s.how = outcome.exit.exit_code ? "exit" : "signal";
    s.exit_code = outcome.exit.exit_code;
    s.signal = outcome.exit.signal;
    s.source = "recorder";
    for (const RankInfo& r : ranks_hello) {
      if (r.pid == s.pid) s.rank = r.rank;
    }
    stops_pending.push_back(std::move(s));
  }
  write_stops();  // also when none: the tables say the file could hold them

  info.duration_seconds = last_t;
  info.exit_code = outcome.exit.exit_code;
  info.exit_signal = outcome.exit.signal;
  // The OOM killer ends a process with SIGKILL and counts it in vmstat.
  std::optional<bool> oom_kills_counted;  // unknown: look in the log all the same
  if (auto v = ReadVmStat(root); v.ok() && v->oom_kill && oom_kills_at_start) {
    oom_kills_counted = *v->oom_kill > *oom_kills_at_start;
    info.oom_killed = outcome.exit.signal == SIGKILL && *oom_kills_counted;
  }
  std::vector<std::string> notes;
  // The data disk, when the run found it from what the workers read.
  if (info.data_device.empty()) info.data_device = sampler.learnt_data_disk();
  // Nothing more goes into a file whose writes failed.
  if (Status s = stopped ? Status::Ok() : writer.AppendInputs(sampler.inputs().Inputs()); !s.ok()) {
    std::fprintf(status, "stallscope: %s (what the job read is not kept)\n", s.message().c_str());
  }
  std::vector<std::string> io_notes = sampler.TakeRemoteNotes();
  if (uint64_t dropped = sampler.inputs().dropped(); dropped > 0 && !stopped) {
    io_notes.push_back(fmt::format(
        "io: the job read more files than are kept ({}); {} more seen open were only counted",
        kMaxInputsKept, dropped));
  }
  if (!io_notes.empty() && !stopped) {
    if (Status s = writer.AppendFindings("io", {}, io_notes); !s.ok()) {
      std::fprintf(status, "stallscope: %s\n", s.message().c_str());
    }
  }
  std::vector<MemoryPeak> peaks =
      KernelMemoryPeaks(root, info, cgroup_peak_at_start, oom_kills_counted, job_pids, notes);
  // The kernel's own report settles it where the counters could not.
  const bool job_killed = std::any_of(peaks.begin(), peaks.end(), [&](const MemoryPeak& p) {
    return p.source == "oom_kill" && p.pid == job.pid();
  });
  if (outcome.exit.signal == SIGKILL && job_killed) info.oom_killed = true;
  outcome.info = info;
  if (stopped) return outcome;
  if (Status s = writer.WriteRunInfo(info); !s.ok()) {
    stop_recording(s);
    return outcome;
  }
  if (Status s = writer.AppendMemoryPeaks(peaks); !s.ok()) {
    std::fprintf(status, "stallscope: %s (the kernel's memory peaks are not kept)\n",
                 s.message().c_str());
  }
  if (Result<KernelLogEvents> during = kernel_log.SinceStart(); during.ok()) {
    if (Status s = writer.AppendKernelEvents(during->xids, during->port_events); !s.ok()) {
      std::fprintf(status, "stallscope: %s (the kernel's Xid errors are not kept)\n",
                   s.message().c_str());
    }
  } else if (gpu_probe->available()) {
    // Where there is no GPU, an unreadable log (dmesg_restrict) is not news.
    notes.push_back("gpu: the kernel log was not read when the job ended (" +
                    during.status().message() +
                    "): Xid errors and port link-downs during the run are not checked");
  }
  if (Status s = writer.AppendFindings("memory", {}, notes); !s.ok()) {
    std::fprintf(status, "stallscope: %s\n", s.message().c_str());
  }
  outcome.info = info;
  return outcome;
}

}  // namespace stallscope
