// The names of a GPU's clock-throttle reason bits (see gpu.h).
#include "sample/gpu.h"

#include <utility>

namespace stallscope {

std::vector<std::string> ThrottleReasonNames(uint64_t reasons) {
  static constexpr std::pair<uint64_t, const char*> kNames[] = {
      {kThrottleGpuIdle, "gpu_idle"},
      {kThrottleApplicationsClocksSetting, "applications_clocks_setting"},
      {kThrottleSwPowerCap, "sw_power_cap"},
      {kThrottleHwSlowdown, "hw_slowdown"},
      {kThrottleSyncBoost, "sync_boost"},
      {kThrottleSwThermalSlowdown, "sw_thermal_slowdown"},
      {kThrottleHwThermalSlowdown, "hw_thermal_slowdown"},
      {kThrottleHwPowerBrakeSlowdown, "hw_power_brake_slowdown"},
      {kThrottleDisplayClockSetting, "display_clock_setting"},
  };
  std::vector<std::string> names;
  for (const auto& [bit, name] : kNames) {
    if (reasons & bit) names.emplace_back(name);
  }
  return names;
}

uint64_t SlowdownReasons(uint64_t reasons) {
  return reasons & (kThrottleSwPowerCap | kThrottleHwSlowdown | kThrottleSwThermalSlowdown |
                    kThrottleHwThermalSlowdown | kThrottleHwPowerBrakeSlowdown);
}

}  // namespace stallscope
