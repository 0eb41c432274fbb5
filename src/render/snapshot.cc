#include "render/snapshot.h"

#include <fmt/format.h>

#include <optional>

#include "core/units.h"
#include "core/version.h"
#include "render/gpu.h"
#include "sample/memory.h"

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
      if (p.xmit_wait) out += fmt::format("  port_xmit_wait {} ticks\n", *p.xmit_wait);
      for (const NicCounter& c : p.hw_counters) out += fmt::format("  {} {}\n", c.name, c.value);
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

// PCIe links (lspci -vv's LnkSta against LnkCap), only when there are any.
std::string PcieSection(const Snapshot& s) {
  if (s.pcie_links.empty()) return "";
  std::string out = "pcie links (trained / device max / upstream port max)\n";
  for (const PcieLink& l : s.pcie_links) {
    std::optional<double> ceiling = PcieCeilingBytesPerSecond(l.current);
    out += fmt::format("  {} {} ({}): {} / {} / {}{}\n", PcieDeviceKindName(l.kind), l.name,
                       l.pci_address, PcieEndText(l.current), PcieEndText(l.max),
                       l.port_address.empty() ? "no port" : PcieEndText(l.port_max),
                       ceiling ? fmt::format("  ceiling {:.1f} GB/s", *ceiling / 1e9) : "");
  }
  return out;
}

// The congestion counters of the NICs' driver statistics (ethtool -S), for
// the interfaces whose driver has any; "+N" is the growth over the interval.
std::string NicStatsSection(const Snapshot& s) {
  std::string out;
  size_t without = 0;
  for (const Snapshot::NicStatsReading& r : s.nic_stats) {
    const NicCongestion& t = r.total;
    if (!t.has_pause && !t.has_ecn_cnp && !t.has_drops) {
      ++without;
      continue;
    }
    auto figure = [&](const char* what, uint64_t total, uint64_t growth) {
      return r.growth_known ? fmt::format("{} {} (+{})", what, total, growth)
                            : fmt::format("{} {}", what, total);
    };
    std::vector<std::string> parts;
    if (t.has_pause) {
      parts.push_back(figure("pause rx", t.pause_rx, r.growth.pause_rx));
      parts.push_back(figure("pause tx", t.pause_tx, r.growth.pause_tx));
    }
    if (t.has_ecn_cnp) {
      parts.push_back(figure("ECN marked", t.ecn_marked, r.growth.ecn_marked));
      parts.push_back(figure("CNP sent", t.cnp_sent, r.growth.cnp_sent));
      parts.push_back(figure("CNP handled", t.cnp_handled, r.growth.cnp_handled));
    }
    if (t.has_drops) {
      parts.push_back(figure("buffer drops", t.buffer_drops, r.growth.buffer_drops));
      if (t.allowance_exceeded > 0 || r.growth.allowance_exceeded > 0)
        parts.push_back(
            figure("allowance exceeded", t.allowance_exceeded, r.growth.allowance_exceeded));
    }
    out += fmt::format("  {}: {}\n", r.interface, fmt::join(parts, ", "));
  }
  if (out.empty() && without == 0) return "";
  std::string head = "nic statistics (ethtool -S; +N over the interval)\n";
  if (without > 0)
    out +=
        fmt::format("  {} more interface(s) whose driver counts no pause, ECN or drops\n", without);
  return head + out;
}

// What the kernel log holds about GPUs and RDMA ports, when it was read.
std::string KernelLogSection(const Snapshot& s) {
  if (!s.kernel_log_read) return "";
  std::string out =
      fmt::format("kernel log since boot: {} Xid error(s), {} port link-down message(s)\n",
                  s.xids.size(), s.port_events.size());
  for (const GpuXid& x : s.xids) {
    std::string_view meaning = XidMeaning(x.xid);
    out +=
        fmt::format("  Xid {} on {}{}{}\n", x.xid, x.bus_id, meaning.empty() ? "" : ": ", meaning);
  }
  for (const PortLogEvent& e : s.port_events) out += fmt::format("  {}\n", e.message);
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
         NetworkSection(s) + "\n" + TopologySection(s) + PcieSection(s) + NicStatsSection(s) +
         KernelLogSection(s) + "\n" + EnvironmentSection(s);
  out += "\n" + RenderGpuText(s.gpus);
  out += fmt::format("processes: {}, RSS {} in all\n", s.processes.processes,
                     FormatBytes(s.processes.rss_bytes));
  for (const std::string& note : s.notes) out += "note: " + note + "\n";
  return out;
}

namespace {

using Json = nlohmann::ordered_json;

template <typename T>
Json OrNull(const std::optional<T>& value) {
  return value ? Json(*value) : Json(nullptr);
}

Json PressureJson(const Pressure& p) {
  if (!p.present) return nullptr;
  auto line = [](const std::optional<PressureLine>& l) -> Json {
    if (!l) return nullptr;
    return {{"avg10_percent", l->avg10_percent},
            {"avg60_percent", l->avg60_percent},
            {"avg300_percent", l->avg300_percent},
            {"total_us", l->total_us}};
  };
  return {{"some", line(p.some)}, {"full", line(p.full)}};
}

Json MemoryJson(const Snapshot& s) {
  const MemInfo& m = s.after.memory;
  Json j;
  j["total_bytes"] = m.total_bytes;
  j["used_bytes"] = m.total_bytes - std::min(m.total_bytes, m.available_bytes.value_or(0));
  j["free_bytes"] = m.free_bytes;
  j["shared_bytes"] = m.shmem_bytes;
  j["buffers_bytes"] = m.buffers_bytes;
  j["cached_bytes"] = m.cached_bytes + m.slab_reclaimable_bytes;  // as free(1) counts buff/cache
  j["available_bytes"] = OrNull(m.available_bytes);
  j["swap_total_bytes"] = m.swap_total_bytes;
  j["swap_used_bytes"] = m.swap_used_bytes();
  j["swap_free_bytes"] = m.swap_free_bytes;
  j["dirty_bytes"] = m.dirty_bytes;
  j["writeback_bytes"] = m.writeback_bytes;
  j["mlocked_bytes"] = m.mlocked_bytes;
  j["anon_huge_pages_bytes"] = m.anon_huge_pages_bytes;
  j["huge_pages_total"] = m.huge_pages_total;
  j["huge_pages_free"] = m.huge_pages_free;
  j["huge_page_size_bytes"] = m.huge_page_size_bytes;
  j["committed_as_bytes"] = m.committed_as_bytes;
  j["swap_in_bytes_per_s"] = s.vm_rates.swap_in_bytes_per_s;
  j["swap_out_bytes_per_s"] = s.vm_rates.swap_out_bytes_per_s;
  j["major_faults_per_s"] = s.vm_rates.major_faults_per_s;
  j["direct_reclaim_pages_per_s"] = s.vm_rates.direct_scan_pages_per_s;
  j["oom_kills_since_boot"] = OrNull(s.after.vmstat.oom_kill);
  j["processes_pinned_bytes"] = s.processes.pinned_bytes;
  if (s.top_pinned.pinned_bytes > 0) {
    j["top_pinned_process"] = {{"pid", s.top_pinned.pid},
                               {"comm", s.top_pinned.comm},
                               {"pinned_bytes", s.top_pinned.pinned_bytes}};
  }
  if (s.cgroup) {
    const CgroupMemory& c = *s.cgroup;
    j["cgroup"] = {{"version", c.version == CgroupVersion::kV1 ? 1 : 2},
                   {"path", c.cgroup_path},
                   {"limit_bytes", OrNull(c.limit_bytes)},
                   {"usage_bytes", c.usage_bytes},
                   {"working_set_bytes", c.working_set_bytes},
                   {"swap_usage_bytes", OrNull(c.swap_usage_bytes)},
                   {"oom_kill_count", OrNull(c.oom_kill_count)},
                   {"effective_available_bytes", EffectiveAvailableBytes(m, c)}};
  } else {
    j["cgroup"] = nullptr;
  }
  if (s.after.pressure) {
    j["pressure"] = {{"cpu", PressureJson(s.after.pressure->cpu)},
                     {"memory", PressureJson(s.after.pressure->memory)},
                     {"io", PressureJson(s.after.pressure->io)}};
  } else {
    j["pressure"] = nullptr;
  }
  return j;
}

Json CpuPercentJson(const CpuPercent& c) {
  return {{"user_percent", c.user_percent},     {"nice_percent", c.nice_percent},
          {"system_percent", c.system_percent}, {"iowait_percent", c.iowait_percent},
          {"irq_percent", c.irq_percent},       {"softirq_percent", c.softirq_percent},
          {"steal_percent", c.steal_percent},   {"guest_percent", c.guest_percent},
          {"idle_percent", c.idle_percent}};
}

Json CpuJson(const Snapshot& s) {
  Json j = CpuPercentJson(s.cpu_usage.total);
  j["count"] = s.after.cpu.per_cpu.size();
  j["procs_running"] = s.after.cpu.procs_running;
  j["procs_blocked"] = s.after.cpu.procs_blocked;
  Json per = Json::array();
  for (const CpuPercent& c : s.cpu_usage.per_cpu) {
    Json one = {{"cpu", c.cpu}};
    one.update(CpuPercentJson(c));
    per.push_back(one);
  }
  j["per_cpu"] = per;
  return j;
}

Json DisksJson(const Snapshot& s) {
  Json out = Json::array();
  for (const DiskRates& r : s.disk_rates) {
    Json d;
    d["name"] = r.name;
    for (const BlockDevice& b : s.block_devices) {
      if (b.name != r.name) continue;
      d["disk"] = b.disk;
      d["is_partition"] = b.is_partition;
      d["rotational"] = OrNull(b.rotational);
      d["virtual"] = b.is_virtual;
      d["model"] = b.model;
      d["size_bytes"] = OrNull(b.size_bytes);
    }
    // iostat -x column names, in its units (kB = 1024 bytes, as iostat).
    d["r_s"] = r.reads_per_second;
    d["w_s"] = r.writes_per_second;
    d["rkB_s"] = r.read_kib_per_second;
    d["wkB_s"] = r.write_kib_per_second;
    d["rrqm_s"] = r.read_merges_per_second;
    d["wrqm_s"] = r.write_merges_per_second;
    d["r_await_ms"] = r.read_await_ms;
    d["w_await_ms"] = r.write_await_ms;
    d["aqu_sz"] = r.average_queue_size;
    d["rareq_sz_kB"] = r.read_request_kib;
    d["wareq_sz_kB"] = r.write_request_kib;
    d["util_percent"] = r.util_percent;
    out.push_back(d);
  }
  return out;
}

Json InterfacesJson(const Snapshot& s) {
  Json out = Json::array();
  for (const NetInterface& i : s.interfaces) {
    Json j;
    j["name"] = i.name;
    j["kind"] = InterfaceKindName(i.kind);
    j["kind_evidence"] = i.kind_evidence;
    j["mtu"] = OrNull(i.mtu_bytes);
    j["speed_mbps"] = OrNull(i.speed_mbps);
    j["operstate"] = i.operstate;
    j["mac"] = i.mac_address;
    j["master"] = i.master;
    j["pci_address"] = i.pci_address;
    Json addresses = Json::array();
    for (const IpAddress& a : i.addresses) {
      addresses.push_back(a.address + "/" + std::to_string(a.prefix_length));
    }
    j["addresses"] = addresses;
    for (const NetDevCounters& c : s.after.net) {
      if (c.name != i.name) continue;
      j["rx_bytes"] = c.rx_bytes;
      j["tx_bytes"] = c.tx_bytes;
      j["rx_errors"] = c.rx_errs;
      j["tx_errors"] = c.tx_errs;
      j["rx_dropped"] = c.rx_drop;
      j["tx_dropped"] = c.tx_drop;
    }
    for (const NetRates& r : s.net_rates) {
      if (r.name != i.name) continue;
      j["rx_bytes_per_s"] = r.rx_bytes_per_s;
      j["tx_bytes_per_s"] = r.tx_bytes_per_s;
    }
    out.push_back(j);
  }
  return out;
}

// The congestion counters of a port's hw_counters/, by name.
Json HwCountersJson(const InfinibandPort& p) {
  Json out = Json::object();
  for (const NicCounter& c : p.hw_counters) out[c.name] = c.value;
  return out;
}

Json InfinibandJson(const Snapshot& s) {
  Json out = Json::array();
  for (const InfinibandDevice& d : s.infiniband) {
    for (const InfinibandPort& p : d.ports) {
      out.push_back({{"hca", d.name},
                     {"port", p.port},
                     {"state", p.state ? Json(p.state->name) : Json(nullptr)},
                     {"phys_state", p.phys_state ? Json(p.phys_state->name) : Json(nullptr)},
                     {"rate_gbps", p.rate ? Json(p.rate->gbps) : Json(nullptr)},
                     {"link_layer", p.link_layer},
                     {"netdev", p.netdev},
                     {"firmware", d.firmware_version},
                     {"xmit_bytes", OrNull(p.xmit_bytes)},
                     {"rcv_bytes", OrNull(p.rcv_bytes)},
                     {"rcv_errors", OrNull(p.rcv_errors)},
                     {"symbol_errors", OrNull(p.symbol_errors)},
                     {"link_downed", OrNull(p.link_downed)},
                     {"xmit_wait_ticks", OrNull(p.xmit_wait)},
                     {"excessive_buffer_overrun_errors", OrNull(p.excessive_buffer_overrun_errors)},
                     {"local_link_integrity_errors", OrNull(p.local_link_integrity_errors)},
                     {"hw_counters", HwCountersJson(p)}});
    }
  }
  return out;
}

Json TopologyJson(const Snapshot& s) {
  if (!s.topology) return nullptr;
  const Topology& t = *s.topology;
  Json nodes = Json::array();
  for (const NumaNode& n : t.numa_nodes) {
    nodes.push_back({{"id", n.id},
                     {"cpus", n.cpulist},
                     {"cpu_count", n.cpu_count},
                     {"memory_bytes", n.mem_total_bytes}});
  }
  auto placements = [](const std::vector<DevicePlacement>& list) {
    Json out = Json::array();
    for (const DevicePlacement& d : list) {
      out.push_back({{"name", d.name}, {"pci_address", d.pci_address}, {"numa_node", d.numa_node}});
    }
    return out;
  };
  return {{"source", t.source},
          {"numa_nodes", nodes},
          {"nics", placements(t.nics)},
          {"hcas", placements(t.hcas)},
          {"gpus", placements(t.gpus)}};
}

Json PcieJson(const Snapshot& s) {
  Json out = Json::array();
  auto end = [](const PcieLinkEnd& e) -> Json {
    return {{"speed_gts", OrNull(e.speed_gts)}, {"width", OrNull(e.width)}};
  };
  for (const PcieLink& l : s.pcie_links) {
    out.push_back({{"kind", PcieDeviceKindName(l.kind)},
                   {"name", l.name},
                   {"pci_address", l.pci_address},
                   {"current", end(l.current)},
                   {"max", end(l.max)},
                   {"port_address", l.port_address.empty() ? Json(nullptr) : Json(l.port_address)},
                   {"port_max", l.port_address.empty() ? Json(nullptr) : end(l.port_max)},
                   {"ceiling_bytes_per_s", OrNull(PcieCeilingBytesPerSecond(l.current))}});
  }
  return out;
}

Json NicStatsJson(const Snapshot& s) {
  auto sums = [](const NicCongestion& c) -> Json {
    return {{"pause_rx", c.pause_rx},
            {"pause_tx", c.pause_tx},
            {"ecn_marked", c.ecn_marked},
            {"cnp_sent", c.cnp_sent},
            {"cnp_handled", c.cnp_handled},
            {"buffer_drops", c.buffer_drops},
            {"allowance_exceeded", c.allowance_exceeded}};
  };
  Json out = Json::array();
  for (const Snapshot::NicStatsReading& r : s.nic_stats) {
    Json raw = Json::object();
    for (const NicCounter& c : r.raw) raw[c.name] = c.value;
    out.push_back({{"interface", r.interface},
                   {"source", r.source},
                   {"counters", r.counters},
                   {"has_pause", r.total.has_pause},
                   {"has_ecn_cnp", r.total.has_ecn_cnp},
                   {"has_drops", r.total.has_drops},
                   {"total", sums(r.total)},
                   {"growth", r.growth_known ? sums(r.growth) : Json(nullptr)},
                   {"counted_from", r.total.counters_used},
                   {"raw", raw}});
  }
  return out;
}

Json KernelLogJson(const Snapshot& s) {
  if (!s.kernel_log_read) return nullptr;
  Json xids = Json::array();
  for (const GpuXid& x : s.xids) {
    xids.push_back({{"xid", x.xid},
                    {"bus_id", x.bus_id},
                    {"meaning", std::string(XidMeaning(x.xid))},
                    {"pid", OrNull(x.pid)},
                    {"process", x.process},
                    {"monotonic_seconds", OrNull(x.monotonic_seconds)},
                    {"message", x.message}});
  }
  Json ports = Json::array();
  for (const PortLogEvent& e : s.port_events) {
    ports.push_back({{"device", e.device},
                     {"monotonic_seconds", OrNull(e.monotonic_seconds)},
                     {"message", e.message}});
  }
  return {{"xids", xids}, {"port_events", ports}};
}

}  // namespace

nlohmann::ordered_json SnapshotToJson(const Snapshot& s) {
  Json j;
  j["schema"] = "stallscope.snapshot/1";
  j["version"] = Version();
  j["host"] = s.hostname;
  j["kernel"] = s.kernel;
  j["time"] = s.time_utc;
  j["interval_seconds"] = s.interval_seconds;
  j["memory"] = MemoryJson(s);
  j["container"] = {{"in_container", s.container.in_container},
                    {"runtime", s.container.runtime},
                    {"evidence", s.container.evidence}};
  j["cpu"] = CpuJson(s);
  j["disks"] = DisksJson(s);
  j["interfaces"] = InterfacesJson(s);
  j["infiniband"] = InfinibandJson(s);
  j["topology"] = TopologyJson(s);
  j["pcie_links"] = PcieJson(s);
  j["nic_stats"] = NicStatsJson(s);
  j["gpus"] = GpusToJson(s.gpus);
  j["kernel_log"] = KernelLogJson(s);
  Json env = Json::object();
  for (const EnvironmentVariable& v : s.environment.variables) env[v.name] = v.value;
  j["environment"] = env;
  j["processes"] = {{"count", s.processes.processes},
                    {"rss_bytes", s.processes.rss_bytes},
                    {"pinned_bytes", s.processes.pinned_bytes},
                    {"swap_bytes", s.processes.swap_bytes}};
  j["notes"] = s.notes;
  return j;
}

}  // namespace stallscope
