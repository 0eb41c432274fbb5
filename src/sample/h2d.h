// What `bench h2d` measured, as plain data: host-to-device and
// device-to-host copy bandwidth per GPU, size, host memory kind (pinned or
// pageable) and NUMA node, with the pinned/pageable and remote/local ratios
// and what they mean (H2dVerdict), and the thresholds that verdict uses.
// bench/cuda_h2d.h (RunH2dBench, JudgeH2d) builds it; render/bench_h2d.h
// renders it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sample/pcie.h"

namespace stallscope {

enum class HostMemory { kPinned, kPageable };
enum class CopyDirection { kHostToDevice, kDeviceToHost };
std::string_view HostMemoryName(HostMemory memory);           // "pinned", "pageable"
std::string_view CopyDirectionName(CopyDirection direction);  // "h2d", "d2h"

// pinned/pageable at the largest size above which pin_memory=True is the
// clear answer. Ours, no public source gives one: under 1.5x the copy is
// rarely what a step waits on.
inline constexpr double kPinnedClearWinRatio = 1.5;
// Under this the two are the same within run-to-run noise of copy timings.
inline constexpr double kPinnedNoWinRatio = 1.1;
// Remote-node pinned bandwidth under this share of local: bind the loader.
// Ours: cross-socket links (UPI/xGMI) commonly cost 10-40% of PCIe throughput.
inline constexpr double kNumaRemoteShare = 0.9;

struct H2dSample {
  uint64_t size_bytes = 0;
  CopyDirection direction = CopyDirection::kHostToDevice;
  HostMemory memory = HostMemory::kPinned;
  std::optional<int> numa_node;  // nullopt: not bound
  bool local = true;             // on the GPU's node (or unbound)
  int copies = 0;
  double seconds = 0;  // all timed copies, CUDA events
  double bytes_per_second = 0;
};

struct H2dVerdict {
  std::optional<double> pinned_over_pageable_h2d, pinned_over_pageable_d2h;
  std::optional<double> remote_over_local_h2d;  // pinned, largest size
  // Pinned local h2d at the largest size / the trained link's ceiling.
  std::optional<double> pinned_h2d_over_link_ceiling;
  std::vector<std::string> lines;  // what it means, in words
};

struct H2dGpu {
  int index = 0;
  std::string name, pci_bus_id;
  std::optional<int> numa_node;  // from sysfs; nullopt when -1 or unreadable
  std::optional<PcieLink> link;  // the GPU's PCIe link from sysfs, when it reads
  std::vector<H2dSample> samples;
  H2dVerdict verdict;
  std::vector<std::string> notes;
};

struct H2dResult {
  std::string runtime_library, runtime_version, driver_version;
  std::vector<uint64_t> sizes;
  std::vector<H2dGpu> gpus;
  std::vector<std::string> notes;
  double total_seconds = 0;
};

}  // namespace stallscope
