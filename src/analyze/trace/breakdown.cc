#include "analyze/trace/breakdown.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <future>
#include <limits>
#include <map>
#include <unordered_map>

#include "core/text.h"

namespace stallscope {
namespace {

using Interval = TimeSpan;

double Round2(double v) { return std::round(v * 100) / 100; }

bool StartsWithAny(std::string_view name, std::initializer_list<std::string_view> prefixes) {
  for (std::string_view p : prefixes) {
    if (StartsWith(name, p)) return true;
  }
  return false;
}

// A row as the analyses see it: HTA's rounded times and its event.
using Row = KeptGpuRow;

// pandas' describe() of the bandwidth's values above zero.
void DescribeBandwidth(std::vector<double> values, CopyStats& c) {
  if (values.empty()) return;
  const auto n = static_cast<double>(values.size());
  double sum = 0;
  for (double v : values) sum += v;
  c.mean_gbps = sum / n;
  if (values.size() > 1) {
    double sq = 0;
    for (double v : values) sq += (v - c.mean_gbps) * (v - c.mean_gbps);
    c.std_gbps = std::sqrt(sq / (n - 1));
  }
  std::sort(values.begin(), values.end());
  c.min_gbps = values.front();
  c.max_gbps = values.back();
  c.p25_gbps = LinearQuantile(values, 0.25);
  c.p50_gbps = LinearQuantile(values, 0.5);
  c.p75_gbps = LinearQuantile(values, 0.75);
}

}  // namespace

Result<TraceStepRange> ParseTraceStepRange(std::string_view text) {
  size_t colon = text.find(':');
  std::optional<int64_t> a, b;
  if (colon != std::string_view::npos) {
    a = ParseInt(text.substr(0, colon));
    b = ParseInt(text.substr(colon + 1));
  }
  if (!a || !b || *a < 0 || *b < *a) {
    return Status::InvalidArgument("--step-range " + std::string(text) +
                                   ": expected A:B, the first and last step (inclusive), "
                                   "A <= B, e.g. 10:19");
  }
  return TraceStepRange{*a, *b};
}

KernelType KernelTypeOf(std::string_view name) {
  if (StartsWithAny(name, {"nccl", "hip", "hccl"}) || name.find("ncclKernel") != name.npos) {
    return KernelType::kCommunication;
  }
  if (StartsWithAny(name, {"Memcpy", "Memset", "hipMemcpy", "hipMemset", "dma"})) {
    return KernelType::kMemory;
  }
  bool launch = false;  // cuda...LaunchKernel anywhere in the name, as HTA's pattern finds it
  for (size_t at = name.find("cuda"); at != name.npos && !launch; at = name.find("cuda", at + 1)) {
    launch = name.find("LaunchKernel", at) != name.npos;
  }
  bool excluded =
      name.find("Memcpy") != name.npos || name.find("Memset") != name.npos ||
      name.find("dma") != name.npos || name.find("Sync") != name.npos ||
      StartsWith(name, "Stream Wait Event") || launch ||
      StartsWithAny(name, {"runFunction", "hip", "job_exe", "packet", "pe_exe", "cpum_exe_subgraph",
                           "hccl", "collective_subgraph_execution"});
  return excluded ? KernelType::kOther : KernelType::kComputation;
}

std::string_view KernelTypeName(KernelType type) {
  switch (type) {
    case KernelType::kCommunication:
      return "COMMUNICATION";
    case KernelType::kMemory:
      return "MEMORY";
    case KernelType::kComputation:
      return "COMPUTATION";
    case KernelType::kOther:
      return "OTHER";
  }
  return "OTHER";
}

Result<TraceRankBreakdown> BreakDownTrace(const TraceFile& trace, const TraceOptions& options) {
  TraceRankBreakdown out;
  out.path = trace.path;
  out.rank = trace.rank.value_or(0);
  out.rank_known = trace.rank.has_value();
  out.world_size = trace.world_size;
  out.gpu = TraceGpuName(trace);
  out.legacy = trace.legacy;
  const std::vector<TraceEvent>& events = trace.events;
  std::string why_not;  // of no critical path
  CriticalPathRequest request = options.critical_path;
  request.include_last_step = options.include_last_step;
  std::future<std::optional<CriticalPath>> path_beside;
  if (options.critical_path_beside && events.size() >= kCriticalPathBesideMinEvents) {
    path_beside =
        std::async(std::launch::async, [&] { return FindCriticalPath(trace, request, &why_not); });
  }
  auto name_of = [&](const TraceEvent& e) -> std::string_view { return trace.names[e.name]; };
  // HTA's rounding, when some ts is fractional: starts up, ends down.
  const bool round = trace.fractional_times;
  auto StartOf = [round](const TraceEvent& e) { return round ? std::ceil(e.ts) : e.ts; };
  auto EndOf = [round](const TraceEvent& e) {
    return round ? std::floor(e.ts + e.dur) : e.ts + e.dur;
  };

  // §1 of the definitions: which rows are the GPU's side of a launch.
  auto gpu_side = [&](const TraceEvent& e) {
    if (e.stream >= 0 && e.correlation >= 0) return true;
    std::string_view n = name_of(e);
    return n == "Event Sync" || n == "Context Sync";
  };

  // The steps: CPU-side ProfilerStep#N rows.
  // A gpu_user_annotation of the step (ROCm, some CUDA traces) counts for
  // HTA's filter, but the step's window on the host is the CPU one's.
  struct Step {
    int64_t number;
    double start, end;
    uint32_t name;
    bool gpu_annotation;
  };
  std::vector<Step> steps;
  for (const TraceEvent& e : events) {
    if (gpu_side(e)) continue;
    if (std::optional<int64_t> n = ProfilerStepNumber(name_of(e))) {
      steps.push_back({*n, StartOf(e), EndOf(e), e.name, e.cat == TraceCategory::kGpuAnnotation});
    }
  }
  std::vector<Step> host_steps;
  for (const Step& st : steps) {
    if (!st.gpu_annotation) host_steps.push_back(st);
  }
  if (host_steps.empty()) host_steps = steps;
  std::vector<uint32_t> step_names;
  for (const Step& s : steps) step_names.push_back(s.name);
  std::sort(step_names.begin(), step_names.end());
  step_names.erase(std::unique(step_names.begin(), step_names.end()), step_names.end());

  // Which CPU-side rows are kept: by their start.
  double keep_from = -std::numeric_limits<double>::infinity();
  double keep_before = std::numeric_limits<double>::infinity();  // exclusive
  bool keep_up_to_inclusive = false;
  bool filtering = false;
  std::vector<Step> kept_steps;
  if (options.steps) {
    for (const Step& s : host_steps) {
      if (s.number >= options.steps->first && s.number <= options.steps->last) {
        kept_steps.push_back(s);
      }
    }
    if (kept_steps.empty()) {
      std::string have = "no ProfilerStep at all";
      if (!steps.empty()) {
        auto [lo, hi] =
            std::minmax_element(steps.begin(), steps.end(),
                                [](const Step& a, const Step& b) { return a.number < b.number; });
        have = fmt::format("ProfilerStep#{} to #{}", lo->number, hi->number);
      }
      return Status::InvalidArgument(fmt::format("{}: no step in --step-range {}:{} (it has {})",
                                                 trace.path, options.steps->first,
                                                 options.steps->last, have));
    }
    filtering = true;
    keep_from = kept_steps.front().start;
    keep_before = kept_steps.front().end;
    for (const Step& s : kept_steps) {
      keep_from = std::min(keep_from, s.start);
      keep_before = std::max(keep_before, s.end);
    }
    keep_up_to_inclusive = true;
  } else if (step_names.size() >= 2) {
    filtering = true;
    if (options.include_last_step) {
      keep_before = steps.front().end;
      for (const Step& s : steps) keep_before = std::max(keep_before, s.end);
      keep_up_to_inclusive = true;
      kept_steps = host_steps;
    } else {
      double last = steps.front().start;
      for (const Step& s : steps) last = std::max(last, s.start);
      keep_before = last;
      for (const Step& s : host_steps) {
        if (s.start < last) kept_steps.push_back(s);
      }
      out.last_step_dropped = true;
    }
  } else {
    kept_steps = host_steps;
  }
  // Each mark a window of its own, in time order; a step marked twice (a
  // loader that ran out and was iterated again) is one step of both marks.
  std::sort(kept_steps.begin(), kept_steps.end(),
            [](const Step& a, const Step& b) { return a.start < b.start; });
  for (const Step& s : kept_steps) out.steps.push_back(s.number);
  std::sort(out.steps.begin(), out.steps.end());
  out.steps.erase(std::unique(out.steps.begin(), out.steps.end()), out.steps.end());
  auto cpu_kept = [&](double start) {
    if (!filtering) return true;
    if (start < keep_from) return false;
    return keep_up_to_inclusive ? start <= keep_before : start < keep_before;
  };

  // The kept CPU launches by correlation: how many, and the first's start.
  struct Launch {
    uint32_t count = 0;
    double start = 0;
  };
  std::unordered_map<int64_t, Launch> launches;
  std::vector<Row> cpu_rows;  // kept CPU-side rows with a role (syncs, the loader)
  std::vector<Row> rows;      // kept rows with a stream: the GPU's work
  for (const TraceEvent& e : events) {
    if (gpu_side(e)) continue;
    double start = StartOf(e);
    if (!cpu_kept(start)) continue;
    if (e.correlation >= 0) {
      Launch& l = launches[e.correlation];
      if (l.count++ == 0) l.start = start;
    }
    if (e.role != TraceCpuRole::kNone) cpu_rows.push_back({start, EndOf(e), &e});
    if (e.stream != -1) rows.push_back({start, EndOf(e), &e});  // a launcher with a stream
  }
  for (const TraceEvent& e : events) {
    if (!gpu_side(e)) continue;
    auto it = e.correlation >= 0 ? launches.find(e.correlation) : launches.end();
    uint32_t copies = 1;
    double launch = std::numeric_limits<double>::quiet_NaN();
    if (it != launches.end()) {
      copies = filtering ? it->second.count : 1;  // HTA's join duplicates only when filtering
      launch = it->second.start;
    } else if (filtering && e.correlation >= 0) {
      continue;  // its launch is not kept
    } else if (filtering && !cpu_kept(StartOf(e))) {
      continue;
    }
    if (e.stream == -1) continue;
    for (uint32_t k = 0; k < copies; ++k) rows.push_back({StartOf(e), EndOf(e), &e, launch});
  }
  out.gpu_rows = rows.size();
  if (trace.legacy) {
    out.notes.push_back(trace.path +
                        ": the legacy autograd-profiler format (PyTorch without Kineto): CPU ops "
                        "and steps only, no GPU figures");
  }
  if (!out.rank_known) {
    out.notes.push_back(trace.path + ": no distributedInfo.rank: taken as rank 0");
  }
  if (trace.skipped_events > 0) {
    out.notes.push_back(fmt::format("{}: {} of {} events lack a field (ts or name): skipped",
                                    trace.path, trace.skipped_events, trace.complete_events));
  }

  // Kernel types, one per name.
  std::vector<int8_t> type_of(trace.names.size(), -1);
  auto type = [&](const TraceEvent& e) {
    int8_t& t = type_of[e.name];
    if (t < 0) t = static_cast<int8_t>(KernelTypeOf(trace.names[e.name]));
    return static_cast<KernelType>(t);
  };

  std::vector<Interval> all, compute, comm, memory;
  for (const Row& r : rows) {
    all.push_back({r.start, r.end});
    switch (type(*r.event)) {
      case KernelType::kComputation:
        compute.push_back({r.start, r.end});
        break;
      case KernelType::kCommunication:
        comm.push_back({r.start, r.end});
        break;
      case KernelType::kMemory:
        memory.push_back({r.start, r.end});
        break;
      case KernelType::kOther:
        break;
    }
  }
  std::vector<Interval> busy = MergedSpans(std::move(all));
  std::vector<Interval> compute_u = MergedSpans(std::move(compute));
  std::vector<Interval> comm_u = MergedSpans(std::move(comm));
  std::vector<Interval> memory_u = MergedSpans(std::move(memory));

  if (!busy.empty()) {
    TemporalBreakdown t;
    double first = busy.front().start, last = busy.front().end;
    for (const Interval& i : busy) last = std::max(last, i.end);
    t.kernel_time_us = last - first;
    t.idle_us = t.kernel_time_us - Length(busy);
    t.compute_us = Length(compute_u);
    t.non_compute_us = t.kernel_time_us - t.idle_us - t.compute_us;
    if (t.kernel_time_us > 0) {
      t.idle_pct = Round2(t.idle_us / t.kernel_time_us * 100);
      t.compute_pct = Round2(t.compute_us / t.kernel_time_us * 100);
      t.non_compute_pct = Round2(t.non_compute_us / t.kernel_time_us * 100);
    }
    out.temporal = t;

    // The share of NVML-like sample windows (1/6 s) with any GPU work.
    constexpr double kWindowUs = 1e6 / 6;
    // (a window of more than ~1e13 µs, 115 days, is a trace of bad times:
    // no estimate rather than a count that overflows)
    uint64_t windows = t.kernel_time_us < 1e13
                           ? std::max<uint64_t>(1, std::ceil(t.kernel_time_us / kWindowUs))
                           : 0;
    int64_t seen = 0, marked = -1;
    for (const Interval& i : windows > 0 ? busy : std::vector<Interval>{}) {
      int64_t from = static_cast<int64_t>((i.start - first) / kWindowUs);
      int64_t to = std::min<int64_t>(static_cast<int64_t>((i.end - first) / kWindowUs),
                                     static_cast<int64_t>(windows) - 1);
      from = std::max(from, marked + 1);
      if (to >= from) {
        seen += to - from + 1;
        marked = to;
      }
    }
    if (windows > 0) out.busy_window_share = std::min(1.0, static_cast<double>(seen) / windows);
  } else if (!trace.legacy) {
    out.notes.push_back(trace.path +
                        ": no GPU rows (kernels, copies) in the steps kept: no GPU figures");
  }

  out.comm_us = Length(comm_u);
  if (out.comm_us > 0) {
    double both = IntersectionLength(compute_u, comm_u);
    out.comm_comp_overlap_pct = Round2(both / out.comm_us * 100);
    out.comm_exposed_us = out.comm_us - both;
  }

  // The kernel-type table: exclusive time with each set of types running.
  {
    struct Edge {
      double t;
      int delta;
      int type;
    };
    std::vector<Edge> edges;
    const std::vector<Interval>* unions[3] = {&compute_u, &comm_u, &memory_u};
    for (int k = 0; k < 3; ++k) {
      for (const Interval& i : *unions[k]) {
        edges.push_back({i.start, +1, k});
        edges.push_back({i.end, -1, k});
      }
    }
    std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) { return a.t < b.t; });
    std::map<int, double> by_mask;
    int active[3] = {0, 0, 0};
    for (size_t i = 0; i < edges.size(); ++i) {
      active[edges[i].type] += edges[i].delta;
      if (i + 1 < edges.size() && edges[i + 1].t > edges[i].t) {
        int mask = (active[0] > 0 ? 1 : 0) | (active[1] > 0 ? 2 : 0) | (active[2] > 0 ? 4 : 0);
        if (mask != 0) by_mask[mask] += edges[i + 1].t - edges[i].t;
      }
    }
    static constexpr std::string_view kNames[3] = {"COMPUTATION", "COMMUNICATION", "MEMORY"};
    for (const auto& [mask, us] : by_mask) {
      std::string label;
      for (int k = 0; k < 3; ++k) {
        if ((mask & (1 << k)) == 0) continue;
        label += label.empty() ? std::string(kNames[k]) : " overlapping " + std::string(kNames[k]);
      }
      out.kernel_types.push_back({label, us});
    }
    std::sort(out.kernel_types.begin(), out.kernel_types.end(),
              [](const KernelTypeTime& a, const KernelTypeTime& b) { return a.us > b.us; });
  }

  // Per kernel name: plain durations.
  {
    struct Acc {
      uint64_t n = 0;
      double sum = 0, sq = 0, min = 0, max = 0;
    };
    std::unordered_map<uint32_t, Acc> acc;
    for (const Row& r : rows) {
      if (type(*r.event) == KernelType::kOther) continue;
      double d = r.end - r.start;
      Acc& a = acc[r.event->name];
      a.min = a.n == 0 ? d : std::min(a.min, d);
      a.max = a.n == 0 ? d : std::max(a.max, d);
      ++a.n;
      a.sum += d;
      a.sq += d * d;
    }
    for (const auto& [name, a] : acc) {
      KernelStats k;
      k.name = trace.names[name];
      k.type = KernelTypeOf(k.name);
      k.count = a.n;
      k.sum_us = a.sum;
      k.min_us = a.min;
      k.max_us = a.max;
      k.mean_us = a.sum / a.n;
      k.std_us = a.n > 1 ? std::sqrt(std::max(0.0, (a.sq - a.sum * a.sum / a.n) / (a.n - 1))) : 0;
      out.kernels.push_back(std::move(k));
    }
    std::sort(out.kernels.begin(), out.kernels.end(),
              [](const KernelStats& a, const KernelStats& b) {
                return a.sum_us != b.sum_us ? a.sum_us > b.sum_us : a.name < b.name;
              });
  }

  // Copies by direction: HTA's concurrent-bandwidth step function.
  {
    std::map<std::string, std::vector<std::pair<double, double>>> points;
    std::map<std::string, CopyStats> stats;
    for (const Row& r : rows) {
      if (type(*r.event) != KernelType::kMemory) continue;
      std::string_view n = name_of(*r.event);
      std::string kind = StartsWith(n, "Memset") ? "Memset" : std::string(n.substr(0, 11));
      CopyStats& c = stats[kind];
      c.kind = kind;
      ++c.count;
      c.time_us += r.end - r.start;
      double bw = std::max(0.0f, r.event->bandwidth_gbps);
      double end = r.end > r.start ? r.end : r.start + 1;
      points[kind].push_back({r.start, bw});
      points[kind].push_back({end, -bw});
    }
    for (auto& [kind, p] : points) {
      std::stable_sort(p.begin(), p.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      std::vector<double> values;
      double run = 0;
      for (size_t i = 0; i < p.size(); ++i) {
        run += p[i].second;
        const bool last_at_time = i + 1 == p.size() || p[i + 1].first != p[i].first;
        if (last_at_time && run > 1e-9) values.push_back(run);
      }
      DescribeBandwidth(values, stats[kind]);
      out.copies.push_back(stats[kind]);
    }
  }

  // Idle time per stream (kernels, copies and sets only; no syncs).
  {
    std::map<int, std::vector<const Row*>> by_stream;
    for (const Row& r : rows) {
      TraceCategory c = r.event->cat;
      if (c == TraceCategory::kKernel || c == TraceCategory::kMemcpy ||
          c == TraceCategory::kMemset) {
        by_stream[r.event->stream].push_back(&r);
      }
    }
    for (auto& [stream, list] : by_stream) {
      std::stable_sort(list.begin(), list.end(),
                       [](const Row* a, const Row* b) { return a->start < b->start; });
      StreamIdle s;
      s.stream = stream;
      for (size_t i = 1; i < list.size(); ++i) {
        double prev_end = list[i - 1]->end;
        double gap = list[i]->start - prev_end;
        ++s.gaps;
        if (!std::isnan(list[i]->launch) && list[i]->launch > prev_end) {
          s.host_wait_us += gap;
        } else if (gap < kKernelWaitGapUs) {
          s.kernel_wait_us += gap;
        } else {
          s.other_us += gap;
        }
      }
      out.idle_streams.push_back(s);
    }
  }

  // What the host did while the GPU sat idle.
  std::vector<Interval> loader_ops, sync_ops;
  for (const Row& r : cpu_rows) {
    (r.event->role == TraceCpuRole::kDataLoader ? loader_ops : sync_ops)
        .push_back({r.start, r.end});
  }
  std::vector<Interval> loader_u = MergedSpans(loader_ops);
  std::vector<Interval> sync_u = MergedSpans(sync_ops);
  for (size_t i = 1; i < busy.size(); ++i) {
    double lo = busy[i - 1].end, hi = busy[i].start;
    if (hi <= lo) continue;
    double gap = hi - lo;
    double loader = CoveredIn(loader_u, lo, hi);
    double sync = std::min(gap - loader, CoveredIn(sync_u, lo, hi));
    out.idle_causes.data_loader_us += loader;
    out.idle_causes.sync_us += std::max(0.0, sync);
    out.idle_causes.host_launch_us += std::max(0.0, gap - loader - std::max(0.0, sync));
    if (gap > kLongIdleGapUs) ++out.idle_causes.long_gaps;
    if (gap > out.idle_causes.longest_gap_us) {
      out.idle_causes.longest_gap_us = gap;
      out.idle_causes.longest_gap_start_us = lo;
    }
  }

  {
    std::vector<KeptStep> steps_by_start;
    for (const Step& s : kept_steps) steps_by_start.push_back({s.number, s.start, s.end});
    CommKernelInputs in{&rows, &steps_by_start, &busy, &loader_u, &sync_u, cpu_kept, round};
    out.comm_kernels = CollectCommKernels(trace, in);
  }

  // Per step: each mark's window placed in time order, its figures summed
  // into its step's.
  if (!kept_steps.empty()) {
    double last_end = kept_steps.front().end;
    for (const Step& s : kept_steps) last_end = std::max(last_end, s.end);
    out.wall_us = last_end - kept_steps.front().start;
    std::vector<TraceStepFigures> figures(out.steps.size());
    std::vector<size_t> figure_of(kept_steps.size());
    std::vector<char> started(figures.size(), 0);
    for (size_t k = 0; k < kept_steps.size(); ++k) {
      size_t f = std::lower_bound(out.steps.begin(), out.steps.end(), kept_steps[k].number) -
                 out.steps.begin();
      figure_of[k] = f;
      if (!started[f]) figures[f].start_us = kept_steps[k].start;  // the first mark's
      started[f] = 1;
      figures[f].step = kept_steps[k].number;
      figures[f].dur_us += kept_steps[k].end - kept_steps[k].start;
    }
    std::vector<std::vector<Interval>> sync_in(figures.size()), loader_in(figures.size());
    std::vector<double> longest_sync(figures.size(), 0);
    auto step_of = [&](double t) -> int {
      auto it = std::upper_bound(kept_steps.begin(), kept_steps.end(), t,
                                 [](double x, const Step& s) { return x < s.start; });
      if (it == kept_steps.begin()) return -1;
      --it;
      return t < it->end ? static_cast<int>(figure_of[it - kept_steps.begin()]) : -1;
    };
    for (const Row& r : cpu_rows) {
      int k = step_of(r.start);
      if (k < 0) continue;
      if (r.event->role == TraceCpuRole::kDataLoader) {
        loader_in[k].push_back({r.start, r.end});
      } else {
        sync_in[k].push_back({r.start, r.end});
        if (r.end - r.start >= longest_sync[k]) {
          longest_sync[k] = r.end - r.start;
          figures[k].sync_op = name_of(*r.event);
        }
      }
    }
    for (const Row& r : rows) {
      if (std::isnan(r.launch)) continue;
      int k = step_of(r.launch);
      if (k < 0) continue;
      if (r.event->cat == TraceCategory::kKernel) {
        ++figures[k].kernels;
        if (r.end - r.start < kShortKernelUs) ++figures[k].short_kernels;
      }
      if (name_of(*r.event) == "Memcpy HtoD (Pageable -> Device)") {
        ++figures[k].pageable_h2d;
        figures[k].pageable_h2d_us += r.end - r.start;
      }
    }
    for (size_t k = 0; k < figures.size(); ++k) {
      figures[k].sync_us = Length(MergedSpans(std::move(sync_in[k])));
      figures[k].loader_us = Length(MergedSpans(std::move(loader_in[k])));
    }
    out.step_figures = std::move(figures);
  }
  // What the straggler analysis across ranks needs: each row's step, by its
  // start (CPU) or its launch's (GPU), as HTA assigns iterations.
  {
    StragglerFigures& st = out.straggler;
    st.rank = out.rank;
    st.steps = out.steps;
    auto in_step = [&](double t) -> std::optional<int64_t> {
      auto it = std::upper_bound(kept_steps.begin(), kept_steps.end(), t,
                                 [](double v, const Step& x) { return v < x.start; });
      if (it == kept_steps.begin() || !(t < std::prev(it)->end)) return std::nullopt;
      return std::prev(it)->number;
    };
    for (const TraceEvent& e : events) {
      if (gpu_side(e) || !cpu_kept(StartOf(e)) || !in_step(StartOf(e))) continue;
      st.first_us = std::min(st.first_us, StartOf(e));
      st.last_end_us = std::max(st.last_end_us, EndOf(e));
    }
    for (const Row& r : rows) {
      if (std::isnan(r.launch)) continue;
      std::optional<int64_t> step = in_step(r.launch);
      if (!step) continue;
      st.last_end_us = std::max(st.last_end_us, r.end);
      if (StartsWith(name_of(*r.event), "ncclKernel")) {
        st.comm.push_back(
            {r.event->stream, std::string(name_of(*r.event)), *step, r.start, r.end - r.start});
      }
    }
    std::stable_sort(
        st.comm.begin(), st.comm.end(),
        [](const CommKernelRow& a, const CommKernelRow& b) { return a.start < b.start; });
  }
  out.queue_length = SummarizeQueueLength(trace, cpu_kept);
  out.critical_path =
      path_beside.valid() ? path_beside.get() : FindCriticalPath(trace, request, &why_not);
  if (!out.critical_path) out.notes.push_back(trace.path + ": no critical path: " + why_not);
  out.launches = SummarizeLaunches(trace, {cpu_kept, filtering});
  // Annotation rows as HTA keeps them: with a launch's correlation among the
  // GPU's rows, without one (the usual: no stream, no correlation) among the
  // CPU's, by their start.
  std::vector<std::pair<std::string_view, double>> annotations;
  for (const Row& r : rows) {
    if (r.event->cat == TraceCategory::kGpuAnnotation && gpu_side(*r.event)) {
      annotations.emplace_back(name_of(*r.event), r.end - r.start);
    }
  }
  for (const TraceEvent& e : events) {
    if (e.cat == TraceCategory::kGpuAnnotation && !gpu_side(e) && cpu_kept(StartOf(e))) {
      annotations.emplace_back(name_of(e), EndOf(e) - StartOf(e));
    }
  }
  out.user_annotations = SummarizeUserAnnotations(annotations);
  return out;
}

}  // namespace stallscope
