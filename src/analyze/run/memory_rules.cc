// The memory rules of a recorded run (memory_rules.h).
#include "analyze/run/memory_rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <span>

#include "analyze/host/memory_rules.h"
#include "analyze/robust_slope.h"
#include "analyze/run/rules.h"
#include "core/units.h"

namespace stallscope {
namespace {

// The timeline stores swap traffic in pages; x86-64 and most arm64 kernels
// use 4 KiB pages (it only scales the bytes shown beside the page counts).
constexpr uint64_t kAssumedPageSizeBytes = 4096;

int64_t AsInt(uint64_t v) { return static_cast<int64_t>(v); }

std::string FormatDuration(double seconds) {
  if (seconds < 10) return fmt::format("{:.1f} s", seconds);
  if (seconds < 120) return fmt::format("{:.0f} s", seconds);
  if (seconds < 2 * 3600) return fmt::format("{:.0f} min", seconds / 60);
  if (seconds < 2 * 86400) return fmt::format("{:.1f} h", seconds / 3600);
  return fmt::format("{:.1f} days", seconds / 86400);
}

// What the job may still use: the cgroup limit when it has one, else the host.
uint64_t MemoryLimit(const RunInfo& info) {
  if (info.cgroup_limit_bytes && *info.cgroup_limit_bytes > 0) {
    return info.mem_total_bytes > 0 ? std::min(*info.cgroup_limit_bytes, info.mem_total_bytes)
                                    : *info.cgroup_limit_bytes;
  }
  return info.mem_total_bytes;
}

void DropEvidence(Finding& f, std::string_view name) {
  std::erase_if(f.evidence, [&](const Evidence& e) { return e.name == name; });
}

// available_low and swap_active judged by CheckMemory on the run's worst
// moment: the interval with the least memory available, and the swap traffic
// averaged over the whole run (a burst still shows; one page does not).
std::vector<Finding> CheckWorstMoment(const Timeline& timeline) {
  const std::vector<TimelineSample>& samples = timeline.samples;
  // A zero MemAvailable is an unread value, not a host with nothing left.
  const TimelineSample* worst = nullptr;
  MemoryObservation m;
  double swap_in_pages = 0;
  double swap_out_pages = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    const TimelineSample& s = samples[i];
    if (s.mem_available_bytes > 0 &&
        (!worst || s.mem_available_bytes < worst->mem_available_bytes)) {
      worst = &s;
    }
    double dt = IntervalOf(timeline, i);
    m.window_seconds += dt;
    swap_in_pages += s.swap_in_pages_per_s * dt;
    swap_out_pages += s.swap_out_pages_per_s * dt;
    m.swap_used_bytes = std::max(m.swap_used_bytes, s.swap_used_bytes);
  }
  if (samples.empty()) return {};
  m.swap_in_pages = static_cast<uint64_t>(std::llround(swap_in_pages));
  m.swap_out_pages = static_cast<uint64_t>(std::llround(swap_out_pages));
  m.page_size_bytes = kAssumedPageSizeBytes;
  if (worst) {
    m.total_bytes = timeline.info.mem_total_bytes;
    m.available_bytes = worst->mem_available_bytes;
    if (timeline.info.cgroup_limit_bytes) {
      // The sampler's figure is already min(MemAvailable, limit - working set).
      m.cgroup_limit_bytes = timeline.info.cgroup_limit_bytes;
      m.cgroup_available_bytes = worst->mem_available_bytes;
    }
  }

  FindingsWithNotes judged = CheckMemory(m);
  std::vector<Finding>& findings = judged.findings;
  for (Finding& f : findings) {
    if (f.id == "memory.available_low" && worst) {
      f.summary += fmt::format(", at its lowest {} into the run", FormatDuration(worst->t));
      f.evidence.push_back({"lowest_at_s", worst->t});
    } else if (f.id == "memory.swap_active") {
      // swap_used_bytes is the run's peak; the timeline does not keep SwapTotal.
      DropEvidence(f, "swap_total_bytes");
    }
  }
  return std::move(findings);
}

struct Series {
  std::vector<double> t;
  std::vector<double> bytes;
};

Series Slice(const Series& s, double from, double to) {
  Series out;
  for (size_t i = 0; i < s.t.size(); ++i) {
    if (s.t[i] >= from && s.t[i] <= to) {
      out.t.push_back(s.t[i]);
      out.bytes.push_back(s.bytes[i]);
    }
  }
  return out;
}

std::optional<SlopeFit> Fit(const Series& s) { return TheilSen(s.t, s.bytes); }

// The median of the first (or last) few samples: what "started at" and
// "ended at" mean when single samples jitter.
double EdgeMedian(const Series& s, bool at_end) {
  size_t k = std::clamp<size_t>(s.t.size() / 20, 1, 60);
  std::vector<double> edge = at_end ? std::vector<double>(s.bytes.end() - k, s.bytes.end())
                                    : std::vector<double>(s.bytes.begin(), s.bytes.begin() + k);
  std::sort(edge.begin(), edge.end());
  return edge[edge.size() / 2];
}

struct Grower {
  std::string name;  // "python3 (pid 4242)"
  int pid = 0;
  double slope_bytes_per_s = 0;
};

// The process whose own RSS rises fastest over the judged part of the run,
// among those that lived through at least half of it (a worker that lives
// one epoch has a warm-up of its own, not a leak).
std::optional<Grower> FastestGrower(const Timeline& timeline, double from, double to) {
  std::map<int, Series> by_pid;
  std::map<int, std::string> comm;
  for (const ProcessPoint& p : timeline.processes) {
    if (p.t < from || p.t > to || p.rss_bytes == 0) continue;
    by_pid[p.pid].t.push_back(p.t);
    by_pid[p.pid].bytes.push_back(static_cast<double>(p.rss_bytes));
    comm[p.pid] = p.comm;
  }
  std::optional<Grower> best;
  for (const auto& [pid, series] : by_pid) {
    if (series.t.size() < 3) continue;
    auto [lo, hi] = std::minmax_element(series.t.begin(), series.t.end());
    if (*hi - *lo < kLeakProcessMinCoverage * (to - from)) continue;
    std::optional<SlopeFit> fit = Fit(series);
    if (!fit || fit->slope <= 0) continue;
    if (!best || fit->slope > best->slope_bytes_per_s) {
      best = Grower{fmt::format("{} (pid {})", comm[pid], pid), pid, fit->slope};
    }
  }
  return best;
}

// The tree's RSS while the job trains (kLeakTeardownFraction): between the
// first and the last step the hook reported, if any, without the fall of the
// exit's teardown at the end.
Series TrainingRss(const Timeline& timeline) {
  double from = -std::numeric_limits<double>::infinity();
  double to = std::numeric_limits<double>::infinity();
  if (!timeline.steps.empty()) {
    auto [first, last] =
        std::minmax_element(timeline.steps.begin(), timeline.steps.end(),
                            [](const StepEvent& a, const StepEvent& b) { return a.t < b.t; });
    from = first->t;
    to = last->t;
  }
  Series rss;
  for (const TimelineSample& s : timeline.samples) {
    if (s.tree_rss_bytes == 0) continue;  // the tree was gone or unreadable
    if (s.t < from || s.t > to) continue;
    rss.t.push_back(s.t);
    rss.bytes.push_back(static_cast<double>(s.tree_rss_bytes));
  }
  // The fall is judged against the median of the few samples before each
  // (not their peak: one wild sample must not cut the run back to itself).
  size_t keep = rss.bytes.size();
  while (keep > kLeakTeardownWindow) {
    std::vector<double> before(rss.bytes.begin() + (keep - 1 - kLeakTeardownWindow),
                               rss.bytes.begin() + (keep - 1));
    std::nth_element(before.begin(), before.begin() + before.size() / 2, before.end());
    if (rss.bytes[keep - 1] >= kLeakTeardownFraction * before[before.size() / 2]) break;
    --keep;
  }
  rss.t.resize(keep);
  rss.bytes.resize(keep);
  return rss;
}

// How many steps (of every rank) had ended by time t.
double StepsDoneBy(const Timeline& timeline, double t) {
  size_t n = 0;
  for (const StepEvent& e : timeline.steps) n += e.t <= t ? 1 : 0;
  return static_cast<double>(n);
}

// The RSS series against the steps done by each sample, when the hook
// reported enough steps to judge a pace by.
std::optional<Series> RssByStep(const Timeline& timeline, const Series& rss) {
  if (timeline.steps.size() < kLeakMinSamples) return std::nullopt;
  std::vector<double> ends;
  ends.reserve(timeline.steps.size());
  for (const StepEvent& e : timeline.steps) ends.push_back(e.t);
  std::sort(ends.begin(), ends.end());
  Series out;
  for (size_t i = 0; i < rss.t.size(); ++i) {
    auto done = std::upper_bound(ends.begin(), ends.end(), rss.t[i]) - ends.begin();
    out.t.push_back(static_cast<double>(done));
    out.bytes.push_back(rss.bytes[i]);
  }
  return out;
}

// Where the hook placed the growth (AllocationReport): the holder whose
// tensor storage grew most in the last tracing of the rank that reported
// one, and the growth sites of that tracing, the job's own lines first.
struct LeakPlace {
  const AllocationReport* holder = nullptr;
  std::vector<const AllocationReport*> sites;
  std::string line;  // the holder's growing line, else the top site
};

std::optional<LeakPlace> PlaceLeak(const Timeline& timeline) {
  LeakPlace place;
  // The latest tracing's holder that grew most (the hook sends them so
  // ordered; a large preloaded one that did not grow comes after).
  for (const AllocationReport& a : timeline.allocations) {
    if (a.kind != "holder") continue;
    if (!place.holder || a.t > place.holder->t ||
        (a.t == place.holder->t && a.grew_bytes > place.holder->grew_bytes)) {
      place.holder = &a;
    }
  }
  for (const AllocationReport& a : timeline.allocations) {
    if (a.kind != "site") continue;
    if (place.holder && (a.rank != place.holder->rank || a.t != place.holder->t)) continue;
    if (place.sites.size() < kLeakSitesShown) place.sites.push_back(&a);
  }
  if (!place.holder && place.sites.empty()) return std::nullopt;
  place.line = place.holder && !place.holder->where.empty() ? place.holder->where
               : !place.sites.empty()                       ? place.sites.front()->where
                                                            : std::string();
  return place;
}

// The hook's byte counts are signed (a growth can be negative): none below 0.
std::string SignedBytes(int64_t bytes) {
  return FormatBytes(static_cast<uint64_t>(std::max<int64_t>(0, bytes)));
}

std::string HolderText(const AllocationReport& h) {
  return fmt::format("{} holds {} tensors, {}{}", h.text, h.count, SignedBytes(h.bytes),
                     h.grew_bytes > 0
                         ? fmt::format(" (+{} while traced)", SignedBytes(h.grew_bytes))
                         : std::string());
}

std::optional<Finding> CheckRssGrowth(const Timeline& timeline) {
  Series rss = TrainingRss(timeline);
  if (rss.t.size() < kLeakMinSamples) return std::nullopt;
  const double t0 = rss.t.front();
  const double t1 = rss.t.back();
  const double span = t1 - t0;
  if (span <= 0) return std::nullopt;

  // Judge after the warm-up, and require the growth to keep its pace: a ramp
  // that plateaus has a last third much flatter than its middle third.
  const double judged_from = t0 + span * kLeakWarmupFraction;
  const double last_from = t0 + span * (1 - kLeakWarmupFraction);
  Series judged = Slice(rss, judged_from, t1);
  std::optional<SlopeFit> fit = Fit(judged);
  std::optional<SlopeFit> middle = Fit(Slice(rss, judged_from, last_from));
  std::optional<SlopeFit> last = Fit(Slice(rss, last_from, t1));
  if (!fit || !middle || !last) return std::nullopt;
  if (fit->slope <= 0) return std::nullopt;
  // With the hook's steps the pace is judged per step: a leak keeps some
  // bytes each step whatever the step's speed, and a slower stretch (the
  // machine's load, the hook's own allocation tracing) slows the growth per
  // second, not per step.
  std::optional<SlopeFit> middle_pace = middle;
  std::optional<SlopeFit> last_pace = last;
  if (std::optional<Series> by_step = RssByStep(timeline, rss)) {
    double s_from = StepsDoneBy(timeline, judged_from);
    double s_last = StepsDoneBy(timeline, last_from);
    double s_end = StepsDoneBy(timeline, t1);
    std::optional<SlopeFit> m = Fit(Slice(*by_step, s_from, s_last));
    std::optional<SlopeFit> l = Fit(Slice(*by_step, s_last, s_end));
    if (m && l && s_last > s_from && s_end > s_last) {
      middle_pace = m;
      last_pace = l;
    }
  }
  if (middle_pace->slope <= 0 || last_pace->slope <= 0) return std::nullopt;
  if (last_pace->slope < kLeakSteadyRatio * middle_pace->slope) return std::nullopt;

  const double judged_span = judged.t.back() - judged.t.front();
  const double growth = fit->slope * judged_span;
  if (growth < kLeakNoiseSigmas * RobustResidualSigma(judged.t, judged.bytes, *fit)) {
    return std::nullopt;
  }
  const double base = std::max(1.0, fit->intercept + fit->slope * judged.t.front());

  // Headroom: what was still available at the end (the sampler's figure is
  // already bounded by the cgroup limit).
  std::optional<double> headroom;
  const TimelineSample& end = timeline.samples.back();
  if (end.mem_available_bytes > 0 || timeline.info.mem_total_bytes > 0) {
    headroom = static_cast<double>(end.mem_available_bytes);
  }
  std::optional<double> to_oom;
  if (headroom) to_oom = *headroom / fit->slope;

  const bool large =
      growth > kLeakMinGrowthFraction * base && growth > static_cast<double>(kLeakMinGrowthBytes);
  const bool soon = to_oom && *to_oom <= kLeakOomHorizonSeconds;
  if (!large && !soon) return std::nullopt;

  const double start_rss = EdgeMedian(rss, false);
  // The job frees its memory as it exits, and the last samples can fall in
  // that teardown: the fitted line at the end says where the growth got to.
  const double end_rss =
      std::max(EdgeMedian(rss, true), fit->slope * rss.t.back() + fit->intercept);
  std::optional<Grower> grower = FastestGrower(timeline, judged_from, t1);

  Finding f;
  f.id = "memory.rss_growth";
  f.layer = Layer::kMemory;
  f.severity =
      (to_oom && *to_oom < kLeakCriticalOomSeconds) ? Severity::kCritical : Severity::kWarning;
  f.summary = fmt::format(
      "the job's memory grows steadily, {}/h: {} -> {} over {}{}{}",
      FormatBytes(static_cast<uint64_t>(fit->slope * 3600)),
      FormatBytes(static_cast<uint64_t>(start_rss)), FormatBytes(static_cast<uint64_t>(end_rss)),
      FormatDuration(span),
      to_oom ? fmt::format("; the {} left runs out in {}",
                           FormatBytes(static_cast<uint64_t>(*headroom)), FormatDuration(*to_oom))
             : std::string(),
      grower ? fmt::format("; {} grows most", grower->name) : std::string());
  f.evidence = {{"slope_bytes_per_s", fit->slope},
                {"rss_start_bytes", static_cast<int64_t>(start_rss)},
                {"rss_end_bytes", static_cast<int64_t>(end_rss)},
                {"judged_from_s", judged.t.front()},
                {"judged_growth_bytes", static_cast<int64_t>(growth)},
                {"judged_growth_fraction", growth / base},
                {"last_third_slope_bytes_per_s", last->slope}};
  if (grower) {
    f.evidence.push_back({"top_process", grower->name});
    f.evidence.push_back({"top_process_slope_bytes_per_s", grower->slope_bytes_per_s});
  }
  f.evidence.push_back({"memory_limit_bytes", AsInt(MemoryLimit(timeline.info))});
  if (headroom) f.evidence.push_back({"headroom_bytes", static_cast<int64_t>(*headroom)});
  if (to_oom) f.evidence.push_back({"projected_oom_s", *to_oom});

  std::optional<LeakPlace> place = PlaceLeak(timeline);
  if (place) {
    if (!place->line.empty()) {
      f.summary += fmt::format("; it grows at {}", place->line);
      f.evidence.push_back({"leak_line", place->line});
    }
    if (place->holder) {
      std::string holder = HolderText(*place->holder);
      f.summary += fmt::format(", where {}", holder);
      f.evidence.push_back({"leak_holder", std::move(holder)});
    }
    std::string sites;
    for (const AllocationReport* a : place->sites) {
      sites += fmt::format("{}{} +{} in {} blocks", sites.empty() ? "" : "; ", a->where,
                           SignedBytes(a->bytes), a->count);
    }
    if (!sites.empty()) f.evidence.push_back({"alloc_growth_sites", sites});
  }
  std::string pid = grower ? std::to_string(grower->pid) : std::string("PID");
  if (place && !place->line.empty()) {
    f.next = fmt::format(
        "look at {}{}: what it keeps lives across steps; keep `loss.item()` or "
        "`t.detach().cpu()` of what you need, bound the cache, or clear it each epoch; then "
        "rerun under `stallscope run` and check memory.rss_growth is gone",
        place->line, place->holder ? fmt::format(" ({})", place->holder->text) : std::string());
    return f;
  }
  f.next = fmt::format(
      "confirm who grows: `watch -n 30 ps -o pid,rss,cmd -p {}`; find the line: "
      "`tracemalloc.start()` early, then every few thousand steps print "
      "`tracemalloc.take_snapshot().compare_to(previous, 'lineno')[:10]` (the hook does it by "
      "itself under `stallscope run --trace-alloc`); the usual "
      "causes: tensors kept across steps (`losses.append(loss)`: append `loss.item()`), a "
      "cache without a bound, too many batches in flight (num_workers * prefetch_factor)",
      pid);
  return f;
}

// The job's memory peak for memory.oom_killed, from the best source there
// is: the samples' tree RSS and the OOM killer's report of a victim are both
// RSS of the job's processes (the larger wins: a sample may miss the last
// interval's growth, the report covers one process); the cgroup's peak is a
// wider figure (every member, page cache) and stands in when neither exists.
struct OomPeak {
  uint64_t bytes = 0;  // 0: unknown
  std::string source;  // "samples", "oom_kill", "cgroup"
  uint64_t sampled_bytes = 0;
  const MemoryPeak* victim = nullptr;  // the largest job victim the kernel reported
  const MemoryPeak* cgroup = nullptr;
};

OomPeak FindOomPeak(const Timeline& timeline) {
  OomPeak peak;
  for (const TimelineSample& s : timeline.samples) {
    peak.sampled_bytes = std::max(peak.sampled_bytes, s.tree_rss_bytes);
  }
  for (const MemoryPeak& p : timeline.memory_peaks) {
    if (p.source == "oom_kill" && p.bytes > 0 && (!peak.victim || p.bytes > peak.victim->bytes)) {
      peak.victim = &p;
    } else if (p.source == "cgroup" && p.bytes > 0) {
      peak.cgroup = &p;
    }
  }
  if (peak.sampled_bytes > 0 || peak.victim) {
    const bool kernel = peak.victim && peak.victim->bytes > peak.sampled_bytes;
    peak.bytes = kernel ? peak.victim->bytes : peak.sampled_bytes;
    peak.source = kernel ? "oom_kill" : "samples";
  } else if (peak.cgroup) {
    peak.bytes = peak.cgroup->bytes;
    peak.source = "cgroup";
  }
  return peak;
}

std::string DescribePeak(const OomPeak& peak, const Timeline& timeline) {
  if (peak.source == "samples")
    return fmt::format("its memory peaked at {}", FormatBytes(peak.bytes));
  if (peak.source == "oom_kill") {
    return fmt::format("its memory peaked at {} (the kernel's OOM report of pid {})",
                       FormatBytes(peak.bytes), peak.victim->pid);
  }
  if (peak.source == "cgroup") {
    return fmt::format("its memory cgroup peaked at {}", FormatBytes(peak.bytes));
  }
  // Unknown (no sample saw the tree, or there would be a peak): say why, never 0.
  return fmt::format("its peak is unknown (killed before the first sample; {})",
                     !timeline.memory_peaks_recorded
                         ? "the run file predates the kernel's peaks"
                         : "the kernel log named no process of the job and no cgroup peak rose");
}

std::optional<Finding> CheckOomKilled(const Timeline& timeline) {
  const RunInfo& info = timeline.info;
  if (!info.oom_killed) return std::nullopt;
  uint64_t least_available = 0;
  for (const TimelineSample& s : timeline.samples) {
    if (s.mem_available_bytes > 0 &&
        (least_available == 0 || s.mem_available_bytes < least_available)) {
      least_available = s.mem_available_bytes;
    }
  }
  const OomPeak peak = FindOomPeak(timeline);
  const uint64_t limit = MemoryLimit(info);
  std::optional<double> ran = info.duration_seconds;
  if (!ran && !timeline.samples.empty()) ran = timeline.samples.back().t;

  Finding f;
  f.id = "memory.oom_killed";
  f.layer = Layer::kMemory;
  f.severity = Severity::kCritical;
  f.summary = fmt::format("the kernel's OOM killer ended the job{}; {}{}",
                          ran ? fmt::format(" after {}", FormatDuration(*ran)) : std::string(),
                          DescribePeak(peak, timeline),
                          limit > 0 && peak.bytes > 0
                              ? fmt::format(" of {}{}", FormatBytes(limit),
                                            info.cgroup_limit_bytes ? " (the cgroup limit)" : "")
                              : std::string());
  f.evidence = {{"peak_known", peak.bytes > 0}};
  if (peak.bytes > 0) {
    f.evidence.push_back({"peak_bytes", AsInt(peak.bytes)});
    f.evidence.push_back({"peak_source", peak.source});
  }
  if (peak.sampled_bytes > 0) {
    f.evidence.push_back({"peak_tree_rss_bytes", AsInt(peak.sampled_bytes)});
  }
  if (peak.victim) {
    f.evidence.push_back({"oom_victim_pid", int64_t{peak.victim->pid}});
    f.evidence.push_back({"oom_victim_rss_bytes", AsInt(peak.victim->bytes)});
    f.evidence.push_back({"oom_report", peak.victim->detail});
  }
  if (peak.cgroup) {
    f.evidence.push_back({"cgroup_peak_bytes", AsInt(peak.cgroup->bytes)});
    f.evidence.push_back({"cgroup_peak_file", peak.cgroup->detail});
  }
  f.evidence.push_back({"memory_limit_bytes", AsInt(limit)});
  f.evidence.push_back({"cgroup_limited", info.cgroup_limit_bytes.has_value()});
  if (least_available > 0) f.evidence.push_back({"least_available_bytes", AsInt(least_available)});
  if (info.exit_signal) f.evidence.push_back({"exit_signal", int64_t{*info.exit_signal}});
  if (ran) f.evidence.push_back({"ran_s", *ran});
  f.next =
      "confirm in the kernel log: `dmesg -T | grep -i -E 'out of memory|killed process'`; if "
      "memory.rss_growth is also listed, find the leak first; else lower batch_size or "
      "num_workers * prefetch_factor, or raise the limit";
  return f;
}

}  // namespace

std::vector<std::string> AllocationTraceNotes(const Timeline& timeline) {
  std::vector<std::string> notes;
  for (const AllocationReport& a : timeline.allocations) {
    if (a.kind == "note") {
      notes.push_back(
          fmt::format("allocation tracing, rank {} (pid {}): {}", a.rank, a.pid, a.text));
    }
  }
  return notes;
}

FindingsWithNotes CheckRunMemory(const Timeline& timeline) {
  std::vector<Finding> findings;
  if (std::optional<Finding> f = CheckOomKilled(timeline)) findings.push_back(std::move(*f));
  if (std::optional<Finding> f = CheckRssGrowth(timeline)) findings.push_back(std::move(*f));
  std::vector<Finding> moment = CheckWorstMoment(timeline);
  findings.insert(findings.end(), std::make_move_iterator(moment.begin()),
                  std::make_move_iterator(moment.end()));
  return FindingsWithNotes{std::move(findings), {}};
}

}  // namespace stallscope
