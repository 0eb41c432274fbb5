#include "render/ab.h"

#include <fmt/format.h>

namespace stallscope {

std::string RenderAbTable(const AbRunFigures& a, const AbRunFigures& b, const std::string& change) {
  auto workers = [](const AbRunFigures& r) {
    return r.loader_workers ? std::to_string(*r.loader_workers) : std::string("-");
  };
  std::string out =
      fmt::format("{:<22} {:>12} {:>12}   degraded: {}\n", "", "as is", "degraded", change);
  out += fmt::format("{:<22} {:>12} {:>12}\n", "steps", a.steps, b.steps);
  out += fmt::format("{:<22} {:>12.2f} {:>12.2f}\n", "steps/s (steady)", a.steady_steps_per_s,
                     b.steady_steps_per_s);
  out += fmt::format("{:<22} {:>11.0f}% {:>11.0f}%\n", "data wait", 100 * a.data_wait_fraction,
                     100 * b.data_wait_fraction);
  out += fmt::format("{:<22} {:>10.2f} s {:>10.2f} s\n", "start-up (to step 1)", a.startup_seconds,
                     b.startup_seconds);
  out += fmt::format("{:<22} {:>10.2f} s {:>10.2f} s\n", "wall", a.wall_seconds, b.wall_seconds);
  out += fmt::format("{:<22} {:>12} {:>12}\n", "loader workers", workers(a), workers(b));
  out += fmt::format("{:<22} {:>12} {:>12}\n", "exit status", a.exit_status, b.exit_status);
  if (a.steady_steps_per_s > 0 && b.steady_steps_per_s > 0) {
    double r = b.steady_steps_per_s / a.steady_steps_per_s;
    out += fmt::format("degraded / as is: {:.2f}x ({})\n", r,
                       r >= 1 + kAbMeaningfulChange   ? "faster with the change"
                       : r <= 1 - kAbMeaningfulChange ? "slower with the change"
                                                      : "within run-to-run noise");
  }
  return out;
}

nlohmann::ordered_json AbFiguresToJson(const AbRunFigures& r) {
  nlohmann::ordered_json j;
  j["steps"] = r.steps;
  j["steady_steps"] = r.steady_steps;
  j["steady_steps_per_s"] = r.steady_steps_per_s;
  j["data_wait_fraction"] = r.data_wait_fraction;
  j["startup_seconds"] = r.startup_seconds;
  j["wall_seconds"] = r.wall_seconds;
  j["loader_workers"] = r.loader_workers ? nlohmann::ordered_json(*r.loader_workers) : nullptr;
  j["exit_status"] = r.exit_status;
  return j;
}

nlohmann::ordered_json AbToJson(const std::string& command, int64_t steps,
                                const std::string& change, const AbRunFigures& as_is,
                                const AbRunFigures& degraded, const std::string& degraded_log,
                                uint64_t nccl_lines) {
  nlohmann::ordered_json j;
  j["command"] = command;
  j["steps"] = steps;
  j["change"] = change;
  j["as_is"] = AbFiguresToJson(as_is);
  j["degraded"] = AbFiguresToJson(degraded);
  j["speedup"] =
      as_is.steady_steps_per_s > 0 ? degraded.steady_steps_per_s / as_is.steady_steps_per_s : 0.0;
  if (!degraded_log.empty()) {
    j["degraded_log"] = degraded_log;
    j["nccl_lines"] = nccl_lines;
  }
  return j;
}

}  // namespace stallscope
