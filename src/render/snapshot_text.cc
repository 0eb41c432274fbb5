#include <fmt/format.h>

#include "core/units.h"
#include "render/gpu.h"
#include "render/snapshot.h"

namespace stallscope {
namespace {

std::string MemorySection(const Snapshot& s) {
  const MemInfo& m = s.after.memory;
  uint64_t available = m.available_bytes.value_or(0);
  uint64_t used = m.total_bytes - std::min(m.total_bytes, available);
  std::string out = fmt::format("memory\n{:<6}{:>12}{:>12}{:>12}{:>12}{:>12}{:>12}\n", "", "total",
                                "used", "free", "shared", "buff/cache", "available");
  out +=
      fmt::format("{:<6}{:>12}{:>12}{:>12}{:>12}{:>12}{:>12}\n", "Mem:", FormatBytes(m.total_bytes),
                  FormatBytes(used), FormatBytes(m.free_bytes), FormatBytes(m.shmem_bytes),
                  FormatBytes(m.buffers_bytes + m.cached_bytes + m.slab_reclaimable_bytes),
                  m.available_bytes ? FormatBytes(available) : "n/a");
  out += fmt::format("{:<6}{:>12}{:>12}{:>12}\n", "Swap:", FormatBytes(m.swap_total_bytes),
                     FormatBytes(m.swap_used_bytes()), FormatBytes(m.swap_free_bytes));
  out += fmt::format(
      "  swap in {} out {}, major faults {:.0f}/s, dirty {}, writeback {}, mlocked {}, "
      "pinned by processes {}\n",
      FormatRate(s.vm_rates.swap_in_bytes_per_s), FormatRate(s.vm_rates.swap_out_bytes_per_s),
      s.vm_rates.major_faults_per_s, FormatBytes(m.dirty_bytes), FormatBytes(m.writeback_bytes),
      FormatBytes(m.mlocked_bytes), FormatBytes(s.processes.pinned_bytes));
  if (s.after.pressure && s.after.pressure->memory.present && s.after.pressure->memory.some) {
    const Pressure& p = s.after.pressure->memory;
    out += fmt::format("  pressure (PSI avg10): memory some {:.2f}% full {:.2f}%",
                       p.some->avg10_percent, p.full ? p.full->avg10_percent : 0.0);
    if (s.after.pressure->io.present && s.after.pressure->io.some) {
      out += fmt::format(", io some {:.2f}%", s.after.pressure->io.some->avg10_percent);
    }
    out += "\n";
  }
  if (s.cgroup) {
    const CgroupMemory& c = *s.cgroup;
    out += fmt::format("  cgroup v{} {}: limit {}, usage {}, working set {}, job can use {}\n",
                       c.version == CgroupVersion::kV1 ? 1 : 2, c.cgroup_path,
                       c.limit_bytes ? FormatBytes(*c.limit_bytes) : "none",
                       FormatBytes(c.usage_bytes), FormatBytes(c.working_set_bytes),
                       FormatBytes(EffectiveAvailableBytes(m, c)));
  }
  return out;
}

std::string CpuSection(const Snapshot& s) {
  const CpuPercent& c = s.cpu_usage.total;
  return fmt::format(
      "cpu ({} CPUs, {} ticks/s): user {:.1f}%  system {:.1f}%  iowait {:.1f}%  steal {:.1f}%  "
      "idle {:.1f}%; running {}, blocked on IO {}\n",
      s.after.cpu.per_cpu.size(), s.clock_ticks_per_second, c.user_percent + c.nice_percent,
      c.system_percent + c.irq_percent + c.softirq_percent, c.iowait_percent, c.steal_percent,
      c.idle_percent, s.after.cpu.procs_running, s.after.cpu.procs_blocked);
}

const BlockDevice* FindBlockDevice(const Snapshot& s, const std::string& name) {
  for (const BlockDevice& b : s.block_devices) {
    if (b.name == name) return &b;
  }
  return nullptr;
}

std::string DiskSection(const Snapshot& s) {
  std::string out = fmt::format(
      "disks (iostat -x over {:.1f} s)\n{:<12}{:>8}{:>10}{:>9}{:>8}{:>10}{:>9}{:>8}{:>7}\n",
      s.interval_seconds, "Device", "r/s", "rkB/s", "r_await", "w/s", "wkB/s", "w_await", "aqu-sz",
      "%util");
  int hidden = 0;
  for (const DiskRates& r : s.disk_rates) {
    const BlockDevice* b = FindBlockDevice(s, r.name);
    bool idle = r.reads_per_second == 0 && r.writes_per_second == 0 && r.util_percent == 0;
    // Partitions repeat their disk; idle loop/ram/zram devices are noise.
    if (b && (b->is_partition || (b->is_virtual && idle))) {
      ++hidden;
      continue;
    }
    out += fmt::format("{:<12}{:>8.1f}{:>10.1f}{:>9.2f}{:>8.1f}{:>10.1f}{:>9.2f}{:>8.2f}{:>7.1f}\n",
                       r.name, r.reads_per_second, r.read_kib_per_second, r.read_await_ms,
                       r.writes_per_second, r.write_kib_per_second, r.write_await_ms,
                       r.average_queue_size, r.util_percent);
  }
  if (hidden > 0)
    out += fmt::format("  ({} partitions and idle virtual devices not shown)\n", hidden);
  return out;
}

std::string NetworkSection(const Snapshot& s) {
  std::string out =
      fmt::format("network\n{:<16}{:<10}{:>6}{:>9}  {:<8}{:>12}{:>12}{:>8}{:>8}  {}\n", "Interface",
                  "kind", "mtu", "Mb/s", "state", "rx/s", "tx/s", "errors", "drops", "addresses");
  for (const NetInterface& i : s.interfaces) {
    double rx = 0, tx = 0;
    for (const NetRates& r : s.net_rates) {
      if (r.name == i.name) rx = r.rx_bytes_per_s, tx = r.tx_bytes_per_s;
    }
    uint64_t errors = 0, drops = 0;
    for (const NetDevCounters& c : s.after.net) {
      if (c.name == i.name) errors = c.rx_errs + c.tx_errs, drops = c.rx_drop + c.tx_drop;
    }
    std::string addresses;
    for (const IpAddress& a : i.addresses) {
      addresses += fmt::format("{}{}/{}", addresses.empty() ? "" : " ", a.address, a.prefix_length);
    }
    out += fmt::format("{:<16}{:<10}{:>6}{:>9}  {:<8}{:>12}{:>12}{:>8}{:>8}  {}\n", i.name,
                       InterfaceKindName(i.kind), i.mtu_bytes ? std::to_string(*i.mtu_bytes) : "-",
                       i.speed_mbps ? std::to_string(*i.speed_mbps) : "-", i.operstate,
                       FormatRate(rx), FormatRate(tx), errors, drops, addresses);
  }
  if (s.infiniband.empty()) {
    out += "infiniband/RoCE: no ports (/sys/class/infiniband is empty or absent)\n";
  }
  for (const InfinibandDevice& d : s.infiniband) {
    for (const InfinibandPort& p : d.ports) {
      out += fmt::format("{} port {}: {} ({}), {}, {}{}, symbol errors {}, link downed {}\n",
                         d.name, p.port, p.state ? p.state->name : "?",
                         p.phys_state ? p.phys_state->name : "?", p.rate ? p.rate->text : "rate ?",
                         p.link_layer, p.netdev.empty() ? "" : " via " + p.netdev,
                         p.symbol_errors.value_or(0), p.link_downed.value_or(0));
    }
  }
  return out;
}

std::string TopologySection(const Snapshot& s) {
  if (!s.topology) return "topology: not available\n";
  const Topology& t = *s.topology;
  std::string out = fmt::format("topology ({}): {} NUMA node(s)", t.source, t.numa_nodes.size());
  for (const NumaNode& n : t.numa_nodes) {
    out += fmt::format("; node{} cpus {} {}", n.id, n.cpulist, FormatBytes(n.mem_total_bytes));
  }
  out += "\n";
  auto list = [&](const char* what, const std::vector<DevicePlacement>& devices) {
    if (devices.empty()) return;
    out += fmt::format("  {}:", what);
    for (const DevicePlacement& d : devices) {
      out += fmt::format(" {} ({}, node {})", d.name, d.pci_address, d.numa_node);
    }
    out += "\n";
  };
  list("NICs", t.nics);
  list("HCAs", t.hcas);
  list("GPUs", t.gpus);
  return out;
}

std::string EnvironmentSection(const Snapshot& s) {
  if (s.environment.variables.empty()) {
    return "training environment: no NCCL_*, GLOO_*, CUDA_VISIBLE_DEVICES or launcher variables "
           "set\n";
  }
  std::string out = "training environment\n";
  for (const EnvironmentVariable& v : s.environment.variables) {
    out += fmt::format("  {}={}\n", v.name, v.value);
  }
  return out;
}

}  // namespace

std::string RenderSnapshotText(const Snapshot& s) {
  std::string out = fmt::format("stallscope snapshot of {} (kernel {}) at {}\n", s.hostname,
                                s.kernel, s.time_utc);
  out += s.container.in_container
             ? fmt::format("container: {} ({})\n",
                           s.container.runtime.empty() ? "yes" : s.container.runtime,
                           s.container.evidence.empty() ? "" : s.container.evidence.front())
             : "container: none detected\n";
  out += "\n" + MemorySection(s) + "\n" + CpuSection(s) + "\n" + DiskSection(s) + "\n" +
         NetworkSection(s) + "\n" + TopologySection(s) + "\n" + EnvironmentSection(s);
  out += "\n" + RenderGpuText(s.gpus);
  out += fmt::format("processes: {}, RSS {} in all\n", s.processes.processes,
                     FormatBytes(s.processes.rss_bytes));
  for (const std::string& note : s.notes) out += "note: " + note + "\n";
  return out;
}

}  // namespace stallscope
