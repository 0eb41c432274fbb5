#include "analyze/host/gpu_rules.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/units.h"

namespace stallscope {
namespace {

std::string GpuLabel(const GpuState& g) {
  return fmt::format("GPU {} ({}{}{})", g.index, g.name.empty() ? "unnamed" : g.name,
                     g.uuid.empty() ? "" : ", ", g.uuid);
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ",") + n;
  return out;
}

void AddThrottleSample(GpuJudged& j, const GpuState& g) {
  const uint64_t reasons = g.throttle_reasons.value_or(0);
  if (reasons & 0x1) return;  // nvmlClocksThrottleReasonGpuIdle: nothing to slow down
  ++j.busy_samples;
  const uint64_t slow = SlowdownReasons(reasons);
  if (!slow) return;
  ++j.throttled_samples;
  j.throttle_reasons |= slow;
  // Running mean of the SM clock while throttled.
  j.throttled_clock_mhz += (g.sm_clock_mhz.value_or(0) - j.throttled_clock_mhz) /
                           static_cast<double>(j.throttled_samples);
}

Finding UtilMisleading(const GpuJudged& j) {
  const GpuState& g = j.gpu;
  const double sm = *g.gpm->sm_active_percent;
  Finding f;
  f.id = "code.util_misleading";
  f.layer = Layer::kCode;
  f.severity =
      sm < kUtilMisleadingCriticalSmActivePercent ? Severity::kCritical : Severity::kWarning;
  f.summary = fmt::format(
      "{}: utilization {:.0f}% but the SMs were active only {:.0f}% of the time (GPM): a kernel "
      "was running, mostly on few SMs or waiting",
      GpuLabel(g), g.utilization_gpu_percent, sm);
  f.evidence = {{"gpu_index", static_cast<int64_t>(g.index)},
                {"utilization_gpu_percent", g.utilization_gpu_percent},
                {"gpm_sm_active_percent", sm}};
  if (g.gpm->sm_occupancy_percent)
    f.evidence.push_back({"gpm_sm_occupancy_percent", *g.gpm->sm_occupancy_percent});
  if (g.gpm->tensor_active_percent)
    f.evidence.push_back({"gpm_tensor_active_percent", *g.gpm->tensor_active_percent});
  if (g.gpm->dram_bw_percent)
    f.evidence.push_back({"gpm_dram_bw_percent", *g.gpm->dram_bw_percent});
  f.evidence.push_back({"samples", static_cast<int64_t>(j.gpm_samples)});
  f.next =
      "profile a few steps: nsys profile --trace=cuda,nvtx -d 30 <train cmd> (small kernels, "
      "launch gaps, host syncs); raise the batch size or fuse kernels (torch.compile); "
      "nvidia-smi dmon -s pucvmet to watch it live";
  // While a kernel "ran", this share of the time the SMs were idle.
  f.impact = Impact{std::clamp(1.0 - sm / std::max(g.utilization_gpu_percent, 1.0), 0.0, 1.0),
                    std::nullopt,
                    "1 - GPM SM activity / utilization.gpu: the share of 'busy' GPU time the SMs "
                    "sat idle; an upper bound on what fuller kernels could win"};
  return f;
}

Finding NearFull(const GpuJudged& j, const std::map<int, std::string>& names) {
  const GpuState& g = j.gpu;
  const double fraction = g.memory_used_fraction();
  Finding f;
  f.id = "memory.gpu_near_full";
  f.layer = Layer::kMemory;
  f.severity = fraction >= kGpuNearFullCriticalFraction ? Severity::kCritical : Severity::kWarning;
  std::vector<GpuProcess> holders = g.processes;
  std::sort(holders.begin(), holders.end(),
            [](const GpuProcess& a, const GpuProcess& b) { return a.used_bytes > b.used_bytes; });
  std::string who;
  for (size_t i = 0; i < holders.size() && i < 3; ++i) {
    auto name = names.find(holders[i].pid);
    who += fmt::format("{}{} (pid {}) {}", who.empty() ? "" : ", ",
                       name != names.end() ? name->second : "?", holders[i].pid,
                       FormatBytes(holders[i].used_bytes));
  }
  f.summary = fmt::format("{}: memory {:.1f}% full ({} of {}){}", GpuLabel(g), 100.0 * fraction,
                          FormatBytes(g.memory_used_bytes), FormatBytes(g.memory_total_bytes),
                          who.empty() ? "" : "; held by " + who);
  f.evidence = {{"gpu_index", static_cast<int64_t>(g.index)},
                {"memory_used_bytes", static_cast<int64_t>(g.memory_used_bytes)},
                {"memory_total_bytes", static_cast<int64_t>(g.memory_total_bytes)},
                {"memory_used_fraction", fraction},
                {"processes", static_cast<int64_t>(holders.size())}};
  if (!holders.empty()) {
    f.evidence.push_back({"top_process_pid", static_cast<int64_t>(holders[0].pid)});
    f.evidence.push_back({"top_process_bytes", static_cast<int64_t>(holders[0].used_bytes)});
  }
  f.next =
      "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv; in the job "
      "print torch.cuda.memory_summary(); lower the batch size or use activation checkpointing "
      "before the next allocation fails (CUDA out of memory)";
  return f;
}

Finding Throttled(const GpuJudged& j) {
  const GpuState& g = j.gpu;
  const double max_mhz = g.sm_clock_max_mhz.value_or(0);
  const double clock = j.throttled_clock_mhz;
  const double clock_fraction = max_mhz > 0 ? clock / max_mhz : 1.0;
  const double share =
      j.busy_samples ? static_cast<double>(j.throttled_samples) / j.busy_samples : 0.0;
  const uint64_t hardware = j.throttle_reasons & (0x8 | 0x40 | 0x80);  // hw, hw thermal, brake
  Finding f;
  f.id = "code.gpu_throttled";
  f.layer = Layer::kCode;
  f.severity = hardware || clock_fraction < kThrottledCriticalClockFraction ? Severity::kCritical
                                                                            : Severity::kWarning;
  std::string reasons = JoinNames(ThrottleReasonNames(j.throttle_reasons));
  f.summary = fmt::format(
      "{}: clocks held back by {} in {:.0f}% of busy samples; SM clock {:.0f} "
      "of {:.0f} MHz",
      GpuLabel(g), reasons, 100.0 * share, clock, max_mhz);
  f.evidence = {{"gpu_index", static_cast<int64_t>(g.index)},
                {"throttle_reasons", reasons},
                {"throttled_sample_fraction", share},
                {"sm_clock_mhz", clock},
                {"sm_clock_max_mhz", max_mhz}};
  if (g.temperature_c)
    f.evidence.push_back({"temperature_c", static_cast<int64_t>(*g.temperature_c)});
  if (g.power_w) f.evidence.push_back({"power_w", *g.power_w});
  if (g.power_limit_w) f.evidence.push_back({"power_limit_w", *g.power_limit_w});
  f.next =
      "nvidia-smi -q -d PERFORMANCE,POWER,TEMPERATURE (the active reasons and limits); "
      "nvidia-smi dmon -s pucvmet while the job runs; check cooling and the power cap "
      "(nvidia-smi -q -d POWER: enforced vs default limit)";
  if (max_mhz > 0 && clock_fraction < 1.0) {
    f.impact = Impact{std::clamp((1.0 - clock_fraction) * share, 0.0, 1.0), std::nullopt,
                      "(1 - SM clock / max) x share of busy samples throttled: compute-bound "
                      "kernels slow in proportion to the clock"};
  }
  return f;
}

}  // namespace

GpuJudged JudgeMoment(const GpuState& gpu) {
  GpuJudged j;
  j.gpu = gpu;
  j.gpm_samples = gpu.gpm && gpu.gpm->sm_active_percent ? 1 : 0;
  AddThrottleSample(j, gpu);
  return j;
}

std::vector<GpuJudged> SummarizeRunGpus(const std::vector<GpuPoint>& points) {
  std::map<unsigned, GpuJudged> by_index;
  std::map<unsigned, double> util_sum, sm_sum, occ_sum, tensor_sum, dram_sum;
  std::map<unsigned, int> gpm_occ_n, gpm_tensor_n, gpm_dram_n;
  for (const GpuPoint& p : points) {
    const GpuState& g = p.gpu;
    auto [it, fresh] = by_index.try_emplace(g.index);
    GpuJudged& j = it->second;
    if (fresh) {
      j.gpu = g;
      j.samples = 0;
      j.gpu.gpm.reset();
    }
    if (g.lost) {
      j.gpu.lost = true;
      j.gpu.lost_reason = g.lost_reason;
      continue;
    }
    ++j.samples;
    util_sum[g.index] += g.utilization_gpu_percent;
    // Memory: the peak sample, with the processes that held it then.
    if (fresh || g.memory_used_bytes >= j.gpu.memory_used_bytes) {
      j.gpu.memory_used_bytes = g.memory_used_bytes;
      j.gpu.memory_total_bytes = g.memory_total_bytes;
      j.gpu.processes = g.processes;
    }
    if (g.sm_clock_max_mhz) j.gpu.sm_clock_max_mhz = g.sm_clock_max_mhz;
    if (g.temperature_c)
      j.gpu.temperature_c = std::max(j.gpu.temperature_c.value_or(0), *g.temperature_c);
    if (g.power_w) j.gpu.power_w = std::max(j.gpu.power_w.value_or(0), *g.power_w);
    if (g.power_limit_w) j.gpu.power_limit_w = g.power_limit_w;
    AddThrottleSample(j, g);
    if (g.gpm && g.gpm->sm_active_percent) {
      ++j.gpm_samples;
      sm_sum[g.index] += *g.gpm->sm_active_percent;
      if (g.gpm->sm_occupancy_percent)
        occ_sum[g.index] += *g.gpm->sm_occupancy_percent, ++gpm_occ_n[g.index];
      if (g.gpm->tensor_active_percent)
        tensor_sum[g.index] += *g.gpm->tensor_active_percent, ++gpm_tensor_n[g.index];
      if (g.gpm->dram_bw_percent)
        dram_sum[g.index] += *g.gpm->dram_bw_percent, ++gpm_dram_n[g.index];
    } else if (!g.gpm_note.empty()) {
      j.gpu.gpm_note = g.gpm_note;
    }
  }
  std::vector<GpuJudged> out;
  for (auto& [index, j] : by_index) {
    if (j.samples > 0) j.gpu.utilization_gpu_percent = util_sum[index] / j.samples;
    if (j.gpm_samples > 0) {
      GpmMetrics m;
      m.sm_active_percent = sm_sum[index] / j.gpm_samples;
      if (gpm_occ_n[index]) m.sm_occupancy_percent = occ_sum[index] / gpm_occ_n[index];
      if (gpm_tensor_n[index]) m.tensor_active_percent = tensor_sum[index] / gpm_tensor_n[index];
      if (gpm_dram_n[index]) m.dram_bw_percent = dram_sum[index] / gpm_dram_n[index];
      j.gpu.gpm = m;
    }
    out.push_back(std::move(j));
  }
  return out;
}

FindingsWithNotes CheckGpus(const std::vector<GpuJudged>& gpus,
                            const std::map<int, std::string>& process_names) {
  FindingsWithNotes out;
  std::vector<Finding>& findings = out.findings;
  std::vector<std::string>* notes = &out.notes;
  for (const GpuJudged& j : gpus) {
    const GpuState& g = j.gpu;
    if (g.lost) {
      if (notes) {
        notes->push_back(
            fmt::format("{} was lost ({}): it stopped answering NVML; check dmesg "
                        "for Xid errors and nvidia-smi -q -i {}",
                        GpuLabel(g), g.lost_reason, g.index));
      }
      if (j.samples == 0) continue;
    }
    if (g.utilization_gpu_percent >= kUtilMisleadingUtilPercent) {
      if (g.gpm && g.gpm->sm_active_percent) {
        if (*g.gpm->sm_active_percent < kUtilMisleadingSmActivePercent) {
          findings.push_back(UtilMisleading(j));
        }
      } else if (notes) {
        notes->push_back(fmt::format(
            "code.util_misleading not judged on {}: utilization {:.0f}% but no GPM SM activity "
            "to compare ({})",
            GpuLabel(g), g.utilization_gpu_percent,
            g.gpm_note.empty() ? "GPM unavailable" : g.gpm_note));
      }
    }
    if (g.memory_total_bytes > 0 && g.memory_used_fraction() >= kGpuNearFullWarningFraction) {
      findings.push_back(NearFull(j, process_names));
    }
    const double share =
        j.busy_samples ? static_cast<double>(j.throttled_samples) / j.busy_samples : 0.0;
    if (j.throttled_samples > 0 && (j.samples <= 1 || share >= kThrottledRunFraction)) {
      findings.push_back(Throttled(j));
    }
  }
  return out;
}

FindingsWithNotes CheckGpuObservation(const GpuObservation& observation,
                                      const std::map<int, std::string>& process_names) {
  std::vector<GpuJudged> judged;
  for (const GpuState& g : observation.gpus) judged.push_back(JudgeMoment(g));
  return CheckGpus(judged, process_names);
}

FindingsWithNotes CheckRunGpus(const Timeline& timeline) {
  std::map<int, std::string> names;
  for (const ProcessPoint& p : timeline.processes) names[p.pid] = p.comm;
  return CheckGpus(SummarizeRunGpus(timeline.gpus), names);
}

}  // namespace stallscope
