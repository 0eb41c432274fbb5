// Snapshot: the baseline of a host, as `stallscope snapshot` prints it and
// `doctor` judges it. Two HostSamples taken an interval apart (so swap
// traffic, disks and NICs have rates, as iostat -x and vmstat give them)
// plus the facts that do not move: the container's memory limit, block
// devices, interfaces and RDMA ports, topology, the training environment.
// Plain data; probe/snapshot.h fills it. Thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sample/container.h"
#include "sample/cpu.h"
#include "sample/disk.h"
#include "sample/environment.h"
#include "sample/gpu.h"
#include "sample/kernel_events.h"
#include "sample/memory.h"
#include "sample/network.h"
#include "sample/nic_stats.h"
#include "sample/pcie.h"
#include "sample/pressure.h"
#include "sample/process.h"
#include "sample/topology.h"

namespace stallscope {

// What moves: one moment of the host's counters.
struct HostSample {
  double monotonic_seconds = 0;  // CLOCK_MONOTONIC; only differences mean anything
  MemInfo memory;
  VmStat vmstat;
  CpuStat cpu;
  DiskstatsSample disks;
  std::vector<NetDevCounters> net;
  std::optional<HostPressure> pressure;  // nullopt: kernel without PSI
};

// The process that holds the most page-locked memory, for the pinned rule.
struct PinnedHolder {
  int32_t pid = 0;
  std::string comm;
  uint64_t pinned_bytes = 0;
};

struct Snapshot {
  std::string hostname;
  std::string kernel;    // uname -r
  std::string time_utc;  // ISO 8601, at the end of the interval
  uint64_t page_size_bytes = 4096;
  long clock_ticks_per_second = 100;

  HostSample before;
  HostSample after;
  double interval_seconds = 0;  // after - before, measured

  // Derived from before/after.
  VmStatRates vm_rates;
  CpuUsage cpu_usage;
  std::vector<DiskRates> disk_rates;
  std::vector<NetRates> net_rates;

  std::optional<CgroupMemory> cgroup;  // nullopt: no memory cgroup to read
  ContainerInfo container;
  std::vector<BlockDevice> block_devices;
  std::vector<NetInterface> interfaces;
  std::vector<InfinibandDevice> infiniband;
  std::optional<Topology> topology;
  TrainingEnvironment environment;
  ProcessTotals processes;  // every process of the host
  PinnedHolder top_pinned;
  GpuObservation gpus;  // NVML; GPM over the snapshot's interval
  // ECC corrected errors each GPU (by index) counted during the interval.
  std::vector<std::pair<unsigned, uint64_t>> gpu_ecc_corrected_growth;
  std::vector<PcieLink> pcie_links;  // every GPU, NIC and HCA on PCIe
  // The driver statistics (ethtool -S) of every interface that has them, at
  // both ends of the interval: what they say of congestion, and its growth.
  struct NicStatsReading {
    std::string interface;
    std::string source;
    size_t counters = 0;          // how many the driver gives
    NicCongestion total;          // since the driver started counting (at the end)
    NicCongestion growth;         // over the interval, when growth_known
    bool growth_known = false;    // false: not read at the start of the interval
    std::vector<NicCounter> raw;  // every counter at the end, as the driver names it
  };
  std::vector<NicStatsReading> nic_stats;
  // The kernel log since boot (what its ring buffer still holds).
  bool kernel_log_read = false;
  std::vector<GpuXid> xids;
  std::vector<PortLogEvent> port_events;

  // What could not be read, in the user's words: degradations, not errors.
  std::vector<std::string> notes;
};

}  // namespace stallscope
