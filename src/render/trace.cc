#include "render/trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <variant>

#include "core/version.h"
#include "render/trace_collectives.h"

namespace stallscope {
namespace {

using Json = nlohmann::ordered_json;

Json Nullable(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }

double Pct(double part, double whole) { return whole > 0 ? part / whole * 100 : 0; }

Json CriticalPathJson(const CriticalPath& p) {
  Json by_bound = Json::object(), pct = Json::object();
  for (int b = 0; b < kCriticalBounds; ++b) {
    const std::string name(CriticalBoundName(static_cast<CriticalBound>(b)));
    by_bound[name] = p.by_bound_us[b];
    pct[name] = p.summary_pct[b];
  }
  Json ops = Json::array();
  for (const CriticalOp& op : p.top_cpu_ops) ops.push_back({{"name", op.name}, {"us", op.us}});
  return {{"annotation", p.annotation},
          {"instance", p.first_instance == p.last_instance
                           ? std::to_string(p.first_instance)
                           : fmt::format("{}:{}", p.first_instance, p.last_instance)},
          {"nodes", p.nodes},
          {"total_us", p.total_us},
          {"by_bound_us", by_bound},
          {"summary_pct", pct},
          {"top_cpu_ops", ops}};
}

std::string CriticalPathText(const CriticalPath& p) {
  std::string out = fmt::format("  critical path ({} {}): {:.1f} ms",
                                p.annotation.empty() ? "whole trace" : p.annotation,
                                p.first_instance == p.last_instance
                                    ? fmt::format("#{}", p.first_instance)
                                    : fmt::format("#{}:{}", p.first_instance, p.last_instance),
                                p.total_us / 1000);
  for (int b = 0; b < kCriticalBounds; ++b) {
    if (p.summary_pct[b] >= 0.05)
      out += fmt::format(", {} {:.1f}%", CriticalBoundName(static_cast<CriticalBound>(b)),
                         p.summary_pct[b]);
  }
  out += "\n";
  for (const CriticalOp& op : p.top_cpu_ops) {
    std::string name = op.name.size() > 60 ? op.name.substr(0, 59) + "~" : op.name;
    out += fmt::format("    {:>12} cpu on the path  {}\n", fmt::format("{:.1f} ms", op.us / 1000),
                       name);
  }
  return out;
}

Json LaunchesJson(const LaunchStats& l) {
  Json kernels = Json::array();
  for (const KernelLaunchDelay& k : l.kernels) {
    kernels.push_back({{"name", k.name},
                       {"launches", k.launches},
                       {"delay_p50_us", k.p50_us},
                       {"delay_p99_us", k.p99_us},
                       {"delay_sum_us", k.sum_us}});
  }
  return {{"runtime_cutoff_us", kLaunchRuntimeCutoffUs},
          {"launch_delay_cutoff_us", kLaunchDelayCutoffUs},
          {"launches", l.launches},
          {"gpu_shorter_than_launch", l.short_gpu},
          {"runtime_outliers", l.runtime_outliers},
          {"launch_delay_outliers", l.delay_outliers},
          {"launch_call_us", l.cpu_us},
          {"gpu_us", l.gpu_us},
          {"kernels", kernels}};
}

Json AnnotationsJson(const std::vector<UserAnnotationTime>& list) {
  Json out = Json::array();
  for (const UserAnnotationTime& a : list) {
    out.push_back({{"name", a.name},
                   {"count", a.count},
                   {"sum_us", a.sum_us},
                   {"mean_us", a.mean_us},
                   {"min_us", a.min_us},
                   {"max_us", a.max_us},
                   {"std_us", a.std_us}});
  }
  return out;
}

Json RankJson(const TraceRankBreakdown& r) {
  Json j;
  j["rank"] = r.rank;
  j["rank_known"] = r.rank_known;
  j["world_size"] = r.world_size ? Json(*r.world_size) : Json(nullptr);
  j["gpu"] = r.gpu;
  j["trace"] = r.path;
  j["format"] = r.legacy ? "autograd_legacy" : "kineto";
  j["steps"] = r.steps;
  j["last_step_dropped"] = r.last_step_dropped;
  j["gpu_rows"] = r.gpu_rows;
  if (r.temporal) {
    const TemporalBreakdown& t = *r.temporal;
    j["temporal"] = {{"idle_us", t.idle_us},
                     {"compute_us", t.compute_us},
                     {"non_compute_us", t.non_compute_us},
                     {"kernel_time_us", t.kernel_time_us},
                     {"idle_pct", t.idle_pct},
                     {"compute_pct", t.compute_pct},
                     {"non_compute_pct", t.non_compute_pct}};
  } else {
    j["temporal"] = nullptr;
  }
  j["comm_comp_overlap_pct"] = Nullable(r.comm_comp_overlap_pct);
  Json streams = Json::array();
  for (const StreamIdle& s : r.idle_streams) {
    double idle = s.host_wait_us + s.kernel_wait_us + s.other_us;
    streams.push_back({{"stream", s.stream},
                       {"idle_us", idle},
                       {"host_wait_us", s.host_wait_us},
                       {"kernel_wait_us", s.kernel_wait_us},
                       {"other_us", s.other_us},
                       {"host_wait_pct", Pct(s.host_wait_us, idle)},
                       {"kernel_wait_pct", Pct(s.kernel_wait_us, idle)},
                       {"other_pct", Pct(s.other_us, idle)},
                       {"gaps", s.gaps}});
  }
  const IdleCauses& c = r.idle_causes;
  j["idle_breakdown"] = {{"streams", streams},
                         {"gpu_idle_while",
                          {{"host_launch_us", c.host_launch_us},
                           {"data_loader_us", c.data_loader_us},
                           {"sync_us", c.sync_us}}},
                         {"gaps_over_500ms", c.long_gaps},
                         {"longest_gap_us", c.longest_gap_us}};
  double typed = 0;
  for (const KernelTypeTime& k : r.kernel_types) typed += k.us;
  Json types = Json::array();
  for (const KernelTypeTime& k : r.kernel_types) {
    types.push_back({{"type", k.label}, {"us", k.us}, {"pct", Pct(k.us, typed)}});
  }
  j["kernel_types"] = types;
  Json kernels = Json::array();
  for (size_t i = 0; i < r.kernels.size() && i < kTraceTopKernels; ++i) {
    const KernelStats& k = r.kernels[i];
    kernels.push_back({{"name", k.name},
                       {"type", KernelTypeName(k.type)},
                       {"count", k.count},
                       {"sum_us", k.sum_us},
                       {"mean_us", k.mean_us},
                       {"min_us", k.min_us},
                       {"max_us", k.max_us},
                       {"std_us", k.std_us}});
  }
  j["top_kernels"] = kernels;
  j["kernel_names"] = r.kernels.size();
  Json copies = Json::array();
  for (const CopyStats& s : r.copies) {
    copies.push_back({{"kind", s.kind},
                      {"count", s.count},
                      {"time_us", s.time_us},
                      {"mean_gbps", s.mean_gbps},
                      {"min_gbps", s.min_gbps},
                      {"max_gbps", s.max_gbps},
                      {"std_gbps", Nullable(s.std_gbps)},
                      {"p25_gbps", s.p25_gbps},
                      {"p50_gbps", s.p50_gbps},
                      {"p75_gbps", s.p75_gbps}});
  }
  j["copies"] = copies;
  Json queues = Json::array();
  for (const StreamQueueLength& q : r.queue_length.streams) {
    Json one = {{"stream", q.stream},     {"count", q.count}, {"mean", q.mean},
                {"std", Nullable(q.std)}, {"min", q.min},     {"p25", q.p25},
                {"p50", q.p50},           {"p75", q.p75},     {"max", q.max}};
    const bool blocked = r.queue_length.blocked && r.queue_length.blocked->stream == q.stream;
    one["blocked_on_full_queue_us"] = blocked ? r.queue_length.blocked->us : 0.0;
    one["blocked_on_full_queue_share"] = blocked ? r.queue_length.blocked->share : 0.0;
    queues.push_back(one);
  }
  j["queue_length"] = queues;
  if (r.critical_path) j["critical_path"] = CriticalPathJson(*r.critical_path);
  j["launches"] = LaunchesJson(r.launches);
  j["user_annotations"] = AnnotationsJson(r.user_annotations);
  Json steps = Json::array();
  for (const TraceStepFigures& s : r.step_figures) {
    steps.push_back({{"step", s.step},
                     {"dur_us", s.dur_us},
                     {"sync_us", s.sync_us},
                     {"sync_op", s.sync_op},
                     {"data_loader_us", s.loader_us},
                     {"pageable_h2d_us", s.pageable_h2d_us},
                     {"kernels", s.kernels},
                     {"short_kernels", s.short_kernels}});
  }
  j["step_figures"] = steps;
  return j;
}

std::string Ms(double us) { return fmt::format("{:.1f} ms", us / 1000); }

std::string StragglersText(const PotentialStragglers& s, const Report& report) {
  std::string out;
  if (s.ranks.empty()) {
    out = fmt::format("\npotential stragglers (HTA): none: {}\n", s.why_none);
  } else {
    std::string list;
    for (int r : s.ranks) list += (list.empty() ? "" : ", ") + std::to_string(r);
    std::string kernel = s.kernel.size() > 60 ? s.kernel.substr(0, 59) + "~" : s.kernel;
    out = fmt::format(
        "\npotential stragglers (HTA): rank{} {}: latest to start {} (stream {}) "
        "over {} step{}\n",
        s.ranks.size() == 1 ? "" : "s", list, kernel, s.stream, s.steps, s.steps == 1 ? "" : "s");
  }
  std::string why = StragglerAgreement(s, report);
  if (!why.empty()) out += "  " + why + "\n";
  return out;
}

std::string LaunchesText(const LaunchStats& l) {
  if (l.launches == 0) return "";
  std::string out = fmt::format(
      "  launches: {}; GPU shorter than its launch: {}; launch over {:.0f} us: {}; "
      "delay over {:.0f} us: {}\n",
      l.launches, l.short_gpu, kLaunchRuntimeCutoffUs, l.runtime_outliers, kLaunchDelayCutoffUs,
      l.delay_outliers);
  for (const KernelLaunchDelay& k : TopLaunchDelays(l, 3)) {
    std::string name = k.name.size() > 60 ? k.name.substr(0, 59) + "~" : k.name;
    out += fmt::format("    delay p50 {:>8.1f} us  p99 {:>8.1f} us  x{:<6} {}\n", k.p50_us,
                       k.p99_us, k.launches, name);
  }
  return out;
}

}  // namespace

std::string StragglerAgreement(const PotentialStragglers& stragglers, const Report& report) {
  std::optional<int64_t> finding_rank;
  bool by_arrivals = false;
  for (const Finding& f : report.findings) {
    if (f.id != "distributed.straggler") continue;
    for (const Evidence& e : f.evidence) {
      if (e.name == "rank" && std::holds_alternative<int64_t>(e.value)) {
        finding_rank = std::get<int64_t>(e.value);
      }
      if (e.name == "basis") by_arrivals = true;  // "collective arrivals"
    }
  }
  const auto& list = stragglers.ranks;
  if (!finding_rank) {
    if (list.empty() || stragglers.late_counts.size() < 2) return "";
    return fmt::format(
        "distributed.straggler names no rank: no rank holds the others back 15% of the steps' "
        "time; HTA's analysis always names the {} latest starters of {}, late or not",
        list.size(), stragglers.kernel);
  }
  if (std::find(list.begin(), list.end(), *finding_rank) != list.end()) return "";
  const std::string by = by_arrivals ? "as the last to arrive at its collectives, weighed by "
                                       "the others' wait"
                                     : "by its compute time";
  if (list.empty()) {
    return fmt::format("distributed.straggler names rank {} {}; HTA's analysis names none: {}",
                       *finding_rank, by, stragglers.why_none);
  }
  return fmt::format(
      "distributed.straggler names rank {} {}; HTA's analysis counts how often a rank is "
      "among the latest to start {}, however little late",
      *finding_rank, by, stragglers.kernel);
}

Json StragglersJson(const PotentialStragglers& s, const Report& report) {
  Json counts = Json::array();
  for (const auto& [rank, n] : s.late_counts) counts.push_back({{"rank", rank}, {"late_steps", n}});
  return {{"ranks", s.ranks},
          {"stream", s.ranks.empty() ? Json(nullptr) : Json(s.stream)},
          {"kernel", s.ranks.empty() ? Json(nullptr) : Json(s.kernel)},
          {"steps", s.steps},
          {"late_counts", counts},
          {"why_none", s.why_none.empty() ? Json(nullptr) : Json(s.why_none)},
          {"versus_straggler_finding", StragglerAgreement(s, report)}};
}

Json TraceToJson(const std::vector<TraceRankBreakdown>& ranks, const ReportHeader& header,
                 const Report& report, const PotentialStragglers& stragglers,
                 const CollectiveSplit& split) {
  Json report_json = ReportToJson(header, report);
  Json out;
  out["schema"] = "stallscope.trace/1";
  out["version"] = Version();
  out["command"] = header.command;
  out["host"] = header.hostname;
  out["time"] = header.time_utc;
  Json list = Json::array();
  for (const TraceRankBreakdown& r : ranks) {
    Json one = RankJson(r);
    one["comm_kernels"] = CommKernelsJson(r.comm_kernels);
    one["collectives"] = RankCollectivesJson(split, r.rank);
    list.push_back(std::move(one));
  }
  out["ranks"] = list;
  out["potential_stragglers"] = stragglers.ranks;
  out["potential_stragglers_detail"] = StragglersJson(stragglers, report);
  out["collectives"] = CollectivesJson(split);
  out["verdict"] = report_json["verdict"];
  out["layers"] = report_json["layers"];
  out["findings"] = report_json["findings"];
  out["notes"] = report_json["notes"];
  return out;
}

std::string RenderTraceText(const std::vector<TraceRankBreakdown>& ranks,
                            const ReportHeader& header, const Report& report,
                            const PotentialStragglers& stragglers, const CollectiveSplit& split) {
  std::string out =
      fmt::format("stallscope trace: {} rank{}\n\n", ranks.size(), ranks.size() == 1 ? "" : "s");
  out += fmt::format("{:>5}  {:<24} {:>8} {:>10} {:>7} {:>8} {:>12} {:>9}  {}\n", "rank", "gpu",
                     "steps", "window", "idle%", "compute%", "non-compute%", "overlap%", "trace");
  for (const TraceRankBreakdown& r : ranks) {
    std::string steps =
        r.steps.empty() ? "-"
                        : fmt::format("#{}-{}", *std::min_element(r.steps.begin(), r.steps.end()),
                                      *std::max_element(r.steps.begin(), r.steps.end()));
    std::string gpu = r.gpu.empty() ? (r.legacy ? "(CPU trace)" : "-") : r.gpu;
    if (gpu.size() > 24) gpu = gpu.substr(0, 23) + "~";
    if (r.temporal) {
      const TemporalBreakdown& t = *r.temporal;
      out += fmt::format(
          "{:>5}  {:<24} {:>8} {:>10} {:>7.2f} {:>8.2f} {:>12.2f} {:>9}  {}\n", r.rank, gpu, steps,
          Ms(t.kernel_time_us), t.idle_pct, t.compute_pct, t.non_compute_pct,
          r.comm_comp_overlap_pct ? fmt::format("{:.2f}", *r.comm_comp_overlap_pct) : "-", r.path);
    } else {
      out += fmt::format("{:>5}  {:<24} {:>8} {:>10} {:>7} {:>8} {:>12} {:>9}  {}\n", r.rank, gpu,
                         steps, "-", "-", "-", "-", "-", r.path);
    }
  }
  for (const TraceRankBreakdown& r : ranks) {
    if (r.kernel_types.empty() && r.copies.empty()) continue;
    out += fmt::format("\nrank {}:\n", r.rank);
    double typed = 0;
    for (const KernelTypeTime& k : r.kernel_types) typed += k.us;
    for (const KernelTypeTime& k : r.kernel_types) {
      out += fmt::format("  {:<56} {:>12} {:>6.1f}%\n", k.label, Ms(k.us), Pct(k.us, typed));
    }
    size_t shown = std::min<size_t>(5, r.kernels.size());
    if (shown > 0) out += "  top kernels (summed time):\n";
    for (size_t i = 0; i < shown; ++i) {
      const KernelStats& k = r.kernels[i];
      std::string name = k.name.size() > 60 ? k.name.substr(0, 59) + "~" : k.name;
      out += fmt::format("    {:>12} x{:<6} {:<14} {}\n", Ms(k.sum_us), k.count,
                         KernelTypeName(k.type), name);
    }
    for (const CopyStats& c : r.copies) {
      out += fmt::format("  {:<12} {:>6} ops {:>12}  {:.1f} GB/s mean (p50 {:.1f}, max {:.1f})\n",
                         c.kind, c.count, Ms(c.time_us), c.mean_gbps, c.p50_gbps, c.max_gbps);
    }
    if (r.critical_path && r.critical_path->total_us > 0) out += CriticalPathText(*r.critical_path);
    out += LaunchesText(r.launches);
  }
  if (ranks.size() > 1) out += CollectivesText(split) + StragglersText(stragglers, report);
  out += "\n";
  for (const LayerStatus& l : report.layers) {
    for (const Finding& f : report.findings) {
      if (f.layer == l.layer) out += FindingText(f, /*with_next=*/true);
    }
  }
  out += VerdictText(report, "nothing in the traces holds the job back");
  for (const std::string& note : report.notes) out += fmt::format("note: {}\n", note);
  (void)header;
  return out;
}

}  // namespace stallscope
