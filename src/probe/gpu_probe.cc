#include "probe/gpu_probe.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "core/file.h"
#include "core/read_log.h"
#include "core/text.h"
#include "probe/nvml_loader.h"

namespace stallscope {

struct GpuProbe::Device {
  nvmlDevice_t handle = nullptr;
  GpuState identity;  // index, name, uuid, bus id, NUMA node
  bool lost = false;
  std::string lost_reason;
  bool gpm_supported = false;
  std::string gpm_note;
  nvmlGpmSample_t gpm_previous = nullptr;
  nvmlGpmSample_t gpm_current = nullptr;
  bool gpm_have_previous = false;
};

// The reason bits sample/gpu.h names are NVML's own.
static_assert(kThrottleGpuIdle == nvmlClocksThrottleReasonGpuIdle);
static_assert(kThrottleApplicationsClocksSetting ==
              nvmlClocksThrottleReasonApplicationsClocksSetting);
static_assert(kThrottleSwPowerCap == nvmlClocksThrottleReasonSwPowerCap);
static_assert(kThrottleHwSlowdown == nvmlClocksThrottleReasonHwSlowdown);
static_assert(kThrottleSyncBoost == nvmlClocksThrottleReasonSyncBoost);
static_assert(kThrottleSwThermalSlowdown == nvmlClocksThrottleReasonSwThermalSlowdown);
static_assert(kThrottleHwThermalSlowdown == nvmlClocksThrottleReasonHwThermalSlowdown);
static_assert(kThrottleHwPowerBrakeSlowdown == nvmlClocksThrottleReasonHwPowerBrakeSlowdown);
static_assert(kThrottleDisplayClockSetting == nvmlClocksThrottleReasonDisplayClockSetting);

std::string SysfsPciAddress(const std::string& nvml_bus_id) {
  std::string id;
  for (char c : nvml_bus_id) id += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  // NVML pads the domain to 8 hex digits; sysfs uses 4.
  size_t colon = id.find(':');
  if (colon == 8 && id.compare(0, 4, "0000") == 0) id.erase(0, 4);
  return id;
}

std::map<int, std::string> GpuProcessNames(const Root& root, const GpuObservation& gpus) {
  std::map<int, std::string> names;
  for (const GpuState& g : gpus.gpus) {
    for (const GpuProcess& p : g.processes) {
      if (names.count(p.pid)) continue;
      if (Result<std::string> comm = ReadAttribute(root.Path(fmt::format("/proc/{}/comm", p.pid)));
          comm.ok()) {
        names[p.pid] = *comm;
      }
    }
  }
  return names;
}

std::vector<GpuState> JobGpusFirst(std::vector<GpuState> gpus, const std::set<int>& pids) {
  auto used_by_job = [&](const GpuState& g) {
    return std::any_of(g.processes.begin(), g.processes.end(),
                       [&](const GpuProcess& p) { return pids.count(p.pid) > 0; });
  };
  std::stable_sort(gpus.begin(), gpus.end(), [&](const GpuState& a, const GpuState& b) {
    bool ja = used_by_job(a), jb = used_by_job(b);
    if (ja != jb) return ja;
    return a.index < b.index;
  });
  return gpus;
}

std::unique_ptr<GpuProbe> GpuProbe::OpenCaptured(const Root& root, const std::string& path) {
  std::unique_ptr<GpuProbe> probe(new GpuProbe());
  probe->root_ = root;
  probe->from_capture_ = true;
  Result<std::string> text = ReadFile(path);
  Result<NvmlCapture> capture =
      text.ok() ? ParseNvmlCapture(*text, path) : Result<NvmlCapture>(text.status());
  if (!capture.ok()) {
    probe->absent_reason_ = fmt::format("{} ({})", kNoGpuLine, capture.status().message());
    return probe;
  }
  probe->captured_ = std::move(*capture);
  probe->available_ = probe->captured_.available && !probe->captured_.samples.empty();
  probe->absent_reason_ = probe->captured_.absent_reason;
  if (!probe->available_ && probe->absent_reason_.empty()) {
    probe->absent_reason_ = fmt::format("{} (the capture holds no GPU sample)", kNoGpuLine);
  }
  return probe;
}

void GpuProbe::NoteForCapture() const {
  if (from_capture_ || CurrentReadLog() == nullptr) return;
  NoteWrittenForCapture(kNvmlCapturePath,
                        NvmlCaptureToJson(NvmlCapture{available_, absent_reason_, taken_}));
}

std::unique_ptr<GpuProbe> GpuProbe::Open(const Root& sys_root, const std::string& library) {
  if (const std::string path = sys_root.Path(kNvmlCapturePath);
      !sys_root.IsLive() && ::access(path.c_str(), F_OK) == 0) {
    return OpenCaptured(sys_root, path);
  }
  std::unique_ptr<GpuProbe> probe(new GpuProbe());
  probe->root_ = sys_root;
  Result<std::unique_ptr<NvmlLibrary>> lib = NvmlLibrary::Load(library);
  if (!lib.ok()) {
    probe->absent_reason_ = fmt::format("{} ({})", kNoGpuLine, lib.status().message());
    probe->NoteForCapture();
    return probe;
  }
  probe->nvml_ = std::move(*lib);
  NvmlLibrary& nvml = *probe->nvml_;
  unsigned count = 0;
  if (nvmlReturn_t rc = nvml.DeviceGetCount(&count); rc != NVML_SUCCESS || count == 0) {
    probe->absent_reason_ =
        rc != NVML_SUCCESS
            ? fmt::format("{} (nvmlDeviceGetCount_v2: {})", kNoGpuLine, nvml.ErrorText(rc))
            : fmt::format("{} (NVML {} counts 0 GPUs)", kNoGpuLine, nvml.path());
    probe->NoteForCapture();
    return probe;
  }
  for (unsigned i = 0; i < count; ++i) {
    auto d = std::make_unique<Device>();
    d->identity.index = i;
    if (nvmlReturn_t rc = nvml.DeviceGetHandleByIndex(i, &d->handle); rc != NVML_SUCCESS) {
      d->lost = true;  // not reachable: reported like a lost GPU, with the reason
      d->lost_reason = fmt::format("nvmlDeviceGetHandleByIndex_v2: {}", nvml.ErrorText(rc));
    } else {
      probe->ReadIdentity(*d);
    }
    probe->devices_.push_back(std::move(d));
  }
  probe->available_ = true;
  return probe;
}

GpuProbe::~GpuProbe() {
  if (!nvml_) return;
  for (auto& d : devices_) {
    if (d->gpm_previous) nvml_->GpmSampleFree(d->gpm_previous);
    if (d->gpm_current) nvml_->GpmSampleFree(d->gpm_current);
  }
}

// True when rc is success; a lost GPU is marked so and never asked again.
bool GpuProbe::Check(int rc, Device& d, const char* call) {
  if (rc == NVML_SUCCESS) return true;
  if (rc == NVML_ERROR_GPU_IS_LOST && !d.lost) {
    d.lost = true;
    d.lost_reason = fmt::format("{}: {}", call, nvml_->ErrorText(rc));
  }
  return false;
}

void GpuProbe::ReadNvLinks(Device& d) {
  NvmlLibrary& nvml = *nvml_;
  if (!nvml.DeviceGetNvLinkState || !nvml.DeviceGetNvLinkRemotePciInfo) return;
  std::vector<GpuState::NvLinkPeer>& peers = d.identity.nvlink_peers;
  // A GPU without NVLink answers NOT_SUPPORTED on link 0; a link that is
  // absent or down is skipped, not a failure of the GPU.
  for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
    nvmlEnableState_t active = NVML_FEATURE_DISABLED;
    if (nvml.DeviceGetNvLinkState(d.handle, link, &active) != NVML_SUCCESS) continue;
    if (active != NVML_FEATURE_ENABLED) continue;
    nvmlPciInfo_t pci = {};
    if (nvml.DeviceGetNvLinkRemotePciInfo(d.handle, link, &pci) != NVML_SUCCESS) continue;
    std::string bus(pci.busId, strnlen(pci.busId, sizeof pci.busId));
    if (bus.empty()) continue;
    auto same = [&](const GpuState::NvLinkPeer& p) { return p.pci_bus_id == bus; };
    auto it = std::find_if(peers.begin(), peers.end(), same);
    if (it == peers.end()) it = peers.insert(peers.end(), {bus, 0});
    ++it->links;
  }
}

void GpuProbe::ReadIdentity(Device& d) {
  NvmlLibrary& nvml = *nvml_;
  GpuState& g = d.identity;
  char text[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
  if (Check(nvml.DeviceGetName(d.handle, text, sizeof text), d, "nvmlDeviceGetName")) {
    g.name.assign(text, strnlen(text, sizeof text));
  }
  if (nvml.DeviceGetUUID) {
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    if (Check(nvml.DeviceGetUUID(d.handle, uuid, sizeof uuid), d, "nvmlDeviceGetUUID")) {
      g.uuid.assign(uuid, strnlen(uuid, sizeof uuid));
    }
  }
  if (nvml.DeviceGetPciInfo) {
    nvmlPciInfo_t pci = {};
    if (Check(nvml.DeviceGetPciInfo(d.handle, &pci), d, "nvmlDeviceGetPciInfo_v3")) {
      g.pci_bus_id.assign(pci.busId, strnlen(pci.busId, sizeof pci.busId));
    }
  }
  ReadNvLinks(d);
  unsigned node = 0;
  if (nvml.DeviceGetNumaNodeId &&
      Check(nvml.DeviceGetNumaNodeId(d.handle, &node), d, "nvmlDeviceGetNumaNodeId")) {
    g.numa_node = static_cast<int>(node);
  } else if (!g.pci_bus_id.empty()) {
    std::string path =
        root_.Path("/sys/bus/pci/devices/" + SysfsPciAddress(g.pci_bus_id) + "/numa_node");
    if (Result<std::string> text = ReadAttribute(path); text.ok()) {
      if (std::optional<int64_t> n = ParseInt(*text); n && *n >= 0)
        g.numa_node = static_cast<int>(*n);
    }
  }
  if (!nvml.HasGpm()) {
    d.gpm_note = "the NVML library has no GPM functions (driver older than R525)";
    return;
  }
  nvmlGpmSupport_t support = {};
  support.version = NVML_GPM_SUPPORT_VERSION;
  nvmlReturn_t rc = nvml.GpmQueryDeviceSupport(d.handle, &support);
  if (!Check(rc, d, "nvmlGpmQueryDeviceSupport")) {
    d.gpm_note = fmt::format("nvmlGpmQueryDeviceSupport: {}", nvml.ErrorText(rc));
  } else if (!support.isSupportedDevice) {
    d.gpm_note = "GPM not supported on this GPU (Hopper or newer has it)";
  } else if (nvml.GpmSampleAlloc(&d.gpm_previous) != NVML_SUCCESS ||
             nvml.GpmSampleAlloc(&d.gpm_current) != NVML_SUCCESS) {
    d.gpm_note = "nvmlGpmSampleAlloc failed";
  } else {
    d.gpm_supported = true;
  }
}

void GpuProbe::ReadGpm(Device& d, GpuState& s) {
  NvmlLibrary& nvml = *nvml_;
  if (!d.gpm_supported) {
    s.gpm_note = d.gpm_note;
    return;
  }
  nvmlReturn_t rc = nvml.GpmSampleGet(d.handle, d.gpm_current);
  if (!Check(rc, d, "nvmlGpmSampleGet")) {
    s.gpm_note = fmt::format("nvmlGpmSampleGet: {}", nvml.ErrorText(rc));
    d.gpm_have_previous = false;
    return;
  }
  if (!d.gpm_have_previous) {
    s.gpm_note = "GPM needs two samples; this was the first";
  } else {
    static constexpr unsigned kIds[STALLSCOPE_GPM_METRICS] = {
        NVML_GPM_METRIC_SM_UTIL,
        NVML_GPM_METRIC_SM_OCCUPANCY,
        NVML_GPM_METRIC_ANY_TENSOR_UTIL,
        NVML_GPM_METRIC_DRAM_BW_UTIL,
        NVML_GPM_METRIC_PCIE_TX_PER_SEC,
        NVML_GPM_METRIC_PCIE_RX_PER_SEC,
        NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC,
        NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC};
    nvmlGpmMetricsGet_t get = {};
    get.version = NVML_GPM_METRICS_GET_VERSION;
    get.numMetrics = STALLSCOPE_GPM_METRICS;
    get.sample1 = d.gpm_previous;
    get.sample2 = d.gpm_current;
    for (unsigned i = 0; i < STALLSCOPE_GPM_METRICS; ++i) get.metrics[i].metricId = kIds[i];
    rc = nvml.GpmMetricsGet(&get);
    if (!Check(rc, d, "nvmlGpmMetricsGet")) {
      s.gpm_note = fmt::format("nvmlGpmMetricsGet: {}", nvml.ErrorText(rc));
    } else {
      GpmMetrics m;
      std::optional<double>* into[STALLSCOPE_GPM_METRICS] = {
          &m.sm_active_percent,   &m.sm_occupancy_percent, &m.tensor_active_percent,
          &m.dram_bw_percent,     &m.pcie_tx_mib_per_s,    &m.pcie_rx_mib_per_s,
          &m.nvlink_tx_mib_per_s, &m.nvlink_rx_mib_per_s};
      for (unsigned i = 0; i < STALLSCOPE_GPM_METRICS; ++i) {
        if (get.metrics[i].nvmlReturn == NVML_SUCCESS) *into[i] = get.metrics[i].value;
      }
      s.gpm = m;
    }
  }
  std::swap(d.gpm_previous, d.gpm_current);
  d.gpm_have_previous = true;
}

GpuObservation GpuProbe::Sample() {
  if (from_capture_) {
    if (captured_.samples.empty()) return GpuObservation{false, absent_reason_, {}};
    size_t i = std::min(next_captured_++, captured_.samples.size() - 1);
    return captured_.samples[i];
  }
  GpuObservation out = SampleNvml();
  if (CurrentReadLog() != nullptr) {
    taken_.push_back(out);
    NoteForCapture();
  }
  return out;
}

GpuObservation GpuProbe::SampleNvml() {
  GpuObservation out;
  out.available = available_;
  out.absent_reason = absent_reason_;
  for (auto& dp : devices_) {
    Device& d = *dp;
    GpuState s = d.identity;
    if (!d.lost) {
      NvmlLibrary& nvml = *nvml_;
      nvmlMemory_t mem = {};
      if (Check(nvml.DeviceGetMemoryInfo(d.handle, &mem), d, "nvmlDeviceGetMemoryInfo")) {
        s.memory_used_bytes = mem.used;
        s.memory_total_bytes = mem.total;
      }
      nvmlUtilization_t util = {};
      if (!d.lost && Check(nvml.DeviceGetUtilizationRates(d.handle, &util), d,
                           "nvmlDeviceGetUtilizationRates")) {
        s.utilization_gpu_percent = util.gpu;
        s.utilization_memory_percent = util.memory;
      }
      unsigned v = 0;
      if (!d.lost && nvml.DeviceGetClockInfo &&
          Check(nvml.DeviceGetClockInfo(d.handle, NVML_CLOCK_SM, &v), d, "nvmlDeviceGetClockInfo"))
        s.sm_clock_mhz = v;
      if (!d.lost && nvml.DeviceGetMaxClockInfo &&
          Check(nvml.DeviceGetMaxClockInfo(d.handle, NVML_CLOCK_SM, &v), d,
                "nvmlDeviceGetMaxClockInfo"))
        s.sm_clock_max_mhz = v;
      unsigned long long reasons = 0;
      if (!d.lost && nvml.DeviceGetThrottleReasons &&
          Check(nvml.DeviceGetThrottleReasons(d.handle, &reasons), d,
                "nvmlDeviceGetCurrentClocksEventReasons"))
        s.throttle_reasons = reasons;
      if (!d.lost && nvml.DeviceGetTemperature &&
          Check(nvml.DeviceGetTemperature(d.handle, NVML_TEMPERATURE_GPU, &v), d,
                "nvmlDeviceGetTemperature"))
        s.temperature_c = v;
      if (!d.lost && nvml.DeviceGetPowerUsage &&
          Check(nvml.DeviceGetPowerUsage(d.handle, &v), d, "nvmlDeviceGetPowerUsage"))
        s.power_w = v / 1000.0;  // milliwatts
      if (!d.lost && nvml.DeviceGetEnforcedPowerLimit &&
          Check(nvml.DeviceGetEnforcedPowerLimit(d.handle, &v), d,
                "nvmlDeviceGetEnforcedPowerLimit"))
        s.power_limit_w = v / 1000.0;
      if (!d.lost && nvml.DeviceGetPcieThroughput &&
          Check(nvml.DeviceGetPcieThroughput(d.handle, NVML_PCIE_UTIL_TX_BYTES, &v), d,
                "nvmlDeviceGetPcieThroughput"))
        s.pcie_tx_kib_per_s = v;
      if (!d.lost && nvml.DeviceGetPcieThroughput &&
          Check(nvml.DeviceGetPcieThroughput(d.handle, NVML_PCIE_UTIL_RX_BYTES, &v), d,
                "nvmlDeviceGetPcieThroughput"))
        s.pcie_rx_kib_per_s = v;
      // Volatile counts are since the driver loaded, aggregate ones the
      // GPU's lifetime; corrected and uncorrected for each.
      auto ecc_count = [&](int error_type, int counter) -> std::optional<uint64_t> {
        unsigned long long ecc = 0;
        if (d.lost || !nvml.DeviceGetTotalEccErrors ||
            !Check(nvml.DeviceGetTotalEccErrors(d.handle, error_type, counter, &ecc), d,
                   "nvmlDeviceGetTotalEccErrors"))
          return std::nullopt;
        return ecc;
      };
      s.ecc_volatile_corrected = ecc_count(NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC);
      s.ecc_volatile_uncorrected = ecc_count(NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC);
      s.ecc_aggregate_corrected = ecc_count(NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC);
      s.ecc_aggregate_uncorrected =
          ecc_count(NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC);
      if (!d.lost && nvml.DeviceGetRetiredPages) {
        unsigned total = 0;
        bool any = false;
        for (int cause : {NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS,
                          NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR}) {
          unsigned n = 0;  // 0 with no buffer: NVML answers with the count
          nvmlReturn_t rc = nvml.DeviceGetRetiredPages(d.handle, cause, &n, nullptr);
          if (rc == NVML_SUCCESS || rc == NVML_ERROR_INSUFFICIENT_SIZE) {
            total += n;
            any = true;
          } else {
            Check(rc, d, "nvmlDeviceGetRetiredPages");
          }
        }
        if (any) s.retired_pages = total;
      }
      if (!d.lost && nvml.DeviceGetRemappedRows) {
        unsigned corr = 0, unc = 0, pending = 0, failed = 0;
        if (Check(nvml.DeviceGetRemappedRows(d.handle, &corr, &unc, &pending, &failed), d,
                  "nvmlDeviceGetRemappedRows")) {
          s.remapped_rows = corr + unc;
          s.remap_pending = pending != 0;
          s.remap_failed = failed != 0;
        }
      }
      int mode = 0;
      if (!d.lost && nvml.DeviceGetPersistenceMode &&
          Check(nvml.DeviceGetPersistenceMode(d.handle, &mode), d, "nvmlDeviceGetPersistenceMode"))
        s.persistence_mode = mode == NVML_FEATURE_ENABLED;
      unsigned mig_now = 0, mig_next = 0;
      if (!d.lost && nvml.DeviceGetMigMode &&
          Check(nvml.DeviceGetMigMode(d.handle, &mig_now, &mig_next), d, "nvmlDeviceGetMigMode")) {
        s.mig_mode = mig_now == NVML_FEATURE_ENABLED;
        s.mig_mode_pending = mig_next == NVML_FEATURE_ENABLED;
      }
      if (!d.lost) {
        // _v2 (24-byte entries), else v1 (16-byte); never _v3 (see nvml_api.h).
        for (int attempt = 0; attempt < 3; ++attempt) {
          unsigned n = 0;
          nvmlReturn_t rc = NVML_ERROR_NOT_SUPPORTED;
          if (nvml.DeviceGetComputeProcessesV2) {
            rc = nvml.DeviceGetComputeProcessesV2(d.handle, &n, nullptr);
            if (rc != NVML_SUCCESS && rc != NVML_ERROR_INSUFFICIENT_SIZE) break;
            std::vector<nvmlProcessInfo_v2_t> infos(n + 4);
            n = static_cast<unsigned>(infos.size());
            rc = nvml.DeviceGetComputeProcessesV2(d.handle, &n, infos.data());
            if (rc == NVML_ERROR_INSUFFICIENT_SIZE) continue;  // a process started meanwhile
            if (rc == NVML_SUCCESS) {
              for (unsigned i = 0; i < n && i < infos.size(); ++i)
                s.processes.push_back({static_cast<int32_t>(infos[i].pid), infos[i].usedGpuMemory});
            }
          } else if (nvml.DeviceGetComputeProcessesV1) {
            rc = nvml.DeviceGetComputeProcessesV1(d.handle, &n, nullptr);
            if (rc != NVML_SUCCESS && rc != NVML_ERROR_INSUFFICIENT_SIZE) break;
            std::vector<nvmlProcessInfo_v1_t> infos(n + 4);
            n = static_cast<unsigned>(infos.size());
            rc = nvml.DeviceGetComputeProcessesV1(d.handle, &n, infos.data());
            if (rc == NVML_ERROR_INSUFFICIENT_SIZE) continue;
            if (rc == NVML_SUCCESS) {
              for (unsigned i = 0; i < n && i < infos.size(); ++i)
                s.processes.push_back({static_cast<int32_t>(infos[i].pid), infos[i].usedGpuMemory});
            }
          }
          Check(rc, d, "nvmlDeviceGetComputeRunningProcesses");
          break;
        }
      }
      if (!d.lost) ReadGpm(d, s);
    }
    s.lost = d.lost;
    s.lost_reason = d.lost_reason;
    if (s.lost) {
      // Nothing a lost GPU said in this sample is trusted.
      GpuState kept = d.identity;
      kept.lost = true;
      kept.lost_reason = d.lost_reason;
      s = std::move(kept);
    }
    out.gpus.push_back(std::move(s));
  }
  return out;
}

}  // namespace stallscope
