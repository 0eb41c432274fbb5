#include "export/host_metrics.h"

#include <fmt/format.h>
#include <unistd.h>

#include "core/file.h"
#include "probe/cgroup.h"
#include "probe/ethtool_stats.h"
#include "probe/gpu_probe.h"
#include "probe/infiniband.h"
#include "probe/net_dev.h"
#include "sample/disk_rates.h"

namespace stallscope {
namespace {

double D(uint64_t v) { return static_cast<double>(v); }

void Gauge(Exposition& out, const char* name, const char* help) {
  out.Family(name, MetricType::kGauge, help);
}

// A sample's value for one item, or nullopt when the item has none.
using Value = std::optional<double>;

// One row of a family table: the series of each Item (the host's memory, a
// disk, an interface, a port, a GPU) and how to read its value from one.
template <typename Item>
struct Series {
  const char* name;
  const char* help;
  MetricType type;
  Value (*value)(const Item&);
};

// The families of a table, named in table order (the exposition's order).
template <typename Item, size_t N>
void Declare(const Series<Item> (&table)[N], Exposition& out) {
  for (const Series<Item>& s : table) out.Family(s.name, s.type, s.help);
}

// One item's samples: one per row that has a value for it.
template <typename Item, size_t N>
void AddSamples(const Series<Item> (&table)[N], const Item& item,
                const std::vector<MetricLabel>& labels, Exposition& out) {
  for (const Series<Item>& s : table) {
    if (Value v = s.value(item)) out.Add(s.name, labels, *v);
  }
}

constexpr MetricType kGaugeType = MetricType::kGauge;
constexpr MetricType kCounterType = MetricType::kCounter;

struct MemoryItem {
  const MemInfo& m;
  const VmStat& vm;
  const CgroupMemory* cgroup;
  uint64_t page_size_bytes;
};

constexpr Series<MemoryItem> kMemorySeries[] = {
    {"stallscope_memory_total_bytes", "MemTotal of /proc/meminfo.", kGaugeType,
     [](const MemoryItem& x) -> Value { return D(x.m.total_bytes); }},
    {"stallscope_memory_available_bytes",
     "MemAvailable of /proc/meminfo: what can be allocated without swapping.", kGaugeType,
     [](const MemoryItem& x) -> Value {
       return x.m.available_bytes ? Value(D(*x.m.available_bytes)) : Value();
     }},
    {"stallscope_memory_effective_available_bytes",
     "MemAvailable capped by the exporter's memory cgroup headroom (limit minus working "
     "set): what a job in this container can still allocate before the OOM killer.",
     kGaugeType,
     [](const MemoryItem& x) -> Value {
       return D(EffectiveAvailableBytes(x.m, x.cgroup ? *x.cgroup : CgroupMemory{}));
     }},
    {"stallscope_memory_cgroup_limit_bytes",
     "The memory limit of the exporter's cgroup (absent when unlimited).", kGaugeType,
     [](const MemoryItem& x) -> Value {
       return (!x.cgroup || !x.cgroup->limit_bytes) ? Value() : Value(D(*x.cgroup->limit_bytes));
     }},
    {"stallscope_memory_cgroup_working_set_bytes",
     "The cgroup's usage minus inactive file cache, as the kubelet counts it.", kGaugeType,
     [](const MemoryItem& x) -> Value {
       return x.cgroup ? Value(D(x.cgroup->working_set_bytes)) : Value();
     }},
    {"stallscope_memory_page_cache_bytes", "Cached of /proc/meminfo (page cache).", kGaugeType,
     [](const MemoryItem& x) -> Value { return D(x.m.cached_bytes); }},
    {"stallscope_memory_dirty_bytes", "Dirty of /proc/meminfo.", kGaugeType,
     [](const MemoryItem& x) -> Value { return D(x.m.dirty_bytes); }},
    {"stallscope_memory_writeback_bytes", "Writeback of /proc/meminfo.", kGaugeType,
     [](const MemoryItem& x) -> Value { return D(x.m.writeback_bytes); }},
    {"stallscope_memory_mlocked_bytes",
     "Mlocked of /proc/meminfo: page-locked memory, pinned buffers among it.", kGaugeType,
     [](const MemoryItem& x) -> Value { return D(x.m.mlocked_bytes); }},
    {"stallscope_memory_shmem_bytes",
     "Shmem of /proc/meminfo: /dev/shm, where DataLoader workers pass batches.", kGaugeType,
     [](const MemoryItem& x) -> Value { return D(x.m.shmem_bytes); }},
    {"stallscope_memory_major_faults_total", "Page faults that waited for the disk (pgmajfault).",
     kCounterType, [](const MemoryItem& x) -> Value { return D(x.vm.pgmajfault); }},
    {"stallscope_memory_oom_kills_total",
     "Processes the kernel's OOM killer ended (vmstat oom_kill, Linux 4.13+).", kCounterType,
     [](const MemoryItem& x) -> Value {
       return x.vm.oom_kill ? Value(D(*x.vm.oom_kill)) : Value();
     }},
    {"stallscope_swap_total_bytes", "SwapTotal of /proc/meminfo.", kGaugeType,
     [](const MemoryItem& x) -> Value { return D(x.m.swap_total_bytes); }},
    {"stallscope_swap_used_bytes", "SwapTotal minus SwapFree.", kGaugeType,
     [](const MemoryItem& x) -> Value { return D(x.m.swap_used_bytes()); }},
    {"stallscope_swap_in_bytes_total", "Bytes swapped in (pswpin times the page size).",
     kCounterType,
     [](const MemoryItem& x) -> Value { return D(x.vm.pswpin_pages) * D(x.page_size_bytes); }},
    {"stallscope_swap_out_bytes_total", "Bytes swapped out (pswpout times the page size).",
     kCounterType,
     [](const MemoryItem& x) -> Value { return D(x.vm.pswpout_pages) * D(x.page_size_bytes); }},
};

constexpr Series<DiskCounters> kDiskCounterSeries[] = {
    {"stallscope_disk_reads_completed_total", "Reads completed (diskstats field 1).", kCounterType,
     [](const DiskCounters& d) -> Value { return D(d.reads_completed); }},
    {"stallscope_disk_writes_completed_total", "Writes completed (diskstats field 5).",
     kCounterType, [](const DiskCounters& d) -> Value { return D(d.writes_completed); }},
    {"stallscope_disk_read_bytes_total", "Bytes read (sectors of 512 bytes).", kCounterType,
     [](const DiskCounters& d) -> Value { return D(d.sectors_read) * kDiskstatsSectorBytes; }},
    {"stallscope_disk_written_bytes_total", "Bytes written (sectors of 512 bytes).", kCounterType,
     [](const DiskCounters& d) -> Value { return D(d.sectors_written) * kDiskstatsSectorBytes; }},
    {"stallscope_disk_read_time_seconds_total", "Time spent by reads, summed over them.",
     kCounterType, [](const DiskCounters& d) -> Value { return D(d.read_ms) / 1000; }},
    {"stallscope_disk_write_time_seconds_total", "Time spent by writes, summed over them.",
     kCounterType, [](const DiskCounters& d) -> Value { return D(d.write_ms) / 1000; }},
    {"stallscope_disk_io_time_seconds_total",
     "Wall time with at least one request in flight (iostat %util is its rate).", kCounterType,
     [](const DiskCounters& d) -> Value { return D(d.io_ms) / 1000; }},
    {"stallscope_disk_io_time_weighted_seconds_total",
     "io time weighted by requests in flight (iostat aqu-sz is its rate).", kCounterType,
     [](const DiskCounters& d) -> Value { return D(d.weighted_io_ms) / 1000; }},
    {"stallscope_disk_requests_in_flight", "Requests in flight now.", kGaugeType,
     [](const DiskCounters& d) -> Value { return D(d.in_flight); }},
};

constexpr Series<DiskRates> kDiskRateSeries[] = {
    {"stallscope_disk_utilization_ratio",
     "iostat -x %util / 100 over the exporter's last interval.", kGaugeType,
     [](const DiskRates& r) -> Value { return r.util_percent / 100; }},
    {"stallscope_disk_await_seconds",
     "iostat -x await over the exporter's last interval: mean time per request, queue "
     "included.",
     kGaugeType, [](const DiskRates& r) -> Value { return r.await_ms / 1000; }},
    {"stallscope_disk_queue_length", "iostat -x aqu-sz over the exporter's last interval.",
     kGaugeType, [](const DiskRates& r) -> Value { return r.average_queue_size; }},
};

constexpr Series<NetDevCounters> kNetDevSeries[] = {
    {"stallscope_network_receive_bytes_total", "Bytes received (/proc/net/dev).", kCounterType,
     [](const NetDevCounters& n) -> Value { return D(n.rx_bytes); }},
    {"stallscope_network_transmit_bytes_total", "Bytes sent.", kCounterType,
     [](const NetDevCounters& n) -> Value { return D(n.tx_bytes); }},
    {"stallscope_network_receive_packets_total", "Packets received.", kCounterType,
     [](const NetDevCounters& n) -> Value { return D(n.rx_packets); }},
    {"stallscope_network_transmit_packets_total", "Packets sent.", kCounterType,
     [](const NetDevCounters& n) -> Value { return D(n.tx_packets); }},
    {"stallscope_network_receive_errors_total", "Receive errors (errs).", kCounterType,
     [](const NetDevCounters& n) -> Value { return D(n.rx_errs); }},
    {"stallscope_network_transmit_errors_total", "Transmit errors (errs).", kCounterType,
     [](const NetDevCounters& n) -> Value { return D(n.tx_errs); }},
    {"stallscope_network_receive_drops_total", "Received packets dropped.", kCounterType,
     [](const NetDevCounters& n) -> Value { return D(n.rx_drop); }},
    {"stallscope_network_transmit_drops_total", "Packets dropped on send.", kCounterType,
     [](const NetDevCounters& n) -> Value { return D(n.tx_drop); }},
};

constexpr Series<NetInterface> kInterfaceSeries[] = {
    {"stallscope_network_mtu_bytes", "MTU of the interface.", kGaugeType,
     [](const NetInterface& i) -> Value { return i.mtu_bytes ? Value(D(*i.mtu_bytes)) : Value(); }},
    {"stallscope_network_speed_bytes",
     "Link speed in bytes per second (absent for virtual or down links).", kGaugeType,
     [](const NetInterface& i) -> Value {
       return i.speed_mbps ? Value(D(*i.speed_mbps) * 1e6 / 8) : Value();
     }},
    {"stallscope_network_up", "1 when the interface's operstate is up.", kGaugeType,
     [](const NetInterface& i) -> Value { return i.operstate == "up" ? 1 : 0; }},
};

// An optional counter of a port as a sample value.
Value Optional(const std::optional<uint64_t>& v) {
  if (!v) return std::nullopt;
  return D(*v);
}

// One of a port's hw_counters, when the driver offers it.
Value HwCounter(const InfinibandPort& p, std::string_view name) {
  for (const NicCounter& c : p.hw_counters)
    if (c.name == name) return D(c.value);
  return std::nullopt;
}

// What a NIC's driver statistics say of congestion (sample/nic_stats.h);
// a kind the driver does not count has no sample.
constexpr Series<NicCongestion> kNicCongestionSeries[] = {
    {"stallscope_network_pause_frames_received_total",
     "Pause frames received, link-level and per-priority (PFC) counted once (ethtool -S).",
     kCounterType,
     [](const NicCongestion& c) -> Value { return c.has_pause ? Value(D(c.pause_rx)) : Value(); }},
    {"stallscope_network_pause_frames_sent_total", "Pause frames sent (ethtool -S).", kCounterType,
     [](const NicCongestion& c) -> Value { return c.has_pause ? Value(D(c.pause_tx)) : Value(); }},
    {"stallscope_network_ecn_marked_packets_total", "ECN-marked RoCE packets received.",
     kCounterType,
     [](const NicCongestion& c) -> Value {
       return c.has_ecn_cnp ? Value(D(c.ecn_marked)) : Value();
     }},
    {"stallscope_network_cnp_sent_total", "Congestion notification packets sent.", kCounterType,
     [](const NicCongestion& c) -> Value {
       return c.has_ecn_cnp ? Value(D(c.cnp_sent)) : Value();
     }},
    {"stallscope_network_cnp_handled_total",
     "Congestion notification packets handled (the send rate was cut).", kCounterType,
     [](const NicCongestion& c) -> Value {
       return c.has_ecn_cnp ? Value(D(c.cnp_handled)) : Value();
     }},
    {"stallscope_network_buffer_drops_total",
     "Packets dropped for want of a receive buffer or ring slot (ethtool -S).", kCounterType,
     [](const NicCongestion& c) -> Value {
       return c.has_drops ? Value(D(c.buffer_drops)) : Value();
     }},
    {"stallscope_network_allowance_exceeded_total",
     "Packets queued or dropped by a cloud NIC's bandwidth or packet allowance.", kCounterType,
     [](const NicCongestion& c) -> Value {
       return c.has_drops ? Value(D(c.allowance_exceeded)) : Value();
     }},
};

constexpr Series<InfinibandPort> kInfinibandSeries[] = {
    {"stallscope_infiniband_port_state",
     "Port state code: 1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE, 5 ACTIVE_DEFER.", kGaugeType,
     [](const InfinibandPort& p) -> Value { return p.state ? Value(p.state->code) : Value(); }},
    {"stallscope_infiniband_port_active", "1 when the port's state is ACTIVE.", kGaugeType,
     [](const InfinibandPort& p) -> Value {
       return p.state ? Value(p.state->code == 4 ? 1 : 0) : Value();
     }},
    {"stallscope_infiniband_port_rate_bytes",
     "Signalling rate of the port in bytes per second (the `rate` file's Gb/s).", kGaugeType,
     [](const InfinibandPort& p) -> Value {
       return p.rate ? Value(p.rate->gbps * 1e9 / 8) : Value();
     }},
    {"stallscope_infiniband_port_transmit_bytes_total",
     "port_xmit_data times 4 (the counter counts 4-byte words).", kCounterType,
     [](const InfinibandPort& p) { return Optional(p.xmit_bytes); }},
    {"stallscope_infiniband_port_receive_bytes_total", "port_rcv_data times 4.", kCounterType,
     [](const InfinibandPort& p) { return Optional(p.rcv_bytes); }},
    {"stallscope_infiniband_port_receive_errors_total", "port_rcv_errors.", kCounterType,
     [](const InfinibandPort& p) { return Optional(p.rcv_errors); }},
    {"stallscope_infiniband_port_symbol_errors_total", "symbol_error.", kCounterType,
     [](const InfinibandPort& p) { return Optional(p.symbol_errors); }},
    {"stallscope_infiniband_port_link_downed_total", "link_downed.", kCounterType,
     [](const InfinibandPort& p) { return Optional(p.link_downed); }},
    {"stallscope_infiniband_port_transmit_discards_total", "port_xmit_discards.", kCounterType,
     [](const InfinibandPort& p) { return Optional(p.xmit_discards); }},
    {"stallscope_infiniband_port_transmit_wait_ticks_total",
     "port_xmit_wait: ticks with data to send and no credits (the congestion counter; a tick is "
     "a multiple of the symbol time the chip picks).",
     kCounterType, [](const InfinibandPort& p) { return Optional(p.xmit_wait); }},
    {"stallscope_infiniband_port_buffer_overrun_errors_total", "excessive_buffer_overrun_errors.",
     kCounterType,
     [](const InfinibandPort& p) { return Optional(p.excessive_buffer_overrun_errors); }},
    {"stallscope_infiniband_port_link_integrity_errors_total", "local_link_integrity_errors.",
     kCounterType, [](const InfinibandPort& p) { return Optional(p.local_link_integrity_errors); }},
    {"stallscope_infiniband_port_out_of_buffer_total",
     "hw_counters/out_of_buffer: packets dropped for want of a posted receive buffer.",
     kCounterType, [](const InfinibandPort& p) { return HwCounter(p, "out_of_buffer"); }},
    {"stallscope_infiniband_port_cnp_sent_total", "hw_counters/np_cnp_sent (RoCE).", kCounterType,
     [](const InfinibandPort& p) { return HwCounter(p, "np_cnp_sent"); }},
    {"stallscope_infiniband_port_cnp_handled_total",
     "hw_counters/rp_cnp_handled (RoCE): CNPs that cut this port's send rate.", kCounterType,
     [](const InfinibandPort& p) { return HwCounter(p, "rp_cnp_handled"); }},
    {"stallscope_infiniband_port_ecn_marked_packets_total",
     "hw_counters/np_ecn_marked_roce_packets (RoCE).", kCounterType,
     [](const InfinibandPort& p) { return HwCounter(p, "np_ecn_marked_roce_packets"); }},
};

// The series of a GPU that is not lost (EmitGpus adds stallscope_gpu_info and
// stallscope_gpu_lost for every GPU).
constexpr Series<GpuState> kGpuSeries[] = {
    {"stallscope_gpu_utilization_ratio",
     "Share of the last sample period in which a kernel ran (NVML utilization.gpu / 100); "
     "high does not mean the SMs were busy.",
     kGaugeType, [](const GpuState& g) -> Value { return g.utilization_gpu_percent / 100; }},
    {"stallscope_gpu_sm_active_ratio",
     "Share of SM time busy over the interval (GPM, Hopper and newer).", kGaugeType,
     [](const GpuState& g) -> Value {
       return g.gpm && g.gpm->sm_active_percent ? Value(*g.gpm->sm_active_percent / 100) : Value();
     }},
    {"stallscope_gpu_memory_used_bytes", "GPU memory in use.", kGaugeType,
     [](const GpuState& g) -> Value { return D(g.memory_used_bytes); }},
    {"stallscope_gpu_memory_total_bytes", "GPU memory in all.", kGaugeType,
     [](const GpuState& g) -> Value { return D(g.memory_total_bytes); }},
    {"stallscope_gpu_temperature_celsius", "GPU temperature.", kGaugeType,
     [](const GpuState& g) -> Value {
       return g.temperature_c ? Value(*g.temperature_c) : Value();
     }},
    {"stallscope_gpu_power_watts", "GPU power draw.", kGaugeType,
     [](const GpuState& g) -> Value { return g.power_w ? Value(*g.power_w) : Value(); }},
    {"stallscope_gpu_sm_clock_hertz", "SM clock now.", kGaugeType,
     [](const GpuState& g) -> Value {
       return g.sm_clock_mhz ? Value(*g.sm_clock_mhz * 1e6) : Value();
     }},
};

}  // namespace

bool IsIgnoredDisk(std::string_view name) {
  return name.starts_with("loop") || name.starts_with("ram") || name.starts_with("zram");
}

void EmitMemory(const MemInfo& m, const VmStat& vm, const CgroupMemory* cgroup,
                uint64_t page_size_bytes, Exposition& out) {
  Declare(kMemorySeries, out);
  AddSamples(kMemorySeries, MemoryItem{m, vm, cgroup, page_size_bytes}, {}, out);
}

void EmitDisks(const DiskstatsSample& disks, const std::vector<DiskRates>& rates, Exposition& out) {
  Declare(kDiskCounterSeries, out);
  Declare(kDiskRateSeries, out);
  for (const DiskCounters& d : disks.devices) {
    if (!IsIgnoredDisk(d.name)) AddSamples(kDiskCounterSeries, d, {{"device", d.name}}, out);
  }
  for (const DiskRates& r : rates) {
    if (!IsIgnoredDisk(r.name)) AddSamples(kDiskRateSeries, r, {{"device", r.name}}, out);
  }
}

void EmitNetwork(const std::vector<NetDevCounters>& counters,
                 const std::vector<NetInterface>& interfaces, Exposition& out) {
  Declare(kNetDevSeries, out);
  Declare(kInterfaceSeries, out);
  Gauge(out, "stallscope_network_info",
        "The interface's kind (ethernet, infiniband, docker, ...) and operstate; always 1.");
  for (const NetDevCounters& n : counters) {
    AddSamples(kNetDevSeries, n, {{"interface", n.name}}, out);
  }
  for (const NetInterface& i : interfaces) {
    AddSamples(kInterfaceSeries, i, {{"interface", i.name}}, out);
    out.Add("stallscope_network_info",
            {{"interface", i.name},
             {"kind", InterfaceKindName(i.kind)},
             {"operstate", i.operstate.empty() ? "unknown" : i.operstate}},
            1);
  }
}

void EmitInfiniband(const std::vector<InfinibandDevice>& devices, Exposition& out) {
  Declare(kInfinibandSeries, out);
  for (const InfinibandDevice& d : devices) {
    for (const InfinibandPort& p : d.ports) {
      AddSamples(kInfinibandSeries, p, {{"device", d.name}, {"port", std::to_string(p.port)}}, out);
    }
  }
}

void EmitNicCongestion(const std::vector<NicStats>& stats, Exposition& out) {
  Declare(kNicCongestionSeries, out);
  for (const NicStats& n : stats) {
    AddSamples(kNicCongestionSeries, SummarizeNicStats(n), {{"interface", n.interface}}, out);
  }
}

void EmitGpus(const GpuObservation& gpus, Exposition& out) {
  Gauge(out, "stallscope_gpu_info", "The GPU's name and UUID; always 1.");
  Declare(kGpuSeries, out);
  Gauge(out, "stallscope_gpu_lost", "1 when the GPU fell off the bus (NVML GPU_IS_LOST).");
  for (const GpuState& g : gpus.gpus) {
    std::vector<MetricLabel> l = {{"gpu", std::to_string(g.index)}};
    out.Add("stallscope_gpu_info",
            {{"gpu", std::to_string(g.index)}, {"name", g.name}, {"uuid", g.uuid}}, 1);
    out.Add("stallscope_gpu_lost", l, g.lost ? 1 : 0);
    if (!g.lost) AddSamples(kGpuSeries, g, l, out);
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
    if (rates_interval_ > 0)
      rates_ = ComputeAllDiskRates(previous_->disks, now->disks, rates_interval_);
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
    EmitNicCongestion(ReadEveryNicStats(root_, &notes), out);
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
