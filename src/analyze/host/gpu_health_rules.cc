#include "analyze/host/gpu_health_rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#include "core/units.h"

namespace stallscope {
namespace {

// "00000000:3B:00.0" (NVML) or "0000:3b:00.0" (sysfs) -> "0000:3b:00.0";
// an Xid's "0000:3b:00" stays without its function.
std::string NormalBus(std::string_view bus) {
  std::string id;
  for (char c : bus) id += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (id.find(':') == 8 && id.compare(0, 4, "0000") == 0) id.erase(0, 4);
  return id;
}

// The GPU NVML reports at a sysfs address or an Xid's bus (no function).
const GpuState* GpuAt(const GpuObservation& gpus, std::string_view bus) {
  const std::string want = NormalBus(bus);
  for (const GpuState& g : gpus.gpus) {
    const std::string have = NormalBus(g.pci_bus_id);
    if (have == want || have.rfind(want + ".", 0) == 0) return &g;
  }
  return nullptr;
}

std::string GpuName(const GpuState* g, std::string_view bus) {
  if (!g) return fmt::format("GPU at {}", bus);
  return fmt::format("GPU {} ({}, {})", g->index, g->name.empty() ? "unnamed" : g->name, bus);
}

std::string GpuLabel(const GpuState& g) {
  return fmt::format("GPU {} ({}{}{})", g.index, g.name.empty() ? "unnamed" : g.name,
                     g.pci_bus_id.empty() ? "" : ", bus ", g.pci_bus_id);
}

std::string GigabytesPerSecond(double bytes_per_second) {
  return fmt::format("{:.1f} GB/s", bytes_per_second / 1e9);
}

Finding LinkFinding(const PcieLink& link, const PcieLinkEnd& trained, const PcieLinkEnd& expected,
                    const GpuState* gpu) {
  const bool is_gpu = link.kind == PcieDeviceKind::kGpu;
  const std::optional<double> now = PcieCeilingBytesPerSecond(trained);
  const std::optional<double> could = PcieCeilingBytesPerSecond(expected);
  const double share = now && could && *could > 0 ? *now / *could : 1.0;
  Finding f;
  f.id = is_gpu ? "io.pcie_degraded" : "network.link_degraded";
  f.layer = is_gpu ? Layer::kIo : Layer::kNetwork;
  f.severity = share <= kPcieDegradedCriticalShare ? Severity::kCritical : Severity::kWarning;
  const std::string who = is_gpu ? GpuName(gpu, link.pci_address)
                                 : fmt::format("{} {} ({})", PcieDeviceKindName(link.kind),
                                               link.name, link.pci_address);
  std::string what;
  if (trained.width && expected.width && *trained.width < *expected.width)
    what = fmt::format("x{} of x{}", *trained.width, *expected.width);
  if (trained.speed_gts && expected.speed_gts && *trained.speed_gts < *expected.speed_gts) {
    what += what.empty() ? "" : ", ";
    what += fmt::format("{} of {}", PcieEndText({trained.speed_gts, std::nullopt}),
                        PcieEndText({expected.speed_gts, std::nullopt}));
  }
  f.summary = fmt::format(
      "{}: PCIe link trained at {} ({}): {} at most, where the link could "
      "carry {}",
      who, PcieEndText(link.current), what, now ? GigabytesPerSecond(*now) : "unknown",
      could ? GigabytesPerSecond(*could) : "unknown");
  f.evidence = {{"device", link.name},
                {"pci_address", link.pci_address},
                {"current_link", PcieEndText(link.current)},
                {"device_max_link", PcieEndText(link.max)}};
  if (!link.port_address.empty()) {
    f.evidence.push_back({"upstream_port", link.port_address});
    f.evidence.push_back({"upstream_port_max_link", PcieEndText(link.port_max)});
  }
  if (now) f.evidence.push_back({"trained_ceiling_bytes_per_s", *now});
  if (could) f.evidence.push_back({"possible_ceiling_bytes_per_s", *could});
  f.evidence.push_back({"ceiling_share", share});
  if (gpu) f.evidence.push_back({"utilization_gpu_percent", gpu->utilization_gpu_percent});
  const std::string sys = "/sys/bus/pci/devices/" + link.pci_address;
  f.next = fmt::format(
      "sudo lspci -vv -s {} | grep -E 'LnkCap|LnkSta' (LnkSta 'downgraded'); reseat the card or "
      "riser, check the slot's BIOS lane/generation setting; {}",
      link.pci_address,
      is_gpu ? "confirm the copy ceiling with stallscope bench h2d"
             : "compare " + sys + "/current_link_width with a healthy node's");
  return f;
}

}  // namespace

FindingsWithNotes CheckPcieLinks(const std::vector<PcieLink>& links, const GpuObservation& gpus) {
  FindingsWithNotes out;
  for (const PcieLink& link : links) {
    const PcieLinkEnd expected = PcieExpected(link);
    PcieLinkEnd judged = link.current;
    const GpuState* gpu =
        link.kind == PcieDeviceKind::kGpu ? GpuAt(gpus, link.pci_address) : nullptr;
    if (link.current.width && *link.current.width == 0) {
      out.notes.push_back(fmt::format("pcie: {} {} ({}): link down (width 0)",
                                      PcieDeviceKindName(link.kind), link.name, link.pci_address));
      continue;
    }
    const bool slower = link.current.speed_gts && expected.speed_gts &&
                        *link.current.speed_gts < *expected.speed_gts;
    const bool narrower =
        link.current.width && expected.width && *link.current.width < *expected.width;
    if (slower && link.kind == PcieDeviceKind::kGpu &&
        (!gpu || gpu->utilization_gpu_percent < kPcieBusyUtilPercent)) {
      // Idle GPUs train down to save power: their speed now says nothing.
      out.notes.push_back(fmt::format(
          "pcie: GPU at {}: link at {} of {} while {}: GPUs slow an idle link to save power, so "
          "its speed is judged under load (stallscope bench h2d, or doctor during training)",
          link.pci_address, PcieEndText({link.current.speed_gts, std::nullopt}),
          PcieEndText({expected.speed_gts, std::nullopt}),
          gpu ? fmt::format("{:.0f}% busy", gpu->utilization_gpu_percent) : "NVML says nothing"));
      judged.speed_gts = expected.speed_gts;
      if (!narrower) continue;
    } else if (!slower && !narrower) {
      continue;
    }
    out.findings.push_back(LinkFinding(link, judged, expected, gpu));
  }
  return out;
}

FindingsWithNotes CheckGpuHealth(const GpuObservation& gpus,
                                 const std::vector<std::pair<unsigned, uint64_t>>& growth) {
  FindingsWithNotes out;
  for (const GpuState& g : gpus.gpus) {
    if (g.lost) continue;
    uint64_t grew = 0;
    for (const auto& [index, n] : growth) {
      if (index == g.index) grew = n;
    }
    const uint64_t volatile_unc = g.ecc_volatile_uncorrected.value_or(0);
    const uint64_t aggregate_unc = g.ecc_aggregate_uncorrected.value_or(0);
    if (volatile_unc > 0 || aggregate_unc > 0 || grew > 0) {
      Finding f;
      f.id = "memory.gpu_ecc";
      f.layer = Layer::kMemory;
      if (volatile_unc > 0) {
        f.severity = Severity::kCritical;
        f.summary = fmt::format(
            "{}: {} uncorrectable ECC error(s) since the driver loaded: results computed on it "
            "may be wrong, and the process that hit them was ended",
            GpuLabel(g), volatile_unc);
      } else if (aggregate_unc > 0) {
        f.severity = Severity::kWarning;
        f.summary = fmt::format(
            "{}: {} uncorrectable ECC error(s) over its life (none since the driver loaded): "
            "check that the rows were remapped or the pages retired",
            GpuLabel(g), aggregate_unc);
      } else {
        f.severity = Severity::kWarning;
        f.summary =
            fmt::format("{}: {} correctable ECC error(s) while we watched: memory is degrading",
                        GpuLabel(g), grew);
      }
      f.evidence = {{"gpu_index", static_cast<int64_t>(g.index)}};
      auto add = [&](const char* name, const std::optional<uint64_t>& v) {
        if (v) f.evidence.push_back({name, static_cast<int64_t>(*v)});
      };
      add("ecc_volatile_uncorrected", g.ecc_volatile_uncorrected);
      add("ecc_aggregate_uncorrected", g.ecc_aggregate_uncorrected);
      add("ecc_volatile_corrected", g.ecc_volatile_corrected);
      add("ecc_aggregate_corrected", g.ecc_aggregate_corrected);
      if (grew > 0)
        f.evidence.push_back({"ecc_corrected_during_interval", static_cast<int64_t>(grew)});
      if (g.retired_pages)
        f.evidence.push_back({"retired_pages", static_cast<int64_t>(*g.retired_pages)});
      if (g.remapped_rows)
        f.evidence.push_back({"remapped_rows", static_cast<int64_t>(*g.remapped_rows)});
      f.next = fmt::format(
          "nvidia-smi -q -d ECC,ROW_REMAPPER,PAGE_RETIREMENT -i {}; dcgmi diag -r 3; drain the "
          "node and reset the GPU (nvidia-smi -r -i {}) once idle; repeated uncorrectable errors: "
          "RMA",
          g.index, g.index);
      out.findings.push_back(std::move(f));
    }
    if (g.remap_failed || g.remap_pending) {
      Finding f;
      f.id = "memory.gpu_remap";
      f.layer = Layer::kMemory;
      f.severity = g.remap_failed ? Severity::kCritical : Severity::kWarning;
      f.summary = g.remap_failed
                      ? fmt::format(
                            "{}: a memory row could not be remapped (no spare row left): "
                            "the GPU keeps a bad row; replace it",
                            GpuLabel(g))
                      : fmt::format(
                            "{}: a memory row waits to be remapped: the GPU needs a reset "
                            "before that memory is trusted again",
                            GpuLabel(g));
      f.evidence = {{"gpu_index", static_cast<int64_t>(g.index)},
                    {"remap_pending", g.remap_pending},
                    {"remap_failed", g.remap_failed}};
      if (g.remapped_rows)
        f.evidence.push_back({"remapped_rows", static_cast<int64_t>(*g.remapped_rows)});
      f.next = g.remap_failed ? fmt::format(
                                    "nvidia-smi -q -d ROW_REMAPPER -i {}; take the node out of "
                                    "service and RMA the GPU",
                                    g.index)
                              : fmt::format(
                                    "drain the node, then nvidia-smi -r -i {} (or reboot); "
                                    "nvidia-smi -q -d ROW_REMAPPER -i {} shows Pending: No after",
                                    g.index, g.index);
      out.findings.push_back(std::move(f));
    }
    if (g.persistence_mode && !*g.persistence_mode) {
      Finding f;
      f.id = "code.gpu_persistence_off";
      f.layer = Layer::kCode;
      f.severity = Severity::kInfo;
      f.summary = fmt::format(
          "{}: persistence mode is off: the driver tears the GPU down whenever no process holds "
          "it, so every job start (and nvidia-smi) waits for it to initialize again",
          GpuLabel(g));
      f.evidence = {{"gpu_index", static_cast<int64_t>(g.index)}, {"persistence_mode", false}};
      f.next =
          "sudo nvidia-smi -pm 1, or better run nvidia-persistenced (systemctl enable --now "
          "nvidia-persistenced)";
      out.findings.push_back(std::move(f));
    }
  }
  return out;
}

FindingsWithNotes CheckGpuXids(const std::vector<GpuXid>& xids, const GpuObservation& gpus,
                               std::string_view during) {
  FindingsWithNotes out;
  std::map<std::string, std::vector<const GpuXid*>> by_bus;
  std::vector<std::string> order;
  for (const GpuXid& x : xids) {
    auto& list = by_bus[x.bus_id];
    if (list.empty()) order.push_back(x.bus_id);
    list.push_back(&x);
  }
  for (const std::string& bus : order) {
    const std::vector<const GpuXid*>& list = by_bus[bus];
    std::map<int, int> counts;
    std::vector<int> numbers;
    const GpuXid* worst = list.front();
    for (const GpuXid* x : list) {
      if (counts[x->xid]++ == 0) numbers.push_back(x->xid);
      if (XidNeedsReset(x->xid) && !XidNeedsReset(worst->xid)) worst = x;
    }
    const GpuState* gpu = GpuAt(gpus, bus);
    Finding f;
    f.id = "code.gpu_xid";
    f.layer = Layer::kCode;
    f.severity = XidNeedsReset(worst->xid) ? Severity::kCritical : Severity::kWarning;
    std::string listed;
    for (int n : numbers) {
      std::string_view meaning = XidMeaning(n);
      listed += fmt::format("{}Xid {}{}{}{}", listed.empty() ? "" : "; ", n,
                            counts[n] > 1 ? fmt::format(" x{}", counts[n]) : "",
                            meaning.empty() ? "" : ": ", meaning);
    }
    f.summary =
        fmt::format("{}: the driver logged {} {}: {}", GpuName(gpu, bus),
                    list.size() == 1 ? "an Xid error" : fmt::format("{} Xid errors", list.size()),
                    during, listed);
    f.evidence = {{"bus_id", bus}};
    if (gpu) f.evidence.push_back({"gpu_index", static_cast<int64_t>(gpu->index)});
    for (int n : numbers)
      f.evidence.push_back({fmt::format("xid_{}_count", n), static_cast<int64_t>(counts[n])});
    f.evidence.push_back({"worst_xid", static_cast<int64_t>(worst->xid)});
    if (!worst->process.empty()) f.evidence.push_back({"process", worst->process});
    if (worst->pid) f.evidence.push_back({"pid", static_cast<int64_t>(*worst->pid)});
    f.evidence.push_back({"message", worst->message});
    if (gpu && gpu->lost) f.evidence.push_back({"nvml_lost", gpu->lost_reason});
    const bool application = std::all_of(
        list.begin(), list.end(), [](const GpuXid* x) { return XidUsuallyApplication(x->xid); });
    f.next = f.severity == Severity::kCritical
                 ? "drain the node; nvidia-smi -q -i " + bus +
                       " and dcgmi diag -r 3; reset the GPU or reboot; a repeat means RMA"
             : application
                 ? "usually the application's: rerun with CUDA_LAUNCH_BLOCKING=1 and "
                   "compute-sanitizer to find the kernel; a repeat on one GPU only points at it"
                 : "dmesg -T | grep -i xid for the context; dcgmi diag -r 2 on this GPU";
    out.findings.push_back(std::move(f));
  }
  return out;
}

std::optional<Finding> PortLogFinding(const std::vector<PortLogEvent>& events,
                                      std::string_view during) {
  if (events.empty()) return std::nullopt;
  std::map<std::string, int> counts;
  std::vector<std::string> order;
  for (const PortLogEvent& e : events) {
    if (counts[e.device]++ == 0) order.push_back(e.device);
  }
  Finding f;
  f.id = "network.port_errors";
  f.layer = Layer::kNetwork;
  f.severity = Severity::kWarning;
  std::string listed;
  for (const std::string& d : order)
    listed += fmt::format("{}{} ({}x)", listed.empty() ? "" : ", ", d, counts[d]);
  f.summary =
      fmt::format("the kernel log shows RDMA/mlx5 link-down messages {}: {}", during, listed);
  for (const std::string& d : order)
    f.evidence.push_back({"link_down_" + d, static_cast<int64_t>(counts[d])});
  f.evidence.push_back({"last_message", events.back().message});
  f.next =
      "dmesg -T | grep -iE 'mlx5|link (down|up)'; ibstat / ethtool for the port's state "
      "and counters; reseat or replace the cable if it repeats";
  return f;
}

FindingsWithNotes CheckRunKernelLog(const Timeline& timeline) {
  FindingsWithNotes out;
  if (!timeline.kernel_events_recorded) {
    if (!timeline.gpus.empty())
      out.notes.push_back(
          "this run file predates the kernel log of the run (table kernel_events): Xid errors "
          "during it are not known; `dmesg -T | grep -i xid` shows them");
    return out;
  }
  // The GPUs as last sampled, to name a bus id's GPU.
  GpuObservation gpus;
  for (const GpuPoint& p : timeline.gpus) {
    auto same = std::find_if(gpus.gpus.begin(), gpus.gpus.end(),
                             [&](const GpuState& g) { return g.index == p.gpu.index; });
    if (same == gpus.gpus.end()) {
      gpus.gpus.push_back(p.gpu);
    } else {
      *same = p.gpu;
    }
  }
  FindingsWithNotes xids = CheckGpuXids(timeline.xids, gpus, "during the run");
  for (Finding& f : xids.findings) {
    const std::string* bus = nullptr;
    for (const Evidence& e : f.evidence)
      if (e.name == "bus_id") bus = std::get_if<std::string>(&e.value);
    std::optional<double> first, last;
    for (const GpuXid& x : timeline.xids) {
      if (bus == nullptr || x.bus_id != *bus || !x.monotonic_seconds) continue;
      if (!first || *x.monotonic_seconds < *first) first = *x.monotonic_seconds;
      if (!last || *x.monotonic_seconds > *last) last = *x.monotonic_seconds;
    }
    if (first) {
      // The kernel's clock and the run's drift apart slowly: a tenth of a
      // second is as fine as the two agree.
      f.evidence.push_back({"first_seconds_into_run", std::round(*first * 10) / 10});
      f.evidence.push_back({"last_seconds_into_run", std::round(*last * 10) / 10});
      f.summary += fmt::format(" (at {:.1f} s into the run{})", *first,
                               *last > *first ? fmt::format(", last at {:.1f} s", *last) : "");
    }
    out.findings.push_back(std::move(f));
  }
  for (std::string& n : xids.notes) out.notes.push_back(std::move(n));
  if (std::optional<Finding> ports = PortLogFinding(timeline.port_events, "during the run"))
    out.findings.push_back(std::move(*ports));
  return out;
}

}  // namespace stallscope
