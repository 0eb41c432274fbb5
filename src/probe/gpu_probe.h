// GpuProbe: every NVIDIA GPU of the host through NVML (gpu/nvml_loader.h),
// sampled into GpuState (sample/gpu.h): identity, memory, utilization,
// clocks and throttle reasons, temperature, power, PCIe rates, ECC and page
// retirement, per-process memory and, where the GPU supports it, GPM metrics
// over the interval since the previous Sample().
//
// Degrades, never dies: without the library, the driver or a GPU the probe
// is "not available" with one reason ("no NVIDIA GPU found (...)"); a field
// a GPU does not support stays empty; a GPU that answers
// NVML_ERROR_GPU_IS_LOST is marked lost (its name and UUID kept) and not
// asked again; the others go on. The NUMA node comes from NVML when the
// driver has nvmlDeviceGetNumaNodeId, else from
// /sys/bus/pci/devices/<bus id>/numa_node under the Root (fixture-testable).
// Under a non-live root that holds a capture's stallscope/nvml.json, the
// probe gives the captured samples in turn instead of asking NVML; while a
// capture is taken, it hands its samples to the capture.
// Owns the library and the GPM sample buffers. Not thread-safe.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/file.h"
#include "probe/gpu_capture.h"
#include "sample/gpu.h"

namespace stallscope {

class NvmlLibrary;

inline constexpr const char* kNoGpuLine = "no NVIDIA GPU found";

class GpuProbe {
 public:
  // library: empty for STALLSCOPE_NVML_LIBRARY or libnvidia-ml.so.1.
  static std::unique_ptr<GpuProbe> Open(const Root& sys_root, const std::string& library = "");
  ~GpuProbe();
  GpuProbe(const GpuProbe&) = delete;
  GpuProbe& operator=(const GpuProbe&) = delete;

  bool available() const { return available_; }
  const std::string& absent_reason() const { return absent_reason_; }
  size_t gpu_count() const { return devices_.size(); }

  // Every GPU now. GPM metrics cover the time since the previous call (the
  // first call only takes the GPM baseline sample).
  GpuObservation Sample();

 private:
  struct Device;
  GpuProbe() = default;
  GpuObservation SampleNvml();
  void ReadIdentity(Device& d);
  // The GPU's active NVLinks and their remote ends, into identity.nvlink_peers.
  void ReadNvLinks(Device& d);
  void ReadGpm(Device& d, GpuState& s);
  bool Check(int rc, Device& d, const char* call);

  // Under a root holding a capture's NVML answers (probe/gpu_capture.h).
  static std::unique_ptr<GpuProbe> OpenCaptured(const Root& root, const std::string& path);
  // Hands the samples taken so far to a capture being taken (core/read_log.h).
  void NoteForCapture() const;

  Root root_{"/"};
  std::unique_ptr<NvmlLibrary> nvml_;
  NvmlCapture captured_;  // read back: what Sample() returns in turn
  bool from_capture_ = false;
  size_t next_captured_ = 0;
  std::vector<GpuObservation> taken_;  // while a capture is taken
  std::vector<std::unique_ptr<Device>> devices_;
  bool available_ = false;
  std::string absent_reason_;
};

// The sysfs name of an NVML bus id: "00000000:3B:00.0" -> "0000:3b:00.0".
std::string SysfsPciAddress(const std::string& nvml_bus_id);

// pid -> command name (/proc/PID/comm under root) of every process that
// holds GPU memory, to name them in findings; gone processes are left out.
std::map<int, std::string> GpuProcessNames(const Root& root, const GpuObservation& gpus);

// GPUs that hold memory of one of `pids` first (the job's GPUs), the rest
// after, each group in index order. Pure.
std::vector<GpuState> JobGpusFirst(std::vector<GpuState> gpus, const std::set<int>& pids);

}  // namespace stallscope
