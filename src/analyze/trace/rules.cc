#include "analyze/trace/rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>

#include "analyze/host/gpu_rules.h"
#include "analyze/report.h"
#include "analyze/run/io_rules.h"
#include "analyze/run/rank_rules.h"
#include "analyze/run/scaling.h"
#include "core/stats.h"

namespace stallscope {
namespace {

// The steps' time of a rank: the kept ProfilerSteps' summed durations.
double StepTime(const TraceRankBreakdown& r) {
  double sum = 0;
  for (const TraceStepFigures& s : r.step_figures) sum += s.dur_us;
  return sum;
}

std::string StepsText(const TraceRankBreakdown& r) {
  if (r.steps.empty()) return "the whole trace (no ProfilerStep)";
  auto [lo, hi] = std::minmax_element(r.steps.begin(), r.steps.end());
  return *lo == *hi ? fmt::format("step #{}", *lo) : fmt::format("steps #{}-#{}", *lo, *hi);
}

std::string RanksText(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ",") + std::to_string(r);
  return out;
}

// One finding per id over the ranks: `judge` gives a rank's finding or
// nothing; the worst (severity, then `score`) is kept, with every rank hit.
void OverRanks(
    const std::vector<TraceRankBreakdown>& ranks, std::vector<Finding>& out,
    const std::function<std::optional<std::pair<Finding, double>>(const TraceRankBreakdown&)>&
        judge) {
  std::optional<std::pair<Finding, double>> worst;
  std::vector<int> hit;
  for (const TraceRankBreakdown& r : ranks) {
    std::optional<std::pair<Finding, double>> f = judge(r);
    if (!f) continue;
    hit.push_back(r.rank);
    if (!worst || f->first.severity > worst->first.severity ||
        (f->first.severity == worst->first.severity && f->second > worst->second)) {
      worst = std::move(f);
    }
  }
  if (!worst) return;
  if (ranks.size() > 1) worst->first.evidence.push_back({"ranks", RanksText(hit)});
  out.push_back(std::move(worst->first));
}

Severity BySeverity(double v, double warning, double critical) {
  return v >= critical ? Severity::kCritical : v >= warning ? Severity::kWarning : Severity::kInfo;
}

std::optional<std::pair<Finding, double>> GpuIdle(const TraceRankBreakdown& r) {
  if (!r.temporal || r.temporal->kernel_time_us <= 0) return std::nullopt;
  const TemporalBreakdown& t = *r.temporal;
  if (t.idle_pct < kGpuIdleWarningPercent) return std::nullopt;
  const IdleCauses& c = r.idle_causes;
  double idle = std::max(1.0, c.host_launch_us + c.data_loader_us + c.sync_us);
  std::pair<double, std::string> causes[] = {
      {c.host_launch_us, "waiting for the host to launch the next work"},
      {c.data_loader_us, "waiting on the data loader's next batch"},
      {c.sync_us, "behind a blocking sync"}};
  const auto& top =
      *std::max_element(std::begin(causes), std::end(causes),
                        [](const auto& a, const auto& b) { return a.first < b.first; });
  Finding f;
  f.id = "code.gpu_idle";
  f.layer = Layer::kCode;
  f.severity = t.idle_pct >= kGpuIdleCriticalPercent ? Severity::kCritical : Severity::kWarning;
  f.summary = fmt::format(
      "rank {}'s GPU sat idle {:.1f}% of its active window over {}, {:.0f}% of "
      "that {}",
      r.rank, t.idle_pct, StepsText(r), top.first / idle * 100, top.second);
  f.evidence = {{"rank", static_cast<int64_t>(r.rank)},
                {"idle_pct", t.idle_pct},
                {"idle_us", t.idle_us},
                {"kernel_time_us", t.kernel_time_us},
                {"host_launch_share", c.host_launch_us / idle},
                {"data_loader_share", c.data_loader_us / idle},
                {"sync_share", c.sync_us / idle},
                {"gaps_over_500ms", static_cast<int64_t>(c.long_gaps)},
                {"longest_gap_ms", c.longest_gap_us / 1000},
                {"steps", StepsText(r)},
                {"trace", r.path}};
  if (top.first == c.data_loader_us) {
    f.next =
        "the data loader: stallscope run -- CMD measures its wait per step; raise "
        "DataLoader num_workers, pin_memory=True, persistent_workers=True";
  } else if (top.first == c.sync_us) {
    f.next =
        "remove the per-step sync (.item(), .cpu(), torch.cuda.synchronize()): keep the "
        "loss as a tensor and read it every N steps";
  } else {
    f.next =
        "fewer, larger launches: CUDA graphs (torch.compile(mode=\"reduce-overhead\")), a "
        "larger batch, fused ops; stallscope trace --json lists the top kernels";
  }
  return std::pair{std::move(f), t.idle_pct};
}

std::optional<std::pair<Finding, double>> SyncInStep(const TraceRankBreakdown& r) {
  if (r.step_figures.empty()) return std::nullopt;
  size_t with = 0;
  double sync = 0;
  const TraceStepFigures* worst = nullptr;
  std::map<std::string, int> ops;
  for (const TraceStepFigures& s : r.step_figures) {
    if (s.sync_us <= 0) continue;
    ++with;
    sync += s.sync_us;
    ++ops[s.sync_op];
    if (worst == nullptr ||
        s.sync_us / std::max(1.0, s.dur_us) > worst->sync_us / std::max(1.0, worst->dur_us)) {
      worst = &s;
    }
  }
  if (with == 0 || static_cast<double>(with) < kSyncStepsShare * r.step_figures.size()) {
    return std::nullopt;
  }
  double share = sync / std::max(1.0, StepTime(r));
  std::string op = std::max_element(ops.begin(), ops.end(), [](const auto& a, const auto& b) {
                     return a.second < b.second;
                   })->first;
  Finding f;
  f.id = "code.sync_in_step";
  f.layer = Layer::kCode;
  f.severity = BySeverity(share, kSyncWarningFraction, kSyncCriticalFraction);
  f.summary = fmt::format("rank {} blocks on {} in {} of {} steps: {:.1f}% of the steps' time",
                          r.rank, op, with, r.step_figures.size(), share * 100);
  f.evidence = {{"rank", static_cast<int64_t>(r.rank)},
                {"op", op},
                {"steps_with_sync", static_cast<int64_t>(with)},
                {"steps", static_cast<int64_t>(r.step_figures.size())},
                {"sync_share", share},
                {"worst_step", worst->step},
                {"worst_step_sync_ms", worst->sync_us / 1000},
                {"worst_step_ms", worst->dur_us / 1000},
                {"trace", r.path}};
  f.next =
      "take the sync off the hot path: keep the loss a tensor and call .item() every N "
      "steps (e.g. 50); no torch.cuda.synchronize() in the loop outside timing code";
  return std::pair{std::move(f), share};
}

std::optional<std::pair<Finding, double>> PageableH2d(const TraceRankBreakdown& r) {
  uint64_t copies = 0;
  double us = 0;
  const TraceStepFigures* worst = nullptr;
  for (const TraceStepFigures& s : r.step_figures) {
    copies += s.pageable_h2d;
    us += s.pageable_h2d_us;
    if (s.pageable_h2d > 0 && (worst == nullptr || s.pageable_h2d_us > worst->pageable_h2d_us)) {
      worst = &s;
    }
  }
  if (copies == 0) return std::nullopt;
  double share = us / std::max(1.0, StepTime(r));
  Finding f;
  f.id = "memory.pageable_h2d";
  f.layer = Layer::kMemory;
  f.severity = BySeverity(share, kPageableWarningFraction, kPageableCriticalFraction);
  f.summary = fmt::format(
      "rank {} copies to the GPU from pageable memory: {} copies, {:.1f} ms, "
      "{:.1f}% of the steps' time ({})",
      r.rank, copies, us / 1000, share * 100, StepsText(r));
  f.evidence = {{"rank", static_cast<int64_t>(r.rank)},
                {"event", std::string("Memcpy HtoD (Pageable -> Device)")},
                {"copies", static_cast<int64_t>(copies)},
                {"copy_ms", us / 1000},
                {"share_of_step_time", share},
                {"worst_step", worst->step},
                {"trace", r.path}};
  f.next =
      "DataLoader(pin_memory=True) and tensor.to(device, non_blocking=True); stallscope "
      "bench h2d measures pinned against pageable on this host";
  return std::pair{std::move(f), share};
}

std::optional<std::pair<Finding, double>> LaunchBound(const TraceRankBreakdown& r) {
  if (!r.temporal || r.busy_window_share < 0) return std::nullopt;
  uint64_t kernels = 0, short_kernels = 0;
  for (const TraceStepFigures& s : r.step_figures) {
    kernels += s.kernels;
    short_kernels += s.short_kernels;
  }
  if (kernels < kLaunchBoundMinKernels) return std::nullopt;
  double short_share = static_cast<double>(short_kernels) / kernels;
  double busy_pct = 100 - r.temporal->idle_pct;
  double util_pct = r.busy_window_share * 100;
  if (short_share < kLaunchBoundShortShare || busy_pct >= kUtilMisleadingSmActivePercent ||
      util_pct < kUtilMisleadingUtilPercent) {
    return std::nullopt;
  }
  const LaunchStats& l = r.launches;
  Finding f;
  f.id = "code.launch_bound";
  f.layer = Layer::kCode;
  f.severity =
      busy_pct < kUtilMisleadingCriticalSmActivePercent ? Severity::kCritical : Severity::kWarning;
  f.summary = fmt::format(
      "rank {} is launch-bound: {:.0f}% of its kernels run under {:.0f} µs and "
      "the GPU is busy {:.0f}% of the time, while utilization.gpu would read "
      "about {:.0f}%",
      r.rank, short_share * 100, kShortKernelUs, busy_pct, util_pct);
  f.evidence = {{"rank", static_cast<int64_t>(r.rank)},
                {"source", std::string("trace")},
                {"kernels", static_cast<int64_t>(kernels)},
                {"short_kernel_share", short_share},
                {"gpu_busy_pct", busy_pct},
                {"utilization_estimate_pct", util_pct},
                {"launches", static_cast<int64_t>(l.launches)},
                {"gpu_shorter_than_launch", static_cast<int64_t>(l.short_gpu)},
                {"gpu_shorter_than_launch_share",
                 l.launches > 0 ? static_cast<double>(l.short_gpu) / l.launches : 0.0},
                {"launch_runtime_outliers", static_cast<int64_t>(l.runtime_outliers)},
                {"launch_delay_outliers", static_cast<int64_t>(l.delay_outliers)}};
  std::vector<KernelLaunchDelay> top = TopLaunchDelays(l, kLaunchBoundTopKernels);
  for (size_t i = 0; i < top.size(); ++i) {
    f.evidence.push_back({fmt::format("top_kernel_{}", i + 1), top[i].name});
    f.evidence.push_back(
        {fmt::format("top_kernel_{}_launches", i + 1), static_cast<int64_t>(top[i].launches)});
    f.evidence.push_back({fmt::format("top_kernel_{}_delay_p50_us", i + 1), top[i].p50_us});
  }
  f.evidence.push_back({"steps", StepsText(r)});
  f.evidence.push_back({"trace", r.path});
  f.next = fmt::format(
      "fewer, larger kernels: CUDA graphs (torch.compile(mode=\"reduce-overhead\")), fused "
      "optimizers (foreach/fused=True), a larger batch{}",
      top.empty() ? std::string()
                  : "; start with " + top[0].name.substr(0, 80) + ", launched " +
                        std::to_string(top[0].launches) + " times");
  return std::pair{std::move(f), 100 - busy_pct};
}

std::optional<std::pair<Finding, double>> InputBound(const TraceRankBreakdown& r) {
  double loader = 0;
  const TraceStepFigures* worst = nullptr;
  for (const TraceStepFigures& s : r.step_figures) {
    loader += s.loader_us;
    if (worst == nullptr || s.loader_us > worst->loader_us) worst = &s;
  }
  const double step_share = loader / std::max(1.0, StepTime(r));
  const double path_share =
      r.critical_path
          ? r.critical_path->summary_pct[static_cast<int>(CriticalBound::kDataLoading)] / 100
          : 0;
  const double share = std::max(step_share, path_share);
  if (share < kInputBoundWarningFraction || (loader <= 0 && path_share <= 0)) return std::nullopt;
  Finding f;
  f.id = "io.input_bound";
  f.layer = Layer::kIo;
  f.severity = share >= kInputBoundCriticalFraction ? Severity::kCritical : Severity::kWarning;
  f.summary = fmt::format("rank {} waits {:.1f}% of its {} for the data loader's next batch ({})",
                          r.rank, share * 100,
                          step_share >= path_share ? "steps' time" : "critical path", StepsText(r));
  f.evidence = {{"rank", static_cast<int64_t>(r.rank)},
                {"source", std::string("trace")},
                {"event", std::string("enumerate(DataLoader)...__next__")},
                {"data_wait_fraction", share}};
  if (worst != nullptr && loader > 0) {
    f.evidence.push_back({"worst_step", worst->step});
    f.evidence.push_back({"worst_step_wait_ms", worst->loader_us / 1000});
  }
  if (r.critical_path) f.evidence.push_back({"critical_path_data_loading_fraction", path_share});
  f.evidence.push_back({"trace", r.path});
  f.next =
      "stallscope run -- CMD finds what the loader waits on (CPU, disk, workers); raise "
      "DataLoader num_workers and prefetch_factor";
  return std::pair{std::move(f), share};
}

std::string PathName(const CriticalPath& p) {
  if (p.annotation.empty()) return "the whole trace";
  return p.first_instance == p.last_instance
             ? fmt::format("{} instance {}", p.annotation, p.first_instance)
             : fmt::format("{} instances {}:{}", p.annotation, p.first_instance, p.last_instance);
}

std::optional<std::pair<Finding, double>> CpuBoundPath(const TraceRankBreakdown& r) {
  if (!r.critical_path || !r.temporal || r.critical_path->total_us <= 0) return std::nullopt;
  const CriticalPath& p = *r.critical_path;
  const double pct = p.summary_pct[static_cast<int>(CriticalBound::kCpu)];
  if (pct < kCpuBoundPathWarningPercent) return std::nullopt;
  Finding f;
  f.id = "code.cpu_bound_step";
  f.layer = Layer::kCode;
  f.severity = pct >= kCpuBoundPathCriticalPercent ? Severity::kCritical : Severity::kWarning;
  f.summary = fmt::format(
      "rank {}: {:.1f}% of the critical path over {} ({:.1f} ms) is CPU work: the GPU waits on "
      "the host's ops",
      r.rank, pct, PathName(p), p.total_us / 1000);
  std::string ops;
  for (const CriticalOp& op : p.top_cpu_ops)
    ops += fmt::format("{}{} ({:.1f} ms)", ops.empty() ? "" : ", ", op.name, op.us / 1000);
  f.evidence = {{"rank", static_cast<int64_t>(r.rank)},
                {"source", std::string("trace")},
                {"critical_path_us", p.total_us},
                {"cpu_bound_pct", pct},
                {"top_cpu_ops", ops},
                {"trace", r.path}};
  f.next = fmt::format(
      "make these CPU ops cheaper or take them off the path: {}; then fewer, larger ops "
      "(torch.compile, CUDA graphs, fused optimizers) or the work moved into the data loader",
      ops.empty() ? "see the trace" : ops);
  return std::pair{std::move(f), pct};
}

// With the collectives split (`rank`: this rank's wait and transfer): the
// exposed transfer, and the time of its kernels matched in no collective.
std::optional<std::pair<Finding, double>> CommRatio(const TraceRankBreakdown& r,
                                                    const RankSplit* rank) {
  if (rank == nullptr && r.comm_us <= 0) return std::nullopt;
  double wall = StepTime(r);
  std::string basis = "the steps' time";
  if (wall <= 0 && r.temporal) {
    wall = r.temporal->kernel_time_us;
    basis = "the GPU's active window";
  }
  if (wall <= 0) return std::nullopt;
  // waiting for the last rank is no network time
  if (rank != nullptr && rank->wait_us > rank->transfer_us) return std::nullopt;
  double exposed = rank != nullptr ? rank->exposed_us : r.comm_exposed_us;
  double ratio = exposed / wall;
  if (ratio < kCommRatioHigh) return std::nullopt;
  Finding f;
  f.id = "network.comm_ratio_high";
  f.layer = Layer::kNetwork;
  f.severity = ratio >= kCommRatioCritical ? Severity::kCritical : Severity::kWarning;
  f.summary = fmt::format(
      "rank {} spends {:.0f}% of {} {} that no compute overlaps ({})", r.rank, ratio * 100, basis,
      rank != nullptr ? "moving data in collectives (its wait for the last rank left out)"
                      : "in communication kernels",
      StepsText(r));
  f.evidence = {{"rank", static_cast<int64_t>(r.rank)},
                {"source", std::string("trace")},
                {"comm_ratio", ratio},
                {"comm_us", r.comm_us},
                {"comm_exposed_us", r.comm_exposed_us},
                {"comm_comp_overlap_pct", r.comm_comp_overlap_pct.value_or(0)},
                {"basis", basis}};
  if (rank != nullptr) {
    f.evidence.push_back({"wait_us", rank->wait_us});
    f.evidence.push_back({"transfer_us", rank->transfer_us});
    f.evidence.push_back({"transfer_exposed_us", rank->transfer_exposed_us});
    f.evidence.push_back({"unmatched_exposed_us", rank->unmatched_exposed_us});
  } else {
    f.evidence.push_back({"split", std::string("none: no other rank's collectives to match")});
  }
  f.evidence.push_back({"trace", r.path});
  f.next =
      "overlap the all-reduce with backward (DDP bucket_cap_mb, FSDP prefetch), or "
      "accumulate gradients over more steps; stallscope bench allreduce measures the fabric";
  return std::pair{std::move(f), ratio};
}

void Straggler(const std::vector<TraceRankBreakdown>& ranks, std::vector<Finding>& out) {
  std::vector<const TraceRankBreakdown*> with;
  for (const TraceRankBreakdown& r : ranks) {
    if (r.temporal && r.temporal->compute_us > 0) with.push_back(&r);
  }
  if (with.size() < 2) return;
  const TraceRankBreakdown* slow =
      *std::max_element(with.begin(), with.end(), [](const auto* a, const auto* b) {
        return a->temporal->compute_us < b->temporal->compute_us;
      });
  std::vector<double> others, others_comm;
  for (const auto* r : with) {
    if (r == slow) continue;
    others.push_back(r->temporal->compute_us);
    others_comm.push_back(r->comm_us);
  }
  double typical = Median(others);
  if (typical <= 0) return;
  double excess = slow->temporal->compute_us / typical - 1;
  if (excess < kStragglerStepFraction) return;
  Finding f;
  f.id = "distributed.straggler";
  f.layer = Layer::kDistributed;
  f.severity = excess >= kStragglerCriticalFraction ? Severity::kCritical : Severity::kWarning;
  f.summary = fmt::format(
      "rank {} computes {:.0f}% longer than the other ranks' median over "
      "their traces; they wait for it in their collectives",
      slow->rank, excess * 100);
  f.evidence = {{"rank", static_cast<int64_t>(slow->rank)},
                {"source", std::string("trace")},
                {"compute_us", slow->temporal->compute_us},
                {"others_median_compute_us", typical},
                {"rank_comm_us", slow->comm_us},
                {"others_median_comm_us", Median(others_comm)},
                {"ranks_compared", static_cast<int64_t>(with.size())},
                {"trace", slow->path}};
  f.next = fmt::format(
      "what differs on rank {}: its GPU (clocks, throttling: stallscope "
      "snapshot on its host), its data share, or its input",
      slow->rank);
  out.push_back(std::move(f));
}

// What to look at for each cause of a late arrival.
std::string StragglerNext(const TraceStraggler& s) {
  if (s.cause == "compute") {
    return fmt::format(
        "rank {} computes longer before its collectives{}: its GPU (clocks, throttling: "
        "stallscope snapshot on its host), its share of the work (uneven shards, sequence "
        "lengths)",
        s.rank, s.cause_detail.empty() ? "" : " (" + s.cause_detail.substr(0, 80) + ")");
  }
  if (s.cause == "input") {
    return fmt::format(
        "rank {} waits for its data loader before its collectives: stallscope run -- CMD finds "
        "what the loader waits on; raise DataLoader num_workers and prefetch_factor",
        s.rank);
  }
  if (s.cause == "sync") {
    return fmt::format("rank {} blocks on {} before its collectives: take the sync off the path",
                       s.rank, s.cause_detail.empty() ? "a sync" : s.cause_detail);
  }
  if (s.cause == "host_launch") {
    return fmt::format(
        "rank {}'s host is late to launch its work{}: CPU contention on its host (stallscope "
        "snapshot), its Python-side work, or fewer larger launches (CUDA graphs)",
        s.rank,
        s.cause_detail.empty() ? "" : " (longest op: " + s.cause_detail.substr(0, 80) + ")");
  }
  if (s.cause == "late_step_start") {
    return fmt::format(
        "rank {} {}: profile the steps before (a longer --step-range, or the previous step "
        "kept) or run it under stallscope run, which times every step",
        s.rank, s.cause_detail);
  }
  return fmt::format(
      "what rank {} does before its collectives: stallscope trace --json lists "
      "each collective's arrivals",
      s.rank);
}

// Whether HTA's potential stragglers name the same rank, or why not.
void CompareWithHta(const TraceStraggler& s, const PotentialStragglers* hta, Finding& f) {
  if (hta == nullptr) return;
  std::string list = RanksText(hta->ranks);
  f.evidence.push_back({"hta_potential_stragglers", list.empty() ? std::string("none") : list});
  bool agrees = std::find(hta->ranks.begin(), hta->ranks.end(), s.rank) != hta->ranks.end();
  f.evidence.push_back({"agrees_with_hta", std::string(agrees ? "yes" : "no")});
  if (agrees) return;
  f.evidence.push_back(
      {"hta_differs_because",
       hta->ranks.empty()
           ? "HTA names none: " + hta->why_none
           : fmt::format("HTA counts, per step, the {} latest ranks to start {} on stream {}, "
                         "however little late; stallscope weighs each collective's last "
                         "arrival by the wait it costs the others",
                         hta->ranks.size(), hta->kernel.substr(0, 80), hta->stream)});
}

// distributed.straggler from the collectives matched across ranks.
void StragglerFromArrivals(const CollectiveSplit& split, const PotentialStragglers* hta,
                           std::vector<Finding>& out) {
  if (split.stragglers.empty()) return;
  const TraceStraggler& s = split.stragglers.front();
  const CollectiveInstance& worst = split.collectives[s.worst];
  std::vector<int> all;
  for (const TraceStraggler& t : split.stragglers) all.push_back(t.rank);
  std::vector<int> others(s.late_ranks);
  others.erase(std::remove(others.begin(), others.end(), s.rank), others.end());
  Finding f;
  f.id = "distributed.straggler";
  f.layer = Layer::kDistributed;
  f.severity = s.share >= kStragglerCriticalFraction ? Severity::kCritical : Severity::kWarning;
  f.summary = fmt::format(
      "rank {} arrives last in {} of its {} collectives, up to {:.1f} ms after the first "
      "rank{}; the others wait {:.1f} ms for it, {:.0f}% of the steps' time{}",
      s.rank, s.last_in, s.of, s.lateness_max_us / 1000,
      others.empty() ? "" : fmt::format(" (ranks {} nearly as late)", RanksText(others)),
      s.caused_wait_us / 1000, s.share * 100,
      s.cause.empty() ? "" : fmt::format("; cause: {}", s.cause));
  f.evidence = {
      {"rank", static_cast<int64_t>(s.rank)},
      {"source", std::string("trace")},
      {"basis", std::string("collective arrivals")},
      {"last_in", static_cast<int64_t>(s.last_in)},
      {"collectives", static_cast<int64_t>(s.of)},
      {"lateness_p50_us", s.lateness_p50_us},
      {"lateness_max_us", s.lateness_max_us},
      {"others_wait_us", s.caused_wait_us},
      {"share_of_steps", s.share},
      {"cause", s.cause.empty() ? std::string("unknown") : s.cause},
      {"cause_detail", s.cause_detail},
      {"cause_excess_us", s.cause_excess_us},
      {"worst_step", worst.step},
      {"worst_collective",
       fmt::format("#{} {} ({})", worst.seq,
                   worst.collective.empty() ? worst.kernel.substr(0, 60) : worst.collective,
                   worst.communicator)},
      {"late_ranks", RanksText(s.late_ranks)},
      {"stragglers", RanksText(all)},
      {"clock", split.clock},
      {"end_spread_p50_us", split.spread_p50_us}};
  CompareWithHta(s, hta, f);
  f.next = StragglerNext(s);
  out.push_back(std::move(f));
}

}  // namespace

FindingsWithNotes CheckTraces(const std::vector<TraceRankBreakdown>& ranks,
                              const CollectiveSplit* split, const PotentialStragglers* hta) {
  FindingsWithNotes out;
  const bool matched = split != nullptr && split->Matched();
  OverRanks(ranks, out.findings, PageableH2d);
  OverRanks(ranks, out.findings, InputBound);
  OverRanks(ranks, out.findings, [&](const TraceRankBreakdown& r) {
    return CommRatio(r, matched ? split->Of(r.rank) : nullptr);
  });
  if (matched) {
    StragglerFromArrivals(*split, hta, out.findings);
  } else {
    Straggler(ranks, out.findings);
  }
  OverRanks(ranks, out.findings, SyncInStep);
  OverRanks(ranks, out.findings, GpuIdle);
  OverRanks(ranks, out.findings, LaunchBound);
  OverRanks(ranks, out.findings, CpuBoundPath);
  for (Finding& f : out.findings) {
    if (!FromTrace(f)) f.evidence.insert(f.evidence.begin() + 1, {"source", std::string("trace")});
  }
  bool any_steps = false, any_gpu = false;
  for (const TraceRankBreakdown& r : ranks) {
    any_steps |= !r.step_figures.empty();
    any_gpu |= r.temporal.has_value();
  }
  if (!any_steps) {
    out.notes.push_back(
        "no ProfilerStep in the traces: the per-step findings (syncs, the data loader, pageable "
        "copies) were not judged; profile with torch.profiler.schedule and prof.step()");
  }
  if (!any_gpu) {
    out.notes.push_back("no GPU events in the traces: the GPU-side findings were not judged");
  }
  return out;
}

bool FromTrace(const Finding& f) {
  for (const Evidence& e : f.evidence) {
    if (e.name == "source") {
      const std::string* v = std::get_if<std::string>(&e.value);
      return v != nullptr && *v == "trace";
    }
  }
  return false;
}

void MergeTraceFinding(std::vector<Finding>& findings, Finding from_trace) {
  MergeFinding(findings, std::move(from_trace), "trace", "hook");
}

}  // namespace stallscope
