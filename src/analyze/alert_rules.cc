#include "analyze/alert_rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "analyze/host/gpu_rules.h"
#include "analyze/host/memory_rules.h"
#include "analyze/host/network_rules.h"
#include "analyze/run/io_rules.h"
#include "analyze/run/memory_rules.h"
#include "analyze/run/rank_rules.h"

namespace stallscope {
namespace {

// The long window of the sustained conditions (a share of the intervals,
// a trend): six rate windows, 30 minutes by default.
constexpr double kLongWindows = 6;

// An expression with {w} (the window), {long} (the long window) and {t}
// (the threshold) filled in; PromQL's own braces are doubled.
std::string Expr(std::string_view text, const std::string& w, const std::string& long_window,
                 double t = 0) {
  return fmt::format(fmt::runtime(text), fmt::arg("w", w), fmt::arg("long", long_window),
                     fmt::arg("t", t));
}

struct Builder {
  std::string w, long_window;
  std::string step;  // of subqueries: a fifth of the window
  double window_seconds;

  std::string E(std::string_view text, double t = 0) const { return Expr(text, w, long_window, t); }

  AlertRule Alert(std::string_view id, Severity severity, std::string expr, double for_windows,
                  std::string summary, std::string next, std::string problem = {}) const {
    AlertRule a;
    a.alert = AlertName(id);
    a.id = std::string(id);
    a.severity = severity;
    a.problem = std::move(problem);
    a.expr = std::move(expr);
    a.for_seconds = for_windows * window_seconds;
    a.summary = std::move(summary);
    a.next = std::move(next);
    return a;
  }
};

RuleGroup JobRecords(const Builder& b) {
  RuleGroup g;
  g.name = "stallscope.job";
  g.records = {
      {"stallscope:job_steps_per_second", b.E("rate(stallscope_job_steps_total[{w}])")},
      {"stallscope:job_step_seconds_mean", b.E("rate(stallscope_job_step_seconds_sum[{w}]) / "
                                               "rate(stallscope_job_step_seconds_count[{w}])")},
      {"stallscope:job_data_wait_share", b.E("rate(stallscope_job_data_wait_seconds_total[{w}]) / "
                                             "rate(stallscope_job_step_seconds_sum[{w}])")},
      {"stallscope:job_sync_wait_share", b.E("rate(stallscope_job_sync_wait_seconds_total[{w}]) / "
                                             "rate(stallscope_job_step_seconds_sum[{w}])")},
      {"stallscope:job_cpus_per_process",
       b.E("rate(stallscope_job_cpu_seconds_total[{w}]) / (stallscope_job_processes > 0)")},
      {"stallscope:job_busy_per_process",
       b.E("(rate(stallscope_job_cpu_seconds_total[{w}]) + "
           "rate(stallscope_job_run_delay_seconds_total[{w}])) / (stallscope_job_processes > 0)")},
      {"stallscope:job_node_rss_bytes", "sum by (instance, job_name) (stallscope_job_rss_bytes)"},
      {"stallscope:job_data_disk_utilization_ratio",
       "stallscope_disk_utilization_ratio * on (instance, device) group_right () "
       "max by (instance, job_name, device) (stallscope_job_data_device_info)"},
      {"stallscope:job_data_disk_await_seconds",
       "stallscope_disk_await_seconds * on (instance, device) group_right () "
       "max by (instance, job_name, device) (stallscope_job_data_device_info)"},
  };
  return g;
}

RuleGroup NodeRecords(const Builder& b) {
  RuleGroup g;
  g.name = "stallscope.node";
  g.records = {
      {"stallscope:memory_available_share",
       "stallscope_memory_effective_available_bytes / ((stallscope_memory_cgroup_limit_bytes < "
       "stallscope_memory_total_bytes) or stallscope_memory_total_bytes)"},
      {"stallscope:swap_pages_per_second",
       fmt::format("(rate(stallscope_swap_in_bytes_total[{0}]) + "
                   "rate(stallscope_swap_out_bytes_total[{0}])) / {1}",
                   b.w, kAlertPageBytes)},
      {"stallscope:network_errors", b.E("increase(stallscope_network_receive_errors_total[{w}]) + "
                                        "increase(stallscope_network_transmit_errors_total[{w}])")},
      {"stallscope:network_error_share",
       b.E("(rate(stallscope_network_receive_errors_total[{w}]) + "
           "rate(stallscope_network_transmit_errors_total[{w}])) / "
           "(rate(stallscope_network_receive_packets_total[{w}]) + "
           "rate(stallscope_network_transmit_packets_total[{w}]))")},
      {"stallscope:network_drops", b.E("increase(stallscope_network_receive_drops_total[{w}]) + "
                                       "increase(stallscope_network_transmit_drops_total[{w}])")},
      {"stallscope:network_drop_share",
       b.E("(rate(stallscope_network_receive_drops_total[{w}]) + "
           "rate(stallscope_network_transmit_drops_total[{w}])) / "
           "(rate(stallscope_network_receive_packets_total[{w}]) + "
           "rate(stallscope_network_transmit_packets_total[{w}]))")},
      {"stallscope:infiniband_port_errors",
       b.E("increase(stallscope_infiniband_port_symbol_errors_total[{w}]) + "
           "increase(stallscope_infiniband_port_receive_errors_total[{w}]) + "
           "increase(stallscope_infiniband_port_link_downed_total[{w}])")},
      {"stallscope:gpu_utilization_ratio_avg",
       b.E("avg_over_time(stallscope_gpu_utilization_ratio[{w}])")},
      {"stallscope:gpu_sm_active_ratio_avg",
       b.E("avg_over_time(stallscope_gpu_sm_active_ratio[{w}])")},
  };
  return g;
}

std::vector<AlertRule> MemoryAlerts(const Builder& b) {
  const std::string node_next =
      "stallscope doctor on {{ $labels.instance }}: the memory layer names the processes "
      "that hold it";
  std::vector<AlertRule> a;
  a.push_back(b.Alert(
      "memory.available_low", Severity::kWarning,
      b.E("stallscope:memory_available_share < {t}", kAvailableLowWarningFraction), 1,
      "{{ $labels.instance }}: {{ $value | humanizePercentage }} of memory available", node_next));
  a.push_back(b.Alert(
      "memory.available_low", Severity::kCritical,
      fmt::format("stallscope:memory_available_share < {} or (stallscope:memory_available_share < "
                  "{} and on (instance) stallscope:swap_pages_per_second >= {})",
                  kAvailableLowCriticalFraction, kAvailableLowWarningFraction,
                  kSwapWarningPagesPerSecond),
      1,
      "{{ $labels.instance }}: {{ $value | humanizePercentage }} of memory available (or under "
      "20% while it swaps)",
      node_next));
  for (auto [severity, t] : {std::pair{Severity::kWarning, kSwapWarningPagesPerSecond},
                             std::pair{Severity::kCritical, kSwapCriticalPagesPerSecond}}) {
    a.push_back(
        b.Alert("memory.swap_active", severity, b.E("stallscope:swap_pages_per_second >= {t}", t),
                1, "{{ $labels.instance }} swaps {{ printf \"%.1f\" $value }} pages/s", node_next));
  }
  for (auto [severity, t] : {std::pair{Severity::kWarning, kPinnedWarningFraction},
                             std::pair{Severity::kCritical, kPinnedCriticalFraction}}) {
    a.push_back(b.Alert(
        "memory.pinned_excess", severity,
        b.E("stallscope_memory_mlocked_bytes / stallscope_memory_total_bytes > {t}", t), 1,
        "{{ $labels.instance }}: {{ $value | humanizePercentage }} of memory is page-locked",
        "pin_memory buffers: num_workers x prefetch_factor batches per rank; stallscope doctor "
        "on {{ $labels.instance }}"));
  }
  // memory.rss_growth: the job's RSS on the node, extrapolated over the long
  // window, outgrows what is still available within 24 h (1 h: critical).
  // The growth is taken from the RSS now, not the recorded series, which
  // lags one evaluation behind.
  for (auto [severity, horizon, words] :
       {std::tuple{Severity::kWarning, kLeakOomHorizonSeconds, "24 h"},
        std::tuple{Severity::kCritical, kLeakCriticalOomSeconds, "1 h"}}) {
    a.push_back(b.Alert(
        "memory.rss_growth", severity,
        fmt::format("predict_linear(stallscope:job_node_rss_bytes[{}], {}) - "
                    "sum by (instance, job_name) (stallscope_job_rss_bytes) > on (instance) "
                    "group_left () "
                    "stallscope_memory_effective_available_bytes",
                    b.long_window, horizon),
        2,
        fmt::format("job {{{{ $labels.job_name }}}} on {{{{ $labels.instance }}}} grows "
                    "{{{{ $value | humanize1024 }}}}B in {} at the pace of the last {}: more "
                    "than the memory still available",
                    words, b.long_window),
        "stallscope run --procs N -- python train.py: memory.rss_growth names the process and, "
        "with the hook's tracing, the line that allocates"));
  }
  for (auto [severity, t] : {std::pair{Severity::kWarning, kGpuNearFullWarningFraction},
                             std::pair{Severity::kCritical, kGpuNearFullCriticalFraction}}) {
    a.push_back(b.Alert(
        "memory.gpu_near_full", severity,
        b.E("stallscope_gpu_memory_used_bytes / stallscope_gpu_memory_total_bytes >= {t}", t), 1,
        "GPU {{ $labels.gpu }} on {{ $labels.instance }}: {{ $value | humanizePercentage }} of "
        "its memory in use",
        "nvidia-smi on {{ $labels.instance }}: which process holds it; the caching allocator "
        "keeps freed blocks (torch.cuda.memory_summary())"));
  }
  a.push_back(b.Alert(
      "memory.oom_killed", Severity::kCritical,
      b.E("increase(stallscope_memory_oom_kills_total[{w}]) > 0"), 0,
      "the kernel's OOM killer ended a process on {{ $labels.instance }} in the last " + b.w,
      "dmesg on {{ $labels.instance }} names the victim; in distributed training the other "
      "ranks now hang"));
  return a;
}

std::vector<AlertRule> IoAlerts(const Builder& b) {
  std::vector<AlertRule> a;
  const double util = kDiskSaturatedUtilPercent / 100, await = kDiskSaturatedAwaitMs / 1000;
  a.push_back(b.Alert(
      "io.device_saturated", Severity::kWarning,
      fmt::format("stallscope_disk_utilization_ratio >= {} and stallscope_disk_await_seconds >= {}",
                  util, await),
      1,
      "{{ $labels.instance }} {{ $labels.device }} is saturated: %util "
      "{{ $value | humanizePercentage }} with await over 20 ms",
      "iostat -x 1 on {{ $labels.instance }}; stallscope bench io on the data's path"));
  a.push_back(b.Alert(
      "io.device_saturated", Severity::kCritical,
      fmt::format("avg_over_time(((stallscope_disk_utilization_ratio >= bool {}) * "
                  "(stallscope_disk_await_seconds >= bool {}))[{}:{}]) >= {}",
                  util, await, b.long_window, b.step, kDiskSaturatedCriticalFraction),
      0,
      "{{ $labels.instance }} {{ $labels.device }} was saturated (%util >= 90%, await >= 20 ms) "
      "{{ $value | humanizePercentage }} of the last " +
          b.long_window,
      "iostat -x 1 on {{ $labels.instance }}; stallscope bench io on the data's path"));
  const std::string steps =
      fmt::format(" and increase(stallscope_job_steps_total[{}]) >= {}", b.w, kInputBoundMinSteps);
  for (auto [severity, t] : {std::pair{Severity::kWarning, kInputBoundWarningFraction},
                             std::pair{Severity::kCritical, kInputBoundCriticalFraction}}) {
    a.push_back(b.Alert(
        "io.input_bound", severity,
        fmt::format("topk by (job_name) (1, stallscope:job_data_wait_share) >= {}", t) + steps, 1,
        "job {{ $labels.job_name }} rank {{ $labels.rank }} ({{ $labels.host }}) waits "
        "{{ $value | humanizePercentage }} of its steps for data",
        "stallscope run -- python train.py: the report says whether the loader's CPU, the disk "
        "or its settings hold it"));
  }
  for (auto [severity, t] : {std::pair{Severity::kWarning, kInputBoundWarningFraction},
                             std::pair{Severity::kCritical, kInputBoundCriticalFraction}}) {
    a.push_back(b.Alert(
        "io.loader_config", severity,
        fmt::format("stallscope:job_data_wait_share >= {} and stallscope_job_loader_workers == 0",
                    t),
        1,
        "job {{ $labels.job_name }} rank {{ $labels.rank }} loads in the training process "
        "(num_workers=0) and waits {{ $value | humanizePercentage }} of its steps for data",
        "DataLoader(num_workers=N, persistent_workers=True): start at half the CPUs per node "
        "divided by the ranks",
        "num_workers_zero"));
  }
  for (auto [severity, t] : {std::pair{Severity::kWarning, kInputBoundWarningFraction},
                             std::pair{Severity::kCritical, kInputBoundCriticalFraction}}) {
    a.push_back(b.Alert(
        "io.cpu_bound_loader", severity,
        fmt::format("stallscope:job_busy_per_process{{role=\"workers\"}} >= {} and "
                    "stallscope:job_cpus_per_process{{role=\"workers\"}} >= {} and on (instance, "
                    "job_name, rank) stallscope:job_data_wait_share >= {} unless on (instance, "
                    "job_name) stallscope:job_data_disk_utilization_ratio >= {}",
                    kWorkerBusyPercent / 100, kWorkerOwnCpuPercent / 100, t,
                    kDataDiskIdlePercent / 100),
        1,
        "job {{ $labels.job_name }} rank {{ $labels.rank }}: its loader workers are on a CPU or "
        "waiting for one {{ $value | humanizePercentage }} of the time while the steps wait for "
        "data and the data disk is not busy",
        "the decode costs the time (zip, JPEG, augmentations): more workers if CPUs are idle, "
        "else decode cheaper or pack pre-decoded shards (stallscope pack)"));
  }
  return a;
}

std::vector<AlertRule> NetworkAlerts(const Builder& b) {
  std::vector<AlertRule> a;
  const std::string nic_next =
      "ip -s link show {{ $labels.interface }} and ethtool -S on {{ $labels.instance }}: "
      "cable, optics, switch port, or a receive ring too small";
  a.push_back(b.Alert("network.port_errors", Severity::kWarning,
                      fmt::format("stallscope:network_errors > {}", kPortErrorsWarningCount - 1), 0,
                      "{{ $labels.instance }} {{ $labels.interface }}: "
                      "{{ printf \"%.0f\" $value }} packet errors in the last " +
                          b.w,
                      nic_next, "errors"));
  a.push_back(b.Alert(
      "network.port_errors", Severity::kCritical,
      fmt::format("stallscope:network_error_share >= {}", kPortErrorsCriticalFraction), 0,
      "{{ $labels.instance }} {{ $labels.interface }}: {{ $value | humanizePercentage }} of "
      "its packets have errors",
      nic_next, "errors"));
  for (auto [severity, t] : {std::pair{Severity::kWarning, kPortDropsWarningFraction},
                             std::pair{Severity::kCritical, kPortDropsCriticalFraction}}) {
    a.push_back(b.Alert("network.port_errors", severity,
                        fmt::format("stallscope:network_drop_share >= {} and "
                                    "stallscope:network_drops >= {}",
                                    t, kPortDropsMinCount),
                        0,
                        "{{ $labels.instance }} {{ $labels.interface }} drops "
                        "{{ $value | humanizePercentage }} of its packets",
                        nic_next, "drops"));
  }
  a.push_back(b.Alert(
      "network.port_errors", Severity::kWarning,
      fmt::format("stallscope:infiniband_port_errors > {}", kPortErrorsWarningCount - 1), 0,
      "{{ $labels.instance }} {{ $labels.device }} port {{ $labels.port }}: "
      "{{ printf \"%.0f\" $value }} symbol errors, receive errors or link-downs in the last " +
          b.w,
      "ibstat and perfquery on {{ $labels.instance }}: cable or transceiver; a port that keeps "
      "counting errors slows every all-reduce through it",
      "infiniband"));
  return a;
}

std::vector<AlertRule> DistributedAlerts(const Builder& b) {
  std::vector<AlertRule> a;
  // The others' mean sync wait minus the rank's own: the rank the others
  // wait for waits least (rank_rules.h). PromQL has no "median of the
  // others"; their mean stands for it.
  constexpr std::string_view kOthersWaitMore =
      "(sum by (job_name) (stallscope:job_sync_wait_share) - on (job_name) group_right () "
      "stallscope:job_sync_wait_share) / on (job_name) group_left () (count by (job_name) "
      "(stallscope:job_sync_wait_share) - 1) - stallscope:job_sync_wait_share";
  for (auto [severity, t] : {std::pair{Severity::kWarning, kStragglerStepFraction},
                             std::pair{Severity::kCritical, kStragglerCriticalFraction}}) {
    a.push_back(b.Alert(
        "distributed.straggler", severity, fmt::format("{} > {}", kOthersWaitMore, t), 1,
        "job {{ $labels.job_name }}: the other ranks wait {{ $value | humanizePercentage }} of "
        "a step longer than rank {{ $labels.rank }} ({{ $labels.host }}) in gradient "
        "synchronization: they wait for it",
        "nvidia-smi -q -d CLOCK,PERFORMANCE on {{ $labels.host }} (a throttled or different "
        "GPU), its data wait and CPU; stallscope run on that node"));
  }
  a.push_back(b.Alert(
      "distributed.load_imbalance", Severity::kWarning,
      fmt::format("max by (job_name) (stallscope:job_data_wait_share) - min by (job_name) "
                  "(stallscope:job_data_wait_share) > {}",
                  kDataWaitImbalanceFraction),
      1,
      "job {{ $labels.job_name }}: its ranks' data waits differ by "
      "{{ $value | humanizePercentage }} of a step",
      "stallscope:job_data_wait_share by rank: the slow ranks' nodes (their disks, their page "
      "cache, their workers)",
      "data_wait"));
  // Without stallscope.ddp there is no sync wait: compute is the rest of
  // the step after the data wait.
  constexpr std::string_view kCompute =
      "(1 - stallscope:job_data_wait_share - (stallscope:job_sync_wait_share or "
      "stallscope:job_data_wait_share * 0))";
  a.push_back(b.Alert(
      "distributed.load_imbalance", Severity::kWarning,
      fmt::format("max by (job_name) {0} - min by (job_name) {0} > {1} unless on (job_name) "
                  "({2} > {3})",
                  kCompute, kComputeImbalanceFraction, kOthersWaitMore, kStragglerStepFraction),
      1,
      "job {{ $labels.job_name }}: its ranks' compute per step differs by "
      "{{ $value | humanizePercentage }} of a step",
      "samples of very different sizes per rank (sequence lengths): bucket or pad them",
      "compute"));
  return a;
}

std::vector<AlertRule> CodeAlerts(const Builder& b) {
  std::vector<AlertRule> a;
  for (auto [severity, t] :
       {std::pair{Severity::kWarning, kUtilMisleadingSmActivePercent},
        std::pair{Severity::kCritical, kUtilMisleadingCriticalSmActivePercent}}) {
    a.push_back(b.Alert(
        "code.util_misleading", severity,
        fmt::format("stallscope:gpu_utilization_ratio_avg >= {} and "
                    "stallscope:gpu_sm_active_ratio_avg < {}",
                    kUtilMisleadingUtilPercent / 100, t / 100),
        1,
        "GPU {{ $labels.gpu }} on {{ $labels.instance }} reads "
        "{{ $value | humanizePercentage }} busy in nvidia-smi, but its SMs are active far less",
        "torch.profiler on that rank: small kernels, launch gaps and host syncs (stallscope "
        "trace)"));
  }
  return a;
}

constexpr RuleWithoutAlert kWithout[] = {
    {"distributed.rank_died",
     "a rank's exit status and the launcher's signals are seen by stallscope run, not served "
     "by the exporter; stallscope run reports it"},
    {"distributed.hang",
     "the ranks' stacks are taken by stallscope run when no step ends; stallscope run (or "
     "stallscope hang DIR on Flight Recorder dumps) reports it"},
    {"io.cpu_contention",
     "needs the CPU of the processes outside the job, which the exporter "
     "does not serve; stallscope run reports it"},
    {"io.small_files", "a walk of the dataset: stallscope dataset PATH"},
    {"code.gpu_idle", "a profiler trace: stallscope trace DIR"},
    {"code.launch_bound", "a profiler trace: stallscope trace DIR"},
    {"code.sync_in_step", "a profiler trace: stallscope trace DIR"},
    {"code.cpu_bound_step", "a profiler trace's critical path: stallscope trace DIR"},
    {"memory.pageable_h2d", "a profiler trace: stallscope trace DIR"},
    {"io.remote_fs", "a walk of the dataset: stallscope dataset PATH"},
    {"io.cold_cache",
     "a walk of the dataset or a run's epochs: stallscope dataset, stallscope run"},
    {"io.storage_slow", "an active benchmark: stallscope bench io PATH"},
    {"network.wrong_interface", "the job's environment and routes: stallscope doctor on the node"},
    {"network.container_bridge", "the job's environment and routes: stallscope doctor"},
    {"network.nic_far_from_gpu", "the host's PCI tree: stallscope doctor or snapshot on the node"},
    {"network.rdma_unused", "an NCCL log or the job's environment: stallscope nccl-log, doctor"},
    {"network.mtu_mismatch", "the MTU of both ends of a path: stallscope doctor --peer HOST"},
    {"network.connect_failed", "an NCCL log: stallscope nccl-log"},
    {"network.net_plugin_fallback", "an NCCL log: stallscope nccl-log"},
    {"network.congestion", "NIC statistics over doctor's interval: stallscope doctor"},
    {"network.drops_buffer", "NIC statistics over doctor's interval: stallscope doctor"},
    {"network.node_receive_slow",
     "needs each node's job interface (its route to MASTER_ADDR) and the "
     "ranks' sync times on it, which a run file records: stallscope report A.db B.db"},
    {"distributed.nccl_version_mismatch", "an NCCL log: stallscope nccl-log"},
    {"distributed.init_incomplete", "an NCCL log: stallscope nccl-log"},
    {"distributed.nccl_cuda_failure", "an NCCL log: stallscope nccl-log"},
    {"network.oob_socket_failed", "an NCCL log: stallscope nccl-log"},
    {"network.root_unreachable", "an NCCL log: stallscope nccl-log"},
    {"network.connect_timeout", "an NCCL log: stallscope nccl-log"},
    {"network.duplicate_address", "an NCCL log: stallscope nccl-log"},
    {"network.link_local_interface", "an NCCL log: stallscope nccl-log"},
    {"distributed.nccl_warning", "an NCCL log: stallscope nccl-log"},
    {"network.nccl_error", "an NCCL log: stallscope nccl-log"},
    {"distributed.nccl_setup_error", "an NCCL log: stallscope nccl-log"},
    {"code.nccl_usage_error", "an NCCL log: stallscope nccl-log"},
    {"distributed.scaling_poor", "runs at several world sizes: stallscope scale"},
    {"network.comm_ratio_high", "runs at several world sizes: stallscope scale"},
    {"memory.baseline_drift", "a saved baseline: stallscope doctor --baseline"},
    {"io.baseline_drift", "a saved baseline: stallscope doctor --baseline"},
    {"network.baseline_drift", "a saved baseline: stallscope doctor --baseline"},
    {"io.loader_overhead", "two runs compared: stallscope ab"},
    {"io.loader_needed", "two runs compared: stallscope ab"},
    {"network.env_change", "two runs compared: stallscope ab, stallscope diff"},
    {"code.env_change", "two runs compared: stallscope ab, stallscope diff"},
    {"code.gpu_throttled",
     "needs the GPU's maximum clock and throttle reasons, which the "
     "exporter does not serve; stallscope doctor on the node"},
    {"io.pcie_degraded",
     "needs each GPU's trained PCIe link against its maximum (sysfs), which the exporter "
     "does not serve; stallscope doctor on the node"},
    {"network.link_degraded",
     "needs each NIC's trained PCIe link against its maximum (sysfs), which the exporter "
     "does not serve; stallscope doctor on the node"},
    {"memory.gpu_ecc",
     "needs the GPU's ECC error counters, which the exporter does not serve; "
     "stallscope doctor on the node"},
    {"memory.gpu_remap",
     "needs the GPU's row remapper state, which the exporter does not serve; "
     "stallscope doctor on the node"},
    {"code.gpu_persistence_off",
     "a setting of the node rather than a condition of a job; stallscope doctor on the node"},
    {"code.gpu_xid",
     "needs the kernel log, which the exporter does not read; stallscope doctor on the node"},
    {"network.allreduce_slow", "an active benchmark: stallscope bench allreduce"},
    {"distributed.allreduce_wrong", "an active benchmark: stallscope bench allreduce"},
    {"distributed.heterogeneous_gpus", "every node's GPU models at once: stallscope cluster"},
    {"distributed.clock_offset", "run files of several nodes: stallscope report A.db B.db"},
};

}  // namespace

std::string AlertName(std::string_view id) {
  std::string name = "Stallscope";
  bool upper = true;
  for (char c : id) {
    if (c == '.' || c == '_') {
      upper = true;
      continue;
    }
    name += upper && c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;
    upper = false;
  }
  return name;
}

Result<double> ParseAlertWindow(std::string_view text) {
  std::string_view digits = text;
  int64_t unit = 1;
  if (!digits.empty() && (digits.back() == 's' || digits.back() == 'm' || digits.back() == 'h')) {
    unit = digits.back() == 'h' ? 3600 : digits.back() == 'm' ? 60 : 1;
    digits.remove_suffix(1);
  }
  int64_t n = 0;
  bool ok = !digits.empty() && digits.size() <= 6;
  for (char c : digits) {
    ok = ok && c >= '0' && c <= '9';
    if (ok) n = n * 10 + (c - '0');
  }
  if (!ok || n * unit < 1 || n * unit > 24 * 3600) {
    return Status::InvalidArgument(fmt::format(
        "{}: a window is whole seconds, minutes or hours (30s, 5m, 1h), from 1s to 24h", text));
  }
  return static_cast<double>(n * unit);
}

std::string PrometheusDuration(double seconds) {
  auto s = static_cast<int64_t>(std::llround(seconds));
  if (s > 0 && s % 3600 == 0) return fmt::format("{}h", s / 3600);
  if (s > 0 && s % 60 == 0) return fmt::format("{}m", s / 60);
  return fmt::format("{}s", s);
}

std::vector<RuleGroup> PrometheusRules(const PrometheusRuleOptions& options) {
  Builder b{PrometheusDuration(options.window_seconds),
            PrometheusDuration(options.window_seconds * kLongWindows),
            PrometheusDuration(std::max(1.0, options.window_seconds / 5)), options.window_seconds};
  std::vector<RuleGroup> groups = {JobRecords(b), NodeRecords(b)};
  RuleGroup alerts;
  alerts.name = "stallscope.alerts";
  for (auto* part : {&MemoryAlerts, &IoAlerts, &NetworkAlerts, &DistributedAlerts, &CodeAlerts}) {
    for (AlertRule& a : (*part)(b)) alerts.alerts.push_back(std::move(a));
  }
  groups.push_back(std::move(alerts));
  return groups;
}

std::span<const RuleWithoutAlert> RulesWithoutAlerts() { return kWithout; }

}  // namespace stallscope
