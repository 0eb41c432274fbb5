// HostMetrics: this host's memory, swap, disks, NICs, RDMA ports and GPUs as
// Prometheus series, for `stallscope exporter`.
//
// Counters are read fresh at every scrape (what the kernel counts since
// boot, as node_exporter gives them). The iostat -x figures that only exist
// between two samples (%util, await, queue size) are computed by Tick()
// every --interval from the samplers `run` uses (probe/host_sampler.h,
// sample/disk_rates.h) and the last interval's values are served, so that
// several scrapers never shorten each other's interval. The Emit* functions
// at the bottom are pure (data in, series out) and what the tests check.
// Not thread-safe; one owner (the exporter loop).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/file.h"
#include "probe/host_sampler.h"
#include "render/exposition.h"
#include "sample/gpu.h"
#include "sample/snapshot.h"

namespace stallscope {

class GpuProbe;

class HostMetrics {
 public:
  // gpus: null when the GPU probe is not available (no library / no GPU).
  HostMetrics(const Root& root, std::unique_ptr<GpuProbe> gpus);
  ~HostMetrics();
  // Samples the disks and remembers the iostat figures of the interval.
  void Tick();
  // Every host series now. Probes that cannot be read become notes.
  void Emit(Exposition& out, std::vector<std::string>& notes);
  const std::string& gpu_absent_reason() const { return gpu_absent_reason_; }

 private:
  Root root_;
  HostSampler sampler_;
  std::optional<HostSample> previous_;
  std::vector<DiskRates> rates_;
  double rates_interval_ = 0;
  std::unique_ptr<GpuProbe> gpus_;
  std::string gpu_absent_reason_;
};

// Pure pieces, one per layer of the host.
void EmitMemory(const MemInfo& memory, const VmStat& vmstat, const CgroupMemory* cgroup,
                uint64_t page_size_bytes, Exposition& out);
void EmitDisks(const DiskstatsSample& disks, const std::vector<DiskRates>& rates, Exposition& out);
void EmitNetwork(const std::vector<NetDevCounters>& counters,
                 const std::vector<NetInterface>& interfaces, Exposition& out);
void EmitInfiniband(const std::vector<InfinibandDevice>& devices, Exposition& out);
// Pause frames, ECN marks, CNPs and buffer drops per interface, from the
// NICs' driver statistics.
void EmitNicCongestion(const std::vector<NicStats>& stats, Exposition& out);
void EmitGpus(const GpuObservation& gpus, Exposition& out);

// Devices the disk series leave out: loop, ram and zram (their IO is memory
// or lands on another disk), as node_exporter does by default.
bool IsIgnoredDisk(std::string_view name);

}  // namespace stallscope
