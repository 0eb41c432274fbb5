#include "probe/gpu_capture.h"

#include <nlohmann/json.hpp>

#include "core/json_text.h"

namespace stallscope {
namespace {

using Json = nlohmann::ordered_json;

template <typename T>
void Put(Json& j, const char* key, const std::optional<T>& value) {
  if (value) j[key] = *value;
}

template <typename T>
void Get(const Json& j, const char* key, std::optional<T>& into) {
  if (j.contains(key) && !j[key].is_null()) into = j[key].get<T>();
}

template <typename T>
void Get(const Json& j, const char* key, T& into) {
  if (j.contains(key) && !j[key].is_null()) into = j[key].get<T>();
}

Json GpmToJson(const GpmMetrics& g) {
  Json j = Json::object();
  Put(j, "sm_active_percent", g.sm_active_percent);
  Put(j, "sm_occupancy_percent", g.sm_occupancy_percent);
  Put(j, "tensor_active_percent", g.tensor_active_percent);
  Put(j, "dram_bw_percent", g.dram_bw_percent);
  Put(j, "pcie_tx_mib_per_s", g.pcie_tx_mib_per_s);
  Put(j, "pcie_rx_mib_per_s", g.pcie_rx_mib_per_s);
  Put(j, "nvlink_tx_mib_per_s", g.nvlink_tx_mib_per_s);
  Put(j, "nvlink_rx_mib_per_s", g.nvlink_rx_mib_per_s);
  return j;
}

GpmMetrics GpmFromJson(const Json& j) {
  GpmMetrics g;
  Get(j, "sm_active_percent", g.sm_active_percent);
  Get(j, "sm_occupancy_percent", g.sm_occupancy_percent);
  Get(j, "tensor_active_percent", g.tensor_active_percent);
  Get(j, "dram_bw_percent", g.dram_bw_percent);
  Get(j, "pcie_tx_mib_per_s", g.pcie_tx_mib_per_s);
  Get(j, "pcie_rx_mib_per_s", g.pcie_rx_mib_per_s);
  Get(j, "nvlink_tx_mib_per_s", g.nvlink_tx_mib_per_s);
  Get(j, "nvlink_rx_mib_per_s", g.nvlink_rx_mib_per_s);
  return g;
}

// Every field of GpuState, by its name there (processes and gpm below).
// clang-format off
#define STALLSCOPE_GPU_FIELDS(X) \
  X(index) \
  X(name) \
  X(uuid) \
  X(pci_bus_id) \
  X(numa_node) \
  X(lost) \
  X(lost_reason) \
  X(memory_used_bytes) \
  X(memory_total_bytes) \
  X(utilization_gpu_percent) \
  X(utilization_memory_percent) \
  X(sm_clock_mhz) \
  X(sm_clock_max_mhz) \
  X(throttle_reasons) \
  X(temperature_c) \
  X(power_w) \
  X(power_limit_w) \
  X(pcie_tx_kib_per_s) \
  X(pcie_rx_kib_per_s) \
  X(ecc_volatile_corrected) \
  X(ecc_volatile_uncorrected) \
  X(ecc_aggregate_corrected) \
  X(ecc_aggregate_uncorrected) \
  X(retired_pages) \
  X(remapped_rows) \
  X(remap_pending) \
  X(remap_failed) \
  X(persistence_mode) \
  X(mig_mode) \
  X(mig_mode_pending) \
  X(gpm_note)
// clang-format on

template <typename T>
void PutField(Json& j, const char* key, const T& value) {
  j[key] = value;
}
template <typename T>
void PutField(Json& j, const char* key, const std::optional<T>& value) {
  Put(j, key, value);
}

Json GpuToJson(const GpuState& g) {
  Json j = Json::object();
#define X(field) PutField(j, #field, g.field);
  STALLSCOPE_GPU_FIELDS(X)
#undef X
  Json processes = Json::array();
  for (const GpuProcess& p : g.processes)
    processes.push_back({{"pid", p.pid}, {"used_bytes", p.used_bytes}});
  j["processes"] = std::move(processes);
  if (!g.nvlink_peers.empty()) {
    Json peers = Json::array();
    for (const GpuState::NvLinkPeer& p : g.nvlink_peers)
      peers.push_back({{"pci_bus_id", p.pci_bus_id}, {"links", p.links}});
    j["nvlink_peers"] = std::move(peers);
  }
  if (g.gpm) j["gpm"] = GpmToJson(*g.gpm);
  return j;
}

GpuState GpuFromJson(const Json& j) {
  GpuState g;
#define X(field) Get(j, #field, g.field);
  STALLSCOPE_GPU_FIELDS(X)
#undef X
  if (j.contains("processes") && j["processes"].is_array()) {
    for (const Json& p : j["processes"]) {
      GpuProcess process;
      Get(p, "pid", process.pid);
      Get(p, "used_bytes", process.used_bytes);
      g.processes.push_back(process);
    }
  }
  if (j.contains("nvlink_peers") && j["nvlink_peers"].is_array()) {
    for (const Json& p : j["nvlink_peers"]) {
      GpuState::NvLinkPeer peer;
      Get(p, "pci_bus_id", peer.pci_bus_id);
      Get(p, "links", peer.links);
      if (!peer.pci_bus_id.empty() && peer.links > 0) g.nvlink_peers.push_back(peer);
    }
  }
  if (j.contains("gpm") && j["gpm"].is_object()) g.gpm = GpmFromJson(j["gpm"]);
  return g;
}

}  // namespace

std::string NvmlCaptureToJson(const NvmlCapture& capture) {
  Json j = Json::object();
  j["schema"] = kNvmlCaptureSchema;
  j["available"] = capture.available;
  j["absent_reason"] = capture.absent_reason;
  Json samples = Json::array();
  for (const GpuObservation& o : capture.samples) {
    Json gpus = Json::array();
    for (const GpuState& g : o.gpus) gpus.push_back(GpuToJson(g));
    samples.push_back({{"gpus", std::move(gpus)}});
  }
  j["samples"] = std::move(samples);
  return JsonText(j) + "\n";
}

Result<NvmlCapture> ParseNvmlCapture(std::string_view text, std::string_view source) {
  Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::ParseError(source, 0, "not JSON: expected " + std::string(kNvmlCaptureSchema));
  }
  NvmlCapture out;
  try {
    Get(j, "available", out.available);
    Get(j, "absent_reason", out.absent_reason);
    if (j.contains("samples") && j["samples"].is_array()) {
      for (const Json& s : j["samples"]) {
        GpuObservation o;
        o.available = out.available;
        o.absent_reason = out.absent_reason;
        if (s.contains("gpus") && s["gpus"].is_array()) {
          for (const Json& g : s["gpus"]) o.gpus.push_back(GpuFromJson(g));
        }
        out.samples.push_back(std::move(o));
      }
    }
  } catch (const nlohmann::json::exception& e) {
    return Status::ParseError(source, 0, std::string("a field of the wrong type: ") + e.what());
  }
  return out;
}

}  // namespace stallscope
