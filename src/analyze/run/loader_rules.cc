// io.cpu_contention and io.cold_cache (see loader_rules.h).
#include "analyze/run/loader_rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>

#include "analyze/run/epoch_figures.h"
#include "analyze/run/inputs.h"
#include "analyze/run/io_rules.h"
#include "core/stats.h"
#include "core/units.h"

namespace stallscope {

std::optional<Finding> CheckCpuContention(const Timeline& timeline,
                                          const std::optional<DataWait>& wait) {
  const int cpus = timeline.info.cpu_count;
  if (cpus <= 0 || timeline.samples.size() < 3) return std::nullopt;
  // What processes outside the tree used in each interval: in run files
  // that record them, the processes themselves (named and measured; the
  // job's own children that exited between samples, interrupts and
  // stallscope are not among them); in older files, the host's busy CPU
  // less the tree's.
  std::map<double, double> named_outside;
  for (const OtherProcessPoint& p : timeline.other_processes) named_outside[p.t] += p.cpu_percent;
  // The first interval has no CPU figures (a delta needs two samples).
  std::vector<double> shares;
  int contended = 0;
  for (size_t i = 1; i < timeline.samples.size(); ++i) {
    const TimelineSample& s = timeline.samples[i];
    if (s.processes == 0) continue;  // the job had ended
    double outside = 0;
    if (timeline.inputs_recorded) {
      auto it = named_outside.find(s.t);
      outside = it == named_outside.end() ? 0 : it->second;
    } else {
      outside = std::max(0.0, s.cpu_busy_percent * cpus - s.tree_cpu_percent);
    }
    const double share = outside / (cpus * 100.0);
    shares.push_back(share);
    if (share >= kCpuContentionShare) ++contended;
  }
  if (shares.empty()) return std::nullopt;
  const double fraction = static_cast<double>(contended) / static_cast<double>(shares.size());
  if (fraction < kCpuContentionRunFraction) return std::nullopt;
  const bool waits = wait && wait->worst_rank_fraction >= kInputBoundWarningFraction;
  const bool measured_quiet = wait && !waits;

  // Who: the processes outside the tree, by their mean CPU over the
  // intervals they were looked at in.
  std::map<std::pair<int, std::string>, double> cpu;
  std::set<double> looked;
  for (const OtherProcessPoint& p : timeline.other_processes) {
    cpu[{p.pid, p.comm}] += p.cpu_percent;
    looked.insert(p.t);
  }
  std::vector<std::pair<double, std::pair<int, std::string>>> top;
  for (const auto& [who, total] : cpu) {
    top.push_back({total / static_cast<double>(std::max<size_t>(1, looked.size())), who});
  }
  std::sort(top.begin(), top.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  if (top.size() > 3) top.resize(3);
  std::string named, pids;
  for (const auto& [percent, who] : top) {
    if (percent < 5) continue;
    named += fmt::format("{}{} (pid {}, {:.0f}% of a CPU)", named.empty() ? "" : ", ", who.second,
                         who.first, percent);
    pids += fmt::format("{}{}", pids.empty() ? "" : " ", who.first);
  }
  const double share = Median(shares);
  std::vector<double> delays;
  for (const WorkerInterval& w : WorkerLoad(timeline)) delays.push_back(w.run_delay_percent);

  Finding f;
  f.id = "io.cpu_contention";
  f.layer = Layer::kIo;
  f.severity = !waits                                                     ? Severity::kInfo
               : wait->worst_rank_fraction >= kInputBoundCriticalFraction ? Severity::kCritical
                                                                          : Severity::kWarning;
  f.summary =
      fmt::format("processes outside the job took {} of the host's {} CPUs in {} of the run{}{}",
                  FormatPercent(share), cpus, FormatPercent(fraction),
                  named.empty() ? std::string() : ": " + named,
                  waits            ? fmt::format("; the steps wait {} of their time for data",
                                                 FormatPercent(wait->worst_rank_fraction))
                  : measured_quiet ? std::string("; the steps did not wait for data")
                                   : std::string());
  f.evidence = {{"outside_cpu_share", share},
                {"contended_fraction", fraction},
                {"cpu_count", int64_t{cpus}},
                {"top_processes", named}};
  if (!delays.empty()) f.evidence.push_back({"worker_run_delay_percent", Median(delays)});
  if (wait) f.evidence.push_back({"data_wait_fraction", wait->worst_rank_fraction});
  f.next = fmt::format(
      "the loader is not the cause: {}; move it off this host, or give the job CPUs of its "
      "own (a cpuset: `taskset -cp` the other process, `docker run --cpuset-cpus`, Kubernetes "
      "CPU requests with the static CPU manager); `pidstat -u 5 1` shows who holds the CPUs",
      pids.empty() ? std::string("find what holds the CPUs with `top -o %CPU`")
                   : fmt::format("see what it is with `ps -o pid,user,etime,args -p {}`", pids));
  return f;
}

std::optional<double> DataWaitAfterFirstEpoch(const Timeline& timeline,
                                              const std::vector<EpochSummary>& epochs) {
  if (epochs.size() < 2) return std::nullopt;
  std::optional<DataWait> w = MeasureDataWait(timeline, epochs[1].start_s);
  if (!w) return std::nullopt;
  return w->worst_rank_fraction;
}

namespace {

// What epoch 0 and the later epochs read from the data disk, and over how
// many seconds.
struct EpochReadFigures {
  double first_bytes = 0, first_seconds = 0;
  double later_bytes = 0, later_seconds = 0;
  const char* source = "";  // "boundary samples" or "interval samples"
  std::string disk;         // the disk counted; "" when the run's data disk is unknown
};

// From the boundary samples: exact differences. nullopt when the file has
// none, or none that bound epoch 0 alone and some later epoch.
std::optional<EpochReadFigures> ReadsFromBoundaries(const Timeline& timeline,
                                                    const std::vector<EpochSummary>& epochs) {
  EpochReadFigures r;
  r.source = "boundary samples";
  r.disk = BoundaryDisk(timeline);
  bool first = false, later = false;
  for (const BoundarySpan& span : BoundarySpans(timeline)) {
    if (!span.read_bytes) continue;
    if (span.first_epoch == epochs[0].epoch && span.last_epoch == epochs[0].epoch) {
      r.first_bytes = *span.read_bytes;
      r.first_seconds = span.seconds;
      first = true;
    } else if (span.first_epoch > epochs[0].epoch && span.seconds > 0) {
      r.later_bytes += *span.read_bytes;
      r.later_seconds += span.seconds;
      later = true;
    }
  }
  if (!first || !later) return std::nullopt;
  return r;
}

// From the interval samples: each interval's rate over the part of it
// inside the epoch (an interval spanning an epoch's end is shared by both
// epochs, so an epoch shorter than an interval gets a share of its
// neighbour's reads). The job's own reads from storage (its processes'
// read_bytes), where recorded: what the data disk read for others (a
// library load, another job on the system disk) is not the job's cold cache.
EpochReadFigures ReadsFromIntervals(const Timeline& timeline,
                                    const std::vector<EpochSummary>& epochs) {
  std::map<double, double> job_read_kib;
  for (const ProcessPoint& p : timeline.processes) {
    if (p.read_kib_per_s) job_read_kib[p.t] += *p.read_kib_per_s;
  }
  auto read_in = [&](double start, double end) {
    double bytes = 0, seconds = 0;
    for (size_t i = 0; i < timeline.samples.size(); ++i) {
      const TimelineSample& s = timeline.samples[i];
      const double overlap = std::min(s.t, end) - std::max(s.t - IntervalOf(timeline, i), start);
      if (overlap <= 0) continue;
      double kib_per_s = s.disk_read_kib_per_s;
      if (auto job = job_read_kib.find(s.t); job != job_read_kib.end()) {
        kib_per_s = std::min(kib_per_s, job->second);
      } else if (!job_read_kib.empty()) {
        kib_per_s = 0;  // recorded, and the job read nothing then
      }
      bytes += kib_per_s * 1024.0 * overlap;
      seconds += overlap;
    }
    return std::pair(bytes, seconds);
  };
  EpochReadFigures r;
  r.source = "interval samples";
  r.disk = timeline.info.data_device;
  for (size_t k = 1; k < epochs.size(); ++k) {
    auto [bytes, seconds] = read_in(epochs[k].start_s, epochs[k].start_s + epochs[k].duration_s);
    r.later_bytes += bytes;
    r.later_seconds += seconds;
  }
  std::tie(r.first_bytes, r.first_seconds) =
      read_in(epochs[0].start_s, epochs[0].start_s + epochs[0].duration_s);
  return r;
}

}  // namespace

std::optional<Finding> CheckColdCache(const Timeline& timeline,
                                      const std::vector<EpochSummary>& epochs) {
  if (epochs.size() < 2 || timeline.samples.empty()) return std::nullopt;
  const EpochSummary& first = epochs[0];
  std::vector<double> later;
  for (size_t k = 1; k < epochs.size(); ++k) later.push_back(epochs[k].duration_s);
  const double typical = Median(later);
  if (typical <= 0 || first.duration_s < kColdCacheSlowdown * typical ||
      first.duration_s - typical < kColdCacheMinSeconds) {
    return std::nullopt;
  }
  std::optional<EpochReadFigures> exact = ReadsFromBoundaries(timeline, epochs);
  const EpochReadFigures reads = exact ? *exact : ReadsFromIntervals(timeline, epochs);
  const double first_bytes = reads.first_bytes;
  if (first_bytes < kColdCacheMinReadBytes || reads.first_seconds <= 0) return std::nullopt;
  const double first_rate = first_bytes / reads.first_seconds;
  const double later_rate = reads.later_seconds > 0 ? reads.later_bytes / reads.later_seconds : 0;
  if (later_rate > kColdCacheLaterReadShare * first_rate) return std::nullopt;

  const std::string& device = reads.disk;
  const std::string disk = device.empty() ? std::string("the data disk") : device;
  std::vector<LoaderInput> inputs = WhatTheLoaderReads(timeline);
  const double run_s = timeline.info.duration_seconds.value_or(timeline.samples.back().t);
  Finding f;
  f.id = "io.cold_cache";
  f.layer = Layer::kIo;
  f.severity = Severity::kWarning;
  f.summary = fmt::format(
      "epoch 0 read {} from {} at {} and took {:.1f} s; epochs 1..{} read from the page cache "
      "({}) and took {:.1f} s each: the first epoch paid for a cold cache, not the program",
      FormatBytes(static_cast<uint64_t>(first_bytes)), disk, FormatRate(first_rate),
      first.duration_s, epochs.back().epoch, FormatRate(later_rate), typical);
  f.evidence = {{"device", device},
                {"epoch0_s", first.duration_s},
                {"later_epoch_s", typical},
                {"epoch0_read_bytes", static_cast<int64_t>(first_bytes)},
                {"epoch0_read_bytes_per_s", first_rate},
                {"later_read_bytes_per_s", later_rate},
                {"epochs", static_cast<int64_t>(epochs.size())},
                {"measured_from", std::string(reads.source)}};
  if (!inputs.empty()) f.evidence.push_back({"input", inputs[0].path});
  if (run_s > 0) {
    f.impact = Impact{std::clamp((first.duration_s - typical) / run_s, 0.0, 1.0), std::nullopt,
                      "epoch 0's time above the median later epoch, over the run"};
  }
  const std::string data = inputs.empty() ? std::string("DATA_DIR") : inputs[0].path;
  f.next = fmt::format(
      "nothing to fix in the program; to spare the first epoch, warm the cache before training "
      "(`vmtouch -t {0}` or `cat` its files to /dev/null) or copy it to local NVMe first; "
      "`stallscope bench io {2}` measures what {1} gives cold",
      data, disk, DataDirOf(inputs));
  return f;
}

}  // namespace stallscope
