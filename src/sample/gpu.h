// GPU samples: what NVML says about each GPU at one moment (gpu/gpu_probe.h
// fills them), as `snapshot`, `doctor` and the run timeline carry them.
// Optional fields are the ones a GPU or driver may not report (NVML's
// NOT_SUPPORTED): absent, never a made-up zero. Plain data; thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace stallscope {

// NVML's clock-throttle ("clocks event") reason bits, as a sample keeps them
// (probe/gpu_probe.cc checks they are NVML's values).
inline constexpr uint64_t kThrottleGpuIdle = 0x1;
inline constexpr uint64_t kThrottleApplicationsClocksSetting = 0x2;
inline constexpr uint64_t kThrottleSwPowerCap = 0x4;
inline constexpr uint64_t kThrottleHwSlowdown = 0x8;
inline constexpr uint64_t kThrottleSyncBoost = 0x10;
inline constexpr uint64_t kThrottleSwThermalSlowdown = 0x20;
inline constexpr uint64_t kThrottleHwThermalSlowdown = 0x40;
inline constexpr uint64_t kThrottleHwPowerBrakeSlowdown = 0x80;
inline constexpr uint64_t kThrottleDisplayClockSetting = 0x100;

// GPM (GPU Performance Monitoring, Hopper and newer): activity over the
// interval between two GPM samples, not the instantaneous "a kernel ran".
struct GpmMetrics {
  std::optional<double> sm_active_percent;      // NVML_GPM_METRIC_SM_UTIL
  std::optional<double> sm_occupancy_percent;   // NVML_GPM_METRIC_SM_OCCUPANCY
  std::optional<double> tensor_active_percent;  // NVML_GPM_METRIC_ANY_TENSOR_UTIL
  std::optional<double> dram_bw_percent;        // NVML_GPM_METRIC_DRAM_BW_UTIL
  std::optional<double> pcie_tx_mib_per_s;
  std::optional<double> pcie_rx_mib_per_s;
  std::optional<double> nvlink_tx_mib_per_s;
  std::optional<double> nvlink_rx_mib_per_s;
};

struct GpuProcess {
  int32_t pid = 0;
  uint64_t used_bytes = 0;
};

struct GpuState {
  unsigned index = 0;
  std::string name;
  std::string uuid;
  std::string pci_bus_id;  // as NVML gives it: "00000000:3B:00.0"
  // Active NVLinks by the PCI bus id of their remote end (another GPU or an
  // NVSwitch), as NVML gives it; empty without NVLink.
  struct NvLinkPeer {
    std::string pci_bus_id;
    int links = 0;
  };
  std::vector<NvLinkPeer> nvlink_peers;
  std::optional<int> numa_node;  // NVML or /sys/bus/pci/devices/<id>/numa_node
  bool lost = false;             // NVML_ERROR_GPU_IS_LOST: fell off the bus
  std::string lost_reason;
  uint64_t memory_used_bytes = 0;
  uint64_t memory_total_bytes = 0;
  double utilization_gpu_percent = 0;     // share of time a kernel ran
  double utilization_memory_percent = 0;  // share of time memory was read/written
  std::optional<unsigned> sm_clock_mhz;
  std::optional<unsigned> sm_clock_max_mhz;
  std::optional<uint64_t> throttle_reasons;  // nvmlClocksThrottleReason* bits
  std::optional<unsigned> temperature_c;
  std::optional<double> power_w;
  std::optional<double> power_limit_w;
  std::optional<double> pcie_tx_kib_per_s;  // NVML's KB/s over its last 20 ms
  std::optional<double> pcie_rx_kib_per_s;
  std::optional<uint64_t> ecc_volatile_corrected;  // since the driver loaded
  std::optional<uint64_t> ecc_volatile_uncorrected;
  std::optional<uint64_t> ecc_aggregate_corrected;  // over the GPU's life
  std::optional<uint64_t> ecc_aggregate_uncorrected;
  std::optional<unsigned> retired_pages;  // both causes together
  std::optional<unsigned> remapped_rows;  // correctable + uncorrectable
  bool remap_pending = false;             // a row waits for a GPU reset to be remapped
  bool remap_failed = false;              // a row could not be remapped: no spare left
  std::optional<bool> persistence_mode;   // nvidia-smi -pm
  std::optional<bool> mig_mode;           // MIG enabled now
  std::optional<bool> mig_mode_pending;   // what the next GPU reset applies
  std::vector<GpuProcess> processes;
  std::optional<GpmMetrics> gpm;  // nullopt: no GPM on this GPU (or not yet two samples)
  std::string gpm_note;           // why not, in words, when gpm is absent

  double memory_used_fraction() const {
    return memory_total_bytes
               ? static_cast<double>(memory_used_bytes) / static_cast<double>(memory_total_bytes)
               : 0.0;
  }
};

// Every GPU of the host at one moment, or why there is none.
struct GpuObservation {
  bool available = false;     // an NVML library loaded and found at least one GPU
  std::string absent_reason;  // when not available: "no NVIDIA GPU found (...)"
  std::vector<GpuState> gpus;
};

// The throttle reasons that cost speed, decoded: "sw_power_cap", "hw_slowdown"...
std::vector<std::string> ThrottleReasonNames(uint64_t reasons);
// The subset that means the GPU is held back by power or heat (not idle,
// not an application clock setting).
uint64_t SlowdownReasons(uint64_t reasons);

}  // namespace stallscope
