#include "analyze/run/ab_rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cmath>

namespace stallscope {
namespace {

// Variables that act on the collective/network layer.
bool IsNetworkVariable(const std::string& key) {
  return key.starts_with("NCCL_") || key.starts_with("UCX_") || key.starts_with("GLOO_") ||
         key.starts_with("OMPI_MCA_btl") || key.starts_with("TP_SOCKET") || key.starts_with("FI_");
}

std::string EnvText(const AbChange& change) {
  std::string out;
  for (const auto& [k, v] : change.env) out += (out.empty() ? "" : " ") + k + "=" + v;
  return out;
}

void AddRates(Finding& f, const AbRunFigures& a, const AbRunFigures& b) {
  f.evidence.push_back({"as_is_steps_per_s", a.steady_steps_per_s});
  f.evidence.push_back({"degraded_steps_per_s", b.steady_steps_per_s});
  f.evidence.push_back({"speedup", b.steady_steps_per_s / a.steady_steps_per_s});
  f.evidence.push_back({"as_is_data_wait_fraction", a.data_wait_fraction});
  f.evidence.push_back({"degraded_data_wait_fraction", b.data_wait_fraction});
  f.evidence.push_back({"as_is_startup_seconds", a.startup_seconds});
  f.evidence.push_back({"degraded_startup_seconds", b.startup_seconds});
}

}  // namespace

AbRunFigures SummarizeAbRun(const std::vector<StepEvent>& steps,
                            const std::vector<LoaderConfig>& loaders, double wall_seconds,
                            int exit_status) {
  AbRunFigures r;
  r.wall_seconds = wall_seconds;
  r.exit_status = exit_status;
  int rank = INT_MAX;
  for (const StepEvent& s : steps) rank = std::min(rank, s.rank);
  std::vector<StepEvent> mine;
  for (const StepEvent& s : steps) {
    if (s.rank == rank) mine.push_back(s);
  }
  std::sort(mine.begin(), mine.end(),
            [](const StepEvent& x, const StepEvent& y) { return x.step < y.step; });
  for (const LoaderConfig& l : loaders) {
    if (l.rank == rank || rank == INT_MAX) r.loader_workers = l.num_workers;
  }
  r.steps = static_cast<int64_t>(mine.size());
  if (mine.empty()) return r;
  r.startup_seconds = mine.front().t;
  size_t warmup = std::max<size_t>(1, static_cast<size_t>(std::ceil(kAbWarmupShare * mine.size())));
  if (warmup >= mine.size()) warmup = mine.size() > 1 ? mine.size() - 1 : 0;
  double step_sum = 0, wait_sum = 0;
  for (size_t i = warmup; i < mine.size(); ++i) {
    step_sum += mine[i].step_seconds;
    wait_sum += mine[i].wait_seconds;
  }
  r.steady_steps = static_cast<int64_t>(mine.size() - warmup);
  if (step_sum > 0) {
    r.steady_steps_per_s = static_cast<double>(r.steady_steps) / step_sum;
    r.data_wait_fraction = wait_sum / step_sum;
  }
  return r;
}

FindingsWithNotes CompareAbRuns(const AbRunFigures& a, const AbRunFigures& b,
                                const AbChange& change, const std::string& command) {
  std::vector<Finding> out;
  if (a.steady_steps_per_s <= 0 || b.steady_steps_per_s <= 0)
    return FindingsWithNotes{std::move(out), {}};
  double ratio = b.steady_steps_per_s / a.steady_steps_per_s;
  bool faster = ratio >= 1 + kAbMeaningfulChange;
  bool slower = ratio <= 1 - kAbMeaningfulChange;
  if (!faster && !slower) return FindingsWithNotes{std::move(out), {}};
  if (change.loader_workers) {
    int w = *change.loader_workers;
    int before = a.loader_workers.value_or(-1);
    Finding f;
    f.layer = Layer::kIo;
    if (faster) {
      f.id = "io.loader_overhead";
      f.severity = Severity::kWarning;
      f.summary = fmt::format(
          "{:.2f}x faster with num_workers={} than with num_workers={}: the loader's workers "
          "cost more than they give (worker start-up, batches passed between processes through "
          "shared memory, or more workers than the {} CPUs can run beside the training)",
          ratio, w, before, change.cpu_count);
      f.next = fmt::format(
          "keep the cheap path: num_workers={} (or fewer workers than now), "
          "persistent_workers=True so workers start once; then `stallscope run -- {}` to see "
          "the loader CPU against the cores",
          w, command);
      f.impact = Impact{1 - 1 / ratio, std::nullopt,
                        "steady step rate of the degraded run against the run as is"};
    } else {
      f.id = "io.loader_needed";
      f.severity = Severity::kInfo;
      f.summary = fmt::format(
          "{:.2f}x slower with num_workers={} than with num_workers={}: the loader's workers "
          "do real work, so the data path (read, decode, augment) sets the pace when they are "
          "short; with them the steps still wait {:.0f}% of their time for data",
          1 / ratio, w, before, 100 * a.data_wait_fraction);
      f.next = a.data_wait_fraction >= 0.10
                   ? "the job is still input-bound with its workers: raise num_workers, "
                     "pin_memory=True, and check the storage: stallscope dataset PATH; "
                     "stallscope bench io PATH"
                   : "the loader keeps up with its workers: look past the data path (stallscope "
                     "run -- CMD for the other layers)";
    }
    f.evidence.push_back({"as_is_loader_workers", static_cast<int64_t>(before)});
    f.evidence.push_back({"degraded_loader_workers", static_cast<int64_t>(w)});
    AddRates(f, a, b);
    out.push_back(std::move(f));
    return FindingsWithNotes{std::move(out), {}};
  }
  if (change.env.empty()) return FindingsWithNotes{std::move(out), {}};
  bool network = std::all_of(change.env.begin(), change.env.end(),
                             [](const auto& kv) { return IsNetworkVariable(kv.first); });
  Finding f;
  f.id = network ? "network.env_change" : "code.env_change";
  f.layer = network ? Layer::kNetwork : Layer::kCode;
  f.severity = faster ? Severity::kWarning : Severity::kInfo;
  f.summary = faster ? fmt::format(
                           "{:.2f}x faster with {}: the layer it touches was the "
                           "bottleneck of the run as is",
                           ratio, EnvText(change))
                     : fmt::format(
                           "{:.2f}x slower with {}: the setting the run as is uses is "
                           "the better one, or the change added overhead (NCCL_DEBUG=INFO "
                           "logging costs little once initialised)",
                           1 / ratio, EnvText(change));
  f.next = faster ? fmt::format(
                        "make {} the default of the job and confirm with a longer run: "
                        "stallscope run -- {}",
                        EnvText(change), command)
                  : "keep the run as is; read the degraded run's findings above for what the "
                    "change revealed";
  f.evidence.push_back({"change", EnvText(change)});
  AddRates(f, a, b);
  out.push_back(std::move(f));
  return FindingsWithNotes{std::move(out), {}};
}

Result<AbPlan> PlanAb(int64_t steps, int loader_workers, double timeout_seconds,
                      const std::vector<std::string>& env, int cpu_count) {
  if (steps < 2 || steps > 1000000) {
    return Status::InvalidArgument(fmt::format("--steps {}: must be between 2 and 1000000", steps));
  }
  if (loader_workers < -1 || loader_workers > 1024) {
    return Status::InvalidArgument(
        fmt::format("--loader-workers {}: must be between 0 and 1024", loader_workers));
  }
  if (!(timeout_seconds > 0)) return Status::InvalidArgument("--timeout must be positive");
  AbPlan plan;
  plan.change.cpu_count = cpu_count;
  if (loader_workers >= 0) {
    plan.change.loader_workers = loader_workers;
    plan.degraded_env.push_back({"STALLSCOPE_LOADER_WORKERS", std::to_string(loader_workers)});
    plan.what = fmt::format("num_workers={}", loader_workers);
  }
  for (const std::string& e : env) {
    size_t eq = e.find('=');
    if (eq == std::string::npos || eq == 0 || e.find_first_of(" \t") < eq) {
      return Status::InvalidArgument("--env " + e + ": expected NAME=VALUE");
    }
    std::string key = e.substr(0, eq);
    if (key.starts_with("STALLSCOPE_")) {
      return Status::InvalidArgument(
          "--env " + e + ": STALLSCOPE_* variables are ab's own (use --loader-workers)");
    }
    plan.change.env.push_back({key, e.substr(eq + 1)});
    plan.degraded_env.push_back(plan.change.env.back());
    if (key == "NCCL_DEBUG") plan.nccl_debug = true;
    plan.what += (plan.what.empty() ? "" : " ") + e;
  }
  if (plan.degraded_env.empty()) {
    return Status::InvalidArgument(
        "nothing to change: give --loader-workers N and/or --env NAME=VALUE");
  }
  return plan;
}

}  // namespace stallscope
