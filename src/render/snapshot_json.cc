#include <optional>

#include "render/gpu.h"
#include "render/snapshot.h"
#include "sample/memory.h"

namespace stallscope {
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
                     {"link_downed", OrNull(p.link_downed)}});
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

}  // namespace

nlohmann::ordered_json SnapshotToJson(const Snapshot& s) {
  Json j;
  j["schema"] = "stallscope.snapshot/1";
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
  j["gpus"] = GpusToJson(s.gpus);
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
