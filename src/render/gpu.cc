#include "render/gpu.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/units.h"

namespace stallscope {
namespace {

template <typename T>
nlohmann::ordered_json OrNull(const std::optional<T>& v) {
  return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}

template <typename T>
std::string OrNa(const std::optional<T>& v, const char* format) {
  return v ? fmt::format(fmt::runtime(format), *v) : "n/a";
}

std::string Reasons(const GpuState& g) {
  if (!g.throttle_reasons) return "n/a";
  std::string out;
  for (const std::string& n : ThrottleReasonNames(*g.throttle_reasons)) {
    out += (out.empty() ? "" : ",") + n;
  }
  return out.empty() ? "none" : out;
}

}  // namespace

std::string RenderGpuText(const GpuObservation& o) {
  if (!o.available) return "gpu: " + o.absent_reason + "\n";
  std::string out = fmt::format("gpu ({} GPUs, NVML)\n", o.gpus.size());
  for (const GpuState& g : o.gpus) {
    out += fmt::format("  {} {}  {}  bus {}  numa {}\n", g.index, g.name, g.uuid, g.pci_bus_id,
                       g.numa_node ? std::to_string(*g.numa_node) : "n/a");
    if (g.lost) {
      out += fmt::format("    LOST: {}\n", g.lost_reason);
      continue;
    }
    out += fmt::format(
        "    util {:.0f}%  mem util {:.0f}%  memory {} / {} ({:.1f}%)  SM clock {} / {} MHz  "
        "{} C  power {} / {} W\n",
        g.utilization_gpu_percent, g.utilization_memory_percent, FormatBytes(g.memory_used_bytes),
        FormatBytes(g.memory_total_bytes), 100.0 * g.memory_used_fraction(),
        OrNa(g.sm_clock_mhz, "{}"), OrNa(g.sm_clock_max_mhz, "{}"), OrNa(g.temperature_c, "{}"),
        OrNa(g.power_w, "{:.0f}"), OrNa(g.power_limit_w, "{:.0f}"));
    out += fmt::format(
        "    throttle {}  PCIe tx {} rx {} KiB/s  ECC volatile corrected {} uncorrected {}  "
        "retired pages {}  remapped rows {}{}\n",
        Reasons(g), OrNa(g.pcie_tx_kib_per_s, "{:.0f}"), OrNa(g.pcie_rx_kib_per_s, "{:.0f}"),
        OrNa(g.ecc_volatile_corrected, "{}"), OrNa(g.ecc_volatile_uncorrected, "{}"),
        OrNa(g.retired_pages, "{}"), OrNa(g.remapped_rows, "{}"),
        g.remap_pending ? " (remap pending: reset the GPU)" : "");
    if (g.ecc_aggregate_uncorrected || g.persistence_mode || g.mig_mode || g.remap_failed) {
      auto on_off = [](const std::optional<bool>& v) { return !v ? "n/a" : *v ? "on" : "off"; };
      out += fmt::format(
          "    ECC lifetime corrected {} uncorrected {}  persistence {}  MIG {}{}{}\n",
          OrNa(g.ecc_aggregate_corrected, "{}"), OrNa(g.ecc_aggregate_uncorrected, "{}"),
          on_off(g.persistence_mode), on_off(g.mig_mode),
          g.mig_mode_pending && g.mig_mode && *g.mig_mode_pending != *g.mig_mode
              ? fmt::format(" ({} after reset)", on_off(g.mig_mode_pending))
              : "",
          g.remap_failed ? "  ROW REMAP FAILED" : "");
    }
    if (g.gpm) {
      const GpmMetrics& m = *g.gpm;
      out += fmt::format(
          "    GPM: SM active {}%  SM occupancy {}%  tensor {}%  DRAM bw {}%  PCIe tx/rx {}/{} "
          "MiB/s  NVLink tx/rx {}/{} MiB/s\n",
          OrNa(m.sm_active_percent, "{:.1f}"), OrNa(m.sm_occupancy_percent, "{:.1f}"),
          OrNa(m.tensor_active_percent, "{:.1f}"), OrNa(m.dram_bw_percent, "{:.1f}"),
          OrNa(m.pcie_tx_mib_per_s, "{:.0f}"), OrNa(m.pcie_rx_mib_per_s, "{:.0f}"),
          OrNa(m.nvlink_tx_mib_per_s, "{:.0f}"), OrNa(m.nvlink_rx_mib_per_s, "{:.0f}"));
    } else {
      out += fmt::format("    GPM: {}\n", g.gpm_note.empty() ? "not available" : g.gpm_note);
    }
    for (const GpuProcess& p : g.processes) {
      out += fmt::format("    pid {} uses {}\n", p.pid, FormatBytes(p.used_bytes));
    }
  }
  return out;
}

nlohmann::ordered_json GpusToJson(const GpuObservation& o) {
  nlohmann::ordered_json j;
  j["available"] = o.available;
  if (!o.available) {
    j["reason"] = o.absent_reason;
    j["devices"] = nlohmann::ordered_json::array();
    return j;
  }
  nlohmann::ordered_json devices = nlohmann::ordered_json::array();
  for (const GpuState& g : o.gpus) {
    nlohmann::ordered_json d;
    d["index"] = g.index;
    d["name"] = g.name;
    d["uuid"] = g.uuid;
    d["pci_bus_id"] = g.pci_bus_id;
    d["numa_node"] = OrNull(g.numa_node);
    d["lost"] = g.lost;
    if (g.lost) d["lost_reason"] = g.lost_reason;
    d["memory_used_bytes"] = g.memory_used_bytes;
    d["memory_total_bytes"] = g.memory_total_bytes;
    d["utilization_gpu_percent"] = g.utilization_gpu_percent;
    d["utilization_memory_percent"] = g.utilization_memory_percent;
    d["sm_clock_mhz"] = OrNull(g.sm_clock_mhz);
    d["sm_clock_max_mhz"] = OrNull(g.sm_clock_max_mhz);
    d["throttle_reasons"] = OrNull(g.throttle_reasons);
    d["throttle_reason_names"] =
        g.throttle_reasons ? nlohmann::ordered_json(ThrottleReasonNames(*g.throttle_reasons))
                           : nlohmann::ordered_json(nullptr);
    d["temperature_c"] = OrNull(g.temperature_c);
    d["power_w"] = OrNull(g.power_w);
    d["power_limit_w"] = OrNull(g.power_limit_w);
    d["pcie_tx_kib_per_s"] = OrNull(g.pcie_tx_kib_per_s);
    d["pcie_rx_kib_per_s"] = OrNull(g.pcie_rx_kib_per_s);
    d["ecc_volatile_corrected"] = OrNull(g.ecc_volatile_corrected);
    d["ecc_volatile_uncorrected"] = OrNull(g.ecc_volatile_uncorrected);
    d["retired_pages"] = OrNull(g.retired_pages);
    d["remapped_rows"] = OrNull(g.remapped_rows);
    d["remap_pending"] = g.remap_pending;
    d["ecc_aggregate_corrected"] = OrNull(g.ecc_aggregate_corrected);
    d["ecc_aggregate_uncorrected"] = OrNull(g.ecc_aggregate_uncorrected);
    d["remap_failed"] = g.remap_failed;
    d["persistence_mode"] = OrNull(g.persistence_mode);
    d["mig_mode"] = OrNull(g.mig_mode);
    d["mig_mode_pending"] = OrNull(g.mig_mode_pending);
    nlohmann::ordered_json procs = nlohmann::ordered_json::array();
    for (const GpuProcess& p : g.processes) {
      procs.push_back({{"pid", p.pid}, {"used_bytes", p.used_bytes}});
    }
    d["processes"] = procs;
    if (g.gpm) {
      const GpmMetrics& m = *g.gpm;
      d["gpm"] = {{"sm_active_percent", OrNull(m.sm_active_percent)},
                  {"sm_occupancy_percent", OrNull(m.sm_occupancy_percent)},
                  {"tensor_active_percent", OrNull(m.tensor_active_percent)},
                  {"dram_bw_percent", OrNull(m.dram_bw_percent)},
                  {"pcie_tx_mib_per_s", OrNull(m.pcie_tx_mib_per_s)},
                  {"pcie_rx_mib_per_s", OrNull(m.pcie_rx_mib_per_s)},
                  {"nvlink_tx_mib_per_s", OrNull(m.nvlink_tx_mib_per_s)},
                  {"nvlink_rx_mib_per_s", OrNull(m.nvlink_rx_mib_per_s)}};
    } else {
      d["gpm"] = nullptr;
      d["gpm_note"] = g.gpm_note;
    }
    devices.push_back(std::move(d));
  }
  j["devices"] = devices;
  return j;
}

}  // namespace stallscope
