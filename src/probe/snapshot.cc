#include "probe/snapshot.h"

#include <fmt/format.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "core/file.h"
#include "core/host_clock.h"
#include "core/read_log.h"
#include "probe/captured_addresses.h"
#include "probe/cgroup.h"
#include "probe/cpu_stat.h"
#include "probe/diskstats.h"
#include "probe/environment.h"
#include "probe/ethtool_stats.h"
#include "probe/gpu_probe.h"
#include "probe/host_sampler.h"
#include "probe/infiniband.h"
#include "probe/kernel_log.h"
#include "probe/net_dev.h"
#include "probe/pcie_link.h"
#include "probe/process_tree.h"
#include "probe/topology.h"
#include "sample/disk_rates.h"
#include "sample/net_rates.h"

namespace stallscope {
namespace {

// On a live root the host's own names; on a fixture root, its files (or empty).
void ReadIdentity(const Root& root, Snapshot& snapshot) {
  if (root.IsLive()) {
    struct utsname uts;
    if (uname(&uts) == 0) {
      snapshot.hostname = uts.nodename;
      snapshot.kernel = uts.release;
      NoteWrittenForCapture("/proc/sys/kernel/hostname", snapshot.hostname + "\n");
      NoteWrittenForCapture("/proc/sys/kernel/osrelease", snapshot.kernel + "\n");
    }
    long page = sysconf(_SC_PAGESIZE);
    if (page > 0) snapshot.page_size_bytes = static_cast<uint64_t>(page);
  } else {
    if (auto h = ReadAttribute(root.Path("/proc/sys/kernel/hostname")); h.ok()) {
      snapshot.hostname = *h;
    }
    if (auto k = ReadAttribute(root.Path("/proc/sys/kernel/osrelease")); k.ok()) {
      snapshot.kernel = *k;
    }
  }
  snapshot.clock_ticks_per_second = ClockTicksPerSecond();
}

template <typename T>
void KeepOrNote(Result<T> result, T& into, std::vector<std::string>& notes, const char* what) {
  if (result.ok()) {
    into = std::move(*result);
  } else {
    notes.push_back(fmt::format("{}: {}", what, result.status().message()));
  }
}

// The environment stallscope itself runs in on a live host (the job's, when
// it wraps one); a fixture root's /proc/self/environ when it has one.
Result<TrainingEnvironment> ReadEnvironmentUnder(const Root& root) {
  if (root.IsLive()) {
    Result<TrainingEnvironment> env = ReadCurrentEnvironment();
    // A capture holds the training variables only (IsTrainingVariable).
    if (env.ok() && CurrentReadLog() != nullptr) {
      std::string block;
      for (const EnvironmentVariable& v : env->variables) block += v.name + "=" + v.value + '\0';
      NoteWrittenForCapture("/proc/self/environ", block);
    }
    return env;
  }
  std::string path = root.Path("/proc/self/environ");
  Result<std::string> text = ReadFile(path);
  if (!text.ok()) {
    if (text.status().IsNotFound()) return TrainingEnvironment{};
    return text.status();
  }
  return ParseEnviron(*text, path);
}

// The interfaces' addresses: getifaddrs on a live host (a capture keeps
// them), the capture's file under another root, else none.
void ReadAddresses(const Root& root, InterfaceAddresses& addresses,
                   std::vector<std::string>& notes) {
  if (root.IsLive()) {
    KeepOrNote(ReadLiveAddresses(), addresses, notes, "interface addresses");
    if (CurrentReadLog() != nullptr) {
      NoteWrittenForCapture(kAddressesCapturePath, AddressesToCaptureJson(addresses));
    }
    return;
  }
  const std::string path = root.Path(kAddressesCapturePath);
  Result<std::string> text = ReadFile(path);
  if (!text.ok()) return;  // a fixture tree without addresses
  KeepOrNote(ParseCapturedAddresses(*text, path), addresses, notes, "interface addresses");
}

void ReadStaticFacts(const Root& root, Snapshot& s) {
  if (Result<CgroupMemory> cgroup = ReadCgroupMemory(root); cgroup.ok()) {
    s.cgroup = std::move(*cgroup);
  } else if (!cgroup.status().IsNotFound()) {
    s.notes.push_back("memory cgroup: " + cgroup.status().message());
  }
  s.container = ReadContainerInfo(root);

  KeepOrNote(ReadBlockDevices(root), s.block_devices, s.notes, "block devices");

  InterfaceAddresses addresses;
  ReadAddresses(root, addresses, s.notes);
  KeepOrNote(ReadInterfaces(root, addresses), s.interfaces, s.notes, "network interfaces");
  KeepOrNote(ReadInfinibandDevices(root), s.infiniband, s.notes, "InfiniBand/RoCE ports");

  if (Result<Topology> topology = ReadTopology(root); topology.ok()) {
    s.topology = std::move(*topology);
  } else {
    s.notes.push_back("topology: " + topology.status().message());
  }
  if (s.topology) s.pcie_links = ReadPcieLinks(root, *s.topology, &s.notes);

  if (Result<KernelLogEvents> log = ReadKernelLog(root); log.ok()) {
    s.kernel_log_read = true;
    s.xids = std::move(log->xids);
    s.port_events = std::move(log->port_events);
  } else if (root.IsLive() || !log.status().IsNotFound()) {
    // A fixture tree without dev/kmsg has no log to speak of.
    s.notes.push_back("kernel log: " + log.status().message() +
                      " (Xid errors and port link-down messages not checked)");
  }

  Result<TrainingEnvironment> env = ReadEnvironmentUnder(root);
  KeepOrNote(std::move(env), s.environment, s.notes, "environment");

  // Pinned memory is summed over every process: the holder may not be the job.
  ProcessReadOptions options;
  options.read_cmdline = false;
  options.read_io = false;
  options.read_pss = false;
  if (Result<ProcessTree> all = ReadAllProcesses(root, options); all.ok()) {
    s.processes = SumTree(*all);
    for (const ProcessSample& p : all->processes) {
      uint64_t pinned = p.vm_lck_bytes + p.vm_pin_bytes.value_or(0);
      if (pinned > s.top_pinned.pinned_bytes) s.top_pinned = {p.pid, p.comm, pinned};
    }
  } else {
    s.notes.push_back("processes: " + all.status().message());
  }
}

// The node's notes whose source ("kernel log" of "kernel log: ...") the
// read-back has no note of.
void AddNodeNotes(const std::vector<std::string>& node_notes, std::vector<std::string>& notes) {
  const size_t ours = notes.size();
  for (const std::string& note : node_notes) {
    const size_t colon = note.find(':');
    const std::string source = colon == std::string::npos ? note : note.substr(0, colon + 1);
    bool known = false;
    for (size_t i = 0; i < ours && !known; ++i) known = notes[i].rfind(source, 0) == 0;
    if (!known) notes.push_back("on the node: " + note);
  }
}

}  // namespace

Result<HostSample> TakeHostSample(const Root& root, std::vector<std::string>* notes) {
  // One sample of a sampler that is then dropped: the same files, parsers and
  // notes as every sample of `run` and `watch`.
  HostSampler sampler(root);
  return sampler.Sample(notes);
}

void ComputeSnapshotRates(Snapshot& s) {
  s.interval_seconds = s.after.monotonic_seconds - s.before.monotonic_seconds;
  double seconds = s.interval_seconds > 0 ? s.interval_seconds : 1e-9;
  if (auto rates = ComputeVmStatRates(s.before.vmstat, s.after.vmstat, seconds, s.page_size_bytes);
      rates.ok()) {
    s.vm_rates = *rates;
  }
  s.cpu_usage = ComputeCpuUsage(s.before.cpu, s.after.cpu);
  s.disk_rates = ComputeAllDiskRates(s.before.disks, s.after.disks, seconds);
  if (auto net = ComputeNetRates(s.before.net, s.after.net, seconds); net.ok()) {
    s.net_rates = std::move(*net);
  }
}

Result<Snapshot> TakeSnapshot(const Root& root, const SnapshotOptions& options) {
  if (!(options.interval_seconds > 0) || options.interval_seconds > 3600) {
    return Status::InvalidArgument(fmt::format(
        "--interval {}: must be above 0 and at most 3600 seconds", options.interval_seconds));
  }
  const std::optional<SnapshotReplay>& replay = options.replay;
  const Root& first_root = replay ? replay->first_sample_root : root;
  Snapshot s;
  if (replay) s.notes = replay->notes;
  ReadIdentity(root, s);
  Result<HostSample> before = TakeHostSample(first_root, &s.notes);
  if (!before.ok()) return before.status();
  s.before = std::move(*before);
  std::vector<NicStats> nic_before = ReadEveryNicStats(first_root, &s.notes);
  // GPUs: this sample starts GPM's interval, the one after the wait ends it.
  std::unique_ptr<GpuProbe> gpu = GpuProbe::Open(root);
  GpuObservation first;
  if (gpu->available()) first = gpu->Sample();
  if (options.after_first_sample) options.after_first_sample();
  // The static facts are read inside the interval: their cost overlaps the wait.
  ReadStaticFacts(root, s);
  double remaining = options.interval_seconds - (MonotonicSeconds() - s.before.monotonic_seconds);
  if (remaining > 0 && !replay) {
    std::this_thread::sleep_for(std::chrono::duration<double>(remaining));
  }
  Result<HostSample> after = TakeHostSample(root, nullptr);
  if (!after.ok()) return after.status();
  s.after = std::move(*after);
  for (const NicStats& now : ReadEveryNicStats(root, nullptr)) {
    Snapshot::NicStatsReading r{
        now.interface, now.source,  now.counters.size(), SummarizeNicStats(now), {},
        false,         now.counters};
    for (const NicStats& then : nic_before) {
      if (then.interface != now.interface) continue;
      r.growth = NicCongestionGrowth(SummarizeNicStats(then), r.total);
      r.growth_known = true;
    }
    s.nic_stats.push_back(std::move(r));
  }
  s.gpus = gpu->Sample();
  for (const GpuState& now : s.gpus.gpus) {
    for (const GpuState& then : first.gpus) {
      if (then.index == now.index && then.ecc_volatile_corrected && now.ecc_volatile_corrected &&
          *now.ecc_volatile_corrected > *then.ecc_volatile_corrected)
        s.gpu_ecc_corrected_growth.emplace_back(
            now.index, *now.ecc_volatile_corrected - *then.ecc_volatile_corrected);
    }
  }
  s.time_utc = UtcNow();
  if (replay) {
    AddNodeNotes(replay->node_notes, s.notes);
    s.before.monotonic_seconds = replay->before_monotonic_seconds;
    s.after.monotonic_seconds = replay->after_monotonic_seconds;
    s.time_utc = replay->time_utc;
  }
  ComputeSnapshotRates(s);
  return s;
}

}  // namespace stallscope
