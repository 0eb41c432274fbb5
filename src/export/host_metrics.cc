#include "export/host_metrics.h"

#include <unistd.h>

#include <fmt/format.h>

#include "gpu/gpu_probe.h"
#include "probe/cgroup.h"
#include "probe/infiniband.h"
#include "probe/net_dev.h"
#include "sample/disk_rates.h"

namespace stallscope {
namespace {

double D(uint64_t v) { return static_cast<double>(v); }

void Gauge(Exposition& out, const char* name, const char* help) {
  out.Family(name, MetricType::kGauge, help);
}
void Counter(Exposition& out, const char* name, const char* help) {
  out.Family(name, MetricType::kCounter, help);
}

}  // namespace

bool IsIgnoredDisk(std::string_view name) {
  return name.starts_with("loop") || name.starts_with("ram") || name.starts_with("zram");
}

void EmitMemory(const MemInfo& m, const VmStat& vm, const CgroupMemory* cgroup,
                uint64_t page_size_bytes, Exposition& out) {
  Gauge(out, "stallscope_memory_total_bytes", "MemTotal of /proc/meminfo.");
  Gauge(out, "stallscope_memory_available_bytes",
        "MemAvailable of /proc/meminfo: what can be allocated without swapping.");
  Gauge(out, "stallscope_memory_effective_available_bytes",
        "MemAvailable capped by the exporter's memory cgroup headroom (limit minus working "
        "set): what a job in this container can still allocate before the OOM killer.");
  Gauge(out, "stallscope_memory_cgroup_limit_bytes",
        "The memory limit of the exporter's cgroup (absent when unlimited).");
  Gauge(out, "stallscope_memory_cgroup_working_set_bytes",
        "The cgroup's usage minus inactive file cache, as the kubelet counts it.");
  Gauge(out, "stallscope_memory_page_cache_bytes", "Cached of /proc/meminfo (page cache).");
  Gauge(out, "stallscope_memory_dirty_bytes", "Dirty of /proc/meminfo.");
  Gauge(out, "stallscope_memory_writeback_bytes", "Writeback of /proc/meminfo.");
  Gauge(out, "stallscope_memory_mlocked_bytes",
        "Mlocked of /proc/meminfo: page-locked memory, pinned buffers among it.");
  Gauge(out, "stallscope_memory_shmem_bytes",
        "Shmem of /proc/meminfo: /dev/shm, where DataLoader workers pass batches.");
  Counter(out, "stallscope_memory_major_faults_total",
          "Page faults that waited for the disk (pgmajfault).");
  Gauge(out, "stallscope_swap_total_bytes", "SwapTotal of /proc/meminfo.");
  Gauge(out, "stallscope_swap_used_bytes", "SwapTotal minus SwapFree.");
  Counter(out, "stallscope_swap_in_bytes_total", "Bytes swapped in (pswpin times the page size).");
  Counter(out, "stallscope_swap_out_bytes_total",
          "Bytes swapped out (pswpout times the page size).");
  out.Add("stallscope_memory_total_bytes", {}, D(m.total_bytes));
  if (m.available_bytes) out.Add("stallscope_memory_available_bytes", {}, D(*m.available_bytes));
  out.Add("stallscope_memory_effective_available_bytes", {},
          D(EffectiveAvailableBytes(m, cgroup ? *cgroup : CgroupMemory{})));
  if (cgroup && cgroup->limit_bytes) {
    out.Add("stallscope_memory_cgroup_limit_bytes", {}, D(*cgroup->limit_bytes));
  }
  if (cgroup) out.Add("stallscope_memory_cgroup_working_set_bytes", {}, D(cgroup->working_set_bytes));
  out.Add("stallscope_memory_page_cache_bytes", {}, D(m.cached_bytes));
  out.Add("stallscope_memory_dirty_bytes", {}, D(m.dirty_bytes));
  out.Add("stallscope_memory_writeback_bytes", {}, D(m.writeback_bytes));
  out.Add("stallscope_memory_mlocked_bytes", {}, D(m.mlocked_bytes));
  out.Add("stallscope_memory_shmem_bytes", {}, D(m.shmem_bytes));
  out.Add("stallscope_memory_major_faults_total", {}, D(vm.pgmajfault));
  out.Add("stallscope_swap_total_bytes", {}, D(m.swap_total_bytes));
  out.Add("stallscope_swap_used_bytes", {}, D(m.swap_used_bytes()));
  out.Add("stallscope_swap_in_bytes_total", {}, D(vm.pswpin_pages) * D(page_size_bytes));
  out.Add("stallscope_swap_out_bytes_total", {}, D(vm.pswpout_pages) * D(page_size_bytes));
}

void EmitDisks(const DiskstatsSample& disks, const std::vector<DiskRates>& rates,
               Exposition& out) {
  Counter(out, "stallscope_disk_reads_completed_total", "Reads completed (diskstats field 1).");
  Counter(out, "stallscope_disk_writes_completed_total", "Writes completed (diskstats field 5).");
  Counter(out, "stallscope_disk_read_bytes_total", "Bytes read (sectors of 512 bytes).");
  Counter(out, "stallscope_disk_written_bytes_total", "Bytes written (sectors of 512 bytes).");
  Counter(out, "stallscope_disk_read_time_seconds_total", "Time spent by reads, summed over them.");
  Counter(out, "stallscope_disk_write_time_seconds_total",
          "Time spent by writes, summed over them.");
  Counter(out, "stallscope_disk_io_time_seconds_total",
          "Wall time with at least one request in flight (iostat %util is its rate).");
  Counter(out, "stallscope_disk_io_time_weighted_seconds_total",
          "io time weighted by requests in flight (iostat aqu-sz is its rate).");
  Gauge(out, "stallscope_disk_requests_in_flight", "Requests in flight now.");
  Gauge(out, "stallscope_disk_utilization_ratio",
        "iostat -x %util / 100 over the exporter's last interval.");
  Gauge(out, "stallscope_disk_await_seconds",
        "iostat -x await over the exporter's last interval: mean time per request, queue "
        "included.");
  Gauge(out, "stallscope_disk_queue_length", "iostat -x aqu-sz over the exporter's last interval.");
  for (const DiskCounters& d : disks.devices) {
    if (IsIgnoredDisk(d.name)) continue;
    std::vector<MetricLabel> l = {{"device", d.name}};
    out.Add("stallscope_disk_reads_completed_total", l, D(d.reads_completed));
    out.Add("stallscope_disk_writes_completed_total", l, D(d.writes_completed));
    out.Add("stallscope_disk_read_bytes_total", l, D(d.sectors_read) * kDiskstatsSectorBytes);
    out.Add("stallscope_disk_written_bytes_total", l, D(d.sectors_written) * kDiskstatsSectorBytes);
    out.Add("stallscope_disk_read_time_seconds_total", l, D(d.read_ms) / 1000);
    out.Add("stallscope_disk_write_time_seconds_total", l, D(d.write_ms) / 1000);
    out.Add("stallscope_disk_io_time_seconds_total", l, D(d.io_ms) / 1000);
    out.Add("stallscope_disk_io_time_weighted_seconds_total", l, D(d.weighted_io_ms) / 1000);
    out.Add("stallscope_disk_requests_in_flight", l, D(d.in_flight));
  }
  for (const DiskRates& r : rates) {
    if (IsIgnoredDisk(r.name)) continue;
    std::vector<MetricLabel> l = {{"device", r.name}};
    out.Add("stallscope_disk_utilization_ratio", l, r.util_percent / 100);
    out.Add("stallscope_disk_await_seconds", l, r.await_ms / 1000);
    out.Add("stallscope_disk_queue_length", l, r.average_queue_size);
  }
}

void EmitNetwork(const std::vector<NetDevCounters>& counters,
                 const std::vector<NetInterface>& interfaces, Exposition& out) {
  struct Column {
    const char* name;
    const char* help;
    uint64_t NetDevCounters::*field;
  };
  static const Column kColumns[] = {
      {"stallscope_network_receive_bytes_total", "Bytes received (/proc/net/dev).",
       &NetDevCounters::rx_bytes},
      {"stallscope_network_transmit_bytes_total", "Bytes sent.", &NetDevCounters::tx_bytes},
      {"stallscope_network_receive_packets_total", "Packets received.",
       &NetDevCounters::rx_packets},
      {"stallscope_network_transmit_packets_total", "Packets sent.", &NetDevCounters::tx_packets},
      {"stallscope_network_receive_errors_total", "Receive errors (errs).",
       &NetDevCounters::rx_errs},
      {"stallscope_network_transmit_errors_total", "Transmit errors (errs).",
       &NetDevCounters::tx_errs},
      {"stallscope_network_receive_drops_total", "Received packets dropped.",
       &NetDevCounters::rx_drop},
      {"stallscope_network_transmit_drops_total", "Packets dropped on send.",
       &NetDevCounters::tx_drop},
  };
  for (const Column& c : kColumns) Counter(out, c.name, c.help);
  Gauge(out, "stallscope_network_mtu_bytes", "MTU of the interface.");
  Gauge(out, "stallscope_network_speed_bytes",
        "Link speed in bytes per second (absent for virtual or down links).");
  Gauge(out, "stallscope_network_up", "1 when the interface's operstate is up.");
  Gauge(out, "stallscope_network_info",
        "The interface's kind (ethernet, infiniband, docker, ...) and operstate; always 1.");
  for (const NetDevCounters& n : counters) {
    std::vector<MetricLabel> l = {{"interface", n.name}};
    for (const Column& c : kColumns) out.Add(c.name, l, D(n.*(c.field)));
  }
  for (const NetInterface& i : interfaces) {
    std::vector<MetricLabel> l = {{"interface", i.name}};
    if (i.mtu_bytes) out.Add("stallscope_network_mtu_bytes", l, D(*i.mtu_bytes));
    if (i.speed_mbps) out.Add("stallscope_network_speed_bytes", l, D(*i.speed_mbps) * 1e6 / 8);
    out.Add("stallscope_network_up", l, i.operstate == "up" ? 1 : 0);
    out.Add("stallscope_network_info",
            {{"interface", i.name},
             {"kind", InterfaceKindName(i.kind)},
             {"operstate", i.operstate.empty() ? "unknown" : i.operstate}},
            1);
  }
}

void EmitInfiniband(const std::vector<InfinibandDevice>& devices, Exposition& out) {
  Gauge(out, "stallscope_infiniband_port_state",
        "Port state code: 1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE, 5 ACTIVE_DEFER.");
  Gauge(out, "stallscope_infiniband_port_active", "1 when the port's state is ACTIVE.");
  Gauge(out, "stallscope_infiniband_port_rate_bytes",
        "Signalling rate of the port in bytes per second (the `rate` file's Gb/s).");
  Counter(out, "stallscope_infiniband_port_transmit_bytes_total",
          "port_xmit_data times 4 (the counter counts 4-byte words).");
  Counter(out, "stallscope_infiniband_port_receive_bytes_total", "port_rcv_data times 4.");
  Counter(out, "stallscope_infiniband_port_receive_errors_total", "port_rcv_errors.");
  Counter(out, "stallscope_infiniband_port_symbol_errors_total", "symbol_error.");
  Counter(out, "stallscope_infiniband_port_link_downed_total", "link_downed.");
  Counter(out, "stallscope_infiniband_port_transmit_discards_total", "port_xmit_discards.");
  for (const InfinibandDevice& d : devices) {
    for (const InfinibandPort& p : d.ports) {
      std::vector<MetricLabel> l = {{"device", d.name}, {"port", std::to_string(p.port)}};
      if (p.state) {
        out.Add("stallscope_infiniband_port_state", l, p.state->code);
        out.Add("stallscope_infiniband_port_active", l, p.state->code == 4 ? 1 : 0);
      }
      if (p.rate) out.Add("stallscope_infiniband_port_rate_bytes", l, p.rate->gbps * 1e9 / 8);
      auto add = [&](const char* name, const std::optional<uint64_t>& v) {
        if (v) out.Add(name, l, D(*v));
      };
      add("stallscope_infiniband_port_transmit_bytes_total", p.xmit_bytes);
      add("stallscope_infiniband_port_receive_bytes_total", p.rcv_bytes);
      add("stallscope_infiniband_port_receive_errors_total", p.rcv_errors);
      add("stallscope_infiniband_port_symbol_errors_total", p.symbol_errors);
      add("stallscope_infiniband_port_link_downed_total", p.link_downed);
      add("stallscope_infiniband_port_transmit_discards_total", p.xmit_discards);
    }
  }
}

void EmitGpus(const GpuObservation& gpus, Exposition& out) {
  Gauge(out, "stallscope_gpu_info", "The GPU's name and UUID; always 1.");
  Gauge(out, "stallscope_gpu_utilization_ratio",
        "Share of the last sample period in which a kernel ran (NVML utilization.gpu / 100); "
        "high does not mean the SMs were busy.");
  Gauge(out, "stallscope_gpu_sm_active_ratio",
        "Share of SM time busy over the interval (GPM, Hopper and newer).");
  Gauge(out, "stallscope_gpu_memory_used_bytes", "GPU memory in use.");
  Gauge(out, "stallscope_gpu_memory_total_bytes", "GPU memory in all.");
  Gauge(out, "stallscope_gpu_temperature_celsius", "GPU temperature.");
  Gauge(out, "stallscope_gpu_power_watts", "GPU power draw.");
  Gauge(out, "stallscope_gpu_sm_clock_hertz", "SM clock now.");
  Gauge(out, "stallscope_gpu_lost", "1 when the GPU fell off the bus (NVML GPU_IS_LOST).");
  for (const GpuState& g : gpus.gpus) {
    std::vector<MetricLabel> l = {{"gpu", std::to_string(g.index)}};
    out.Add("stallscope_gpu_info", {{"gpu", std::to_string(g.index)}, {"name", g.name}, {"uuid", g.uuid}}, 1);
    out.Add("stallscope_gpu_lost", l, g.lost ? 1 : 0);
    if (g.lost) continue;
    out.Add("stallscope_gpu_utilization_ratio", l, g.utilization_gpu_percent / 100);
    if (g.gpm && g.gpm->sm_active_percent) {
      out.Add("stallscope_gpu_sm_active_ratio", l, *g.gpm->sm_active_percent / 100);
    }
    out.Add("stallscope_gpu_memory_used_bytes", l, D(g.memory_used_bytes));
    out.Add("stallscope_gpu_memory_total_bytes", l, D(g.memory_total_bytes));
    if (g.temperature_c) out.Add("stallscope_gpu_temperature_celsius", l, *g.temperature_c);
    if (g.power_w) out.Add("stallscope_gpu_power_watts", l, *g.power_w);
    if (g.sm_clock_mhz) out.Add("stallscope_gpu_sm_clock_hertz", l, *g.sm_clock_mhz * 1e6);
  }
}

HostMetrics::HostMetrics(const Root& root, std::unique_ptr<GpuProbe> gpus)
    : root_(root), sampler_(root), gpus_(std::move(gpus)) {
  if (gpus_ && !gpus_->available()) {
    gpu_absent_reason_ = gpus_->absent_reason();
    gpus_.reset();
  }
}

HostMetrics::~HostMetrics() = default;

void HostMetrics::Tick() {
  Result<HostSample> now = sampler_.Sample(nullptr);
  if (!now.ok()) return;
  if (previous_) {
    rates_interval_ = now->monotonic_seconds - previous_->monotonic_seconds;
    if (rates_interval_ > 0) rates_ = ComputeAllDiskRates(previous_->disks, now->disks, rates_interval_);
  }
  previous_ = std::move(*now);
}

void HostMetrics::Emit(Exposition& out, std::vector<std::string>& notes) {
  Result<HostSample> now = sampler_.Sample(&notes);
  if (!now.ok()) {
    notes.push_back(now.status().message());
  } else {
    long page = sysconf(_SC_PAGESIZE);
    Result<CgroupMemory> cgroup = ReadCgroupMemory(root_);
    EmitMemory(now->memory, now->vmstat, cgroup.ok() ? &*cgroup : nullptr,
               page > 0 ? static_cast<uint64_t>(page) : 4096, out);
    EmitDisks(now->disks, rates_, out);
    Result<std::vector<NetInterface>> interfaces = ReadInterfaces(root_, {});
    if (!interfaces.ok()) notes.push_back(interfaces.status().message());
    EmitNetwork(now->net, interfaces.ok() ? *interfaces : std::vector<NetInterface>{}, out);
  }
  Result<std::vector<InfinibandDevice>> ib = ReadInfinibandDevices(root_);
  if (ib.ok()) {
    EmitInfiniband(*ib, out);
  } else if (ib.status().code() != Status::Code::kNotFound) {
    notes.push_back(ib.status().message());
  }
  if (gpus_) EmitGpus(gpus_->Sample(), out);
}

}  // namespace stallscope
