// GPU and link health: pure rules over what sysfs, NVML and the kernel log
// said about a host's hardware (sample/pcie.h, sample/gpu.h,
// sample/kernel_events.h). What a training log never shows and
// `nvidia-smi -q` / `dmesg` / `lspci -vv` do:
//
//  - io.pcie_degraded: a GPU's PCIe link trained below what the GPU and the
//    port above it can do (x8 of x16, 8 of 16 GT/s), so host-to-device
//    copies have a lower ceiling. GPUs slow their link when idle to save
//    power: a lower speed is judged only while NVML says the GPU works; a
//    narrower width is judged always.
//  - network.link_degraded: the same for a NIC or HCA.
//  - memory.gpu_ecc: uncorrectable ECC errors since the driver loaded
//    (critical) or over the GPU's life (warning); correctable ones that grew
//    while we watched (warning).
//  - memory.gpu_remap: a row waiting for a GPU reset to be remapped
//    (warning), a row that could not be remapped (critical).
//  - code.gpu_persistence_off: persistence mode off (info).
//  - code.gpu_xid: NVIDIA Xid errors in the kernel log, per GPU by bus id,
//    with what each number means.
//  - network.port_errors (kernel-log source): mlx5 / InfiniBand ports whose
//    link went down.
// Thresholds are named constants; their reasoning is in analyze/catalog.cc.
// Thread-safe (no state).
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "sample/finding.h"
#include "sample/gpu.h"
#include "sample/kernel_events.h"
#include "sample/pcie.h"
#include "sample/timeline.h"

namespace stallscope {

// io.pcie_degraded / network.link_degraded: critical when the trained link's
// ceiling is at most this share of what the link could carry, else warning.
inline constexpr double kPcieDegradedCriticalShare = 0.25;
// A GPU's link speed is judged only at or above this utilization.gpu.
inline constexpr double kPcieBusyUtilPercent = 10.0;

// The links of `links`, GPUs judged with what NVML says about them
// (utilization by bus id; `gpus` may be unavailable). Notes: the idle GPUs
// whose lower speed was not judged.
FindingsWithNotes CheckPcieLinks(const std::vector<PcieLink>& links, const GpuObservation& gpus);

// memory.gpu_ecc, memory.gpu_remap, code.gpu_persistence_off for every GPU
// of a moment; `corrected_growth`: (GPU index, corrected errors counted over
// the sampling interval).
FindingsWithNotes CheckGpuHealth(
    const GpuObservation& gpus, const std::vector<std::pair<unsigned, uint64_t>>& corrected_growth);

// code.gpu_xid: one finding per GPU (bus id) with Xids; `gpus` names them.
// `during`: "since boot" or "during the run", for the summary.
FindingsWithNotes CheckGpuXids(const std::vector<GpuXid>& xids, const GpuObservation& gpus,
                               std::string_view during);

// A run's kernel-log findings (Timeline xids and port_events, logged while
// the job ran): code.gpu_xid per GPU, "during the run", with the GPUs named
// from the run's GPU samples and the first and last time into the run; and
// network.port_errors from the link-down messages, which CheckRun joins to
// the one its port counters raise. A file that predates the table, of a run
// that had GPUs, gets a note.
FindingsWithNotes CheckRunKernelLog(const Timeline& timeline);

// network.port_errors from the kernel log's link-down messages, one finding
// for all ports (nullopt without any).
std::optional<Finding> PortLogFinding(const std::vector<PortLogEvent>& events,
                                      std::string_view during);

}  // namespace stallscope
