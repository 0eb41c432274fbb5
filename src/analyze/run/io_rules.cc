// The io rules of a recorded run (io_rules.h).
//
// One principle ties their severities together: the hook measures what the
// data path costs (the share of step time spent waiting for the next batch),
// so a cause whose effect was measured absent is lowered one level (a
// saturated disk the steps never wait for does not slow this job now), and
// a cause the steps measurably wait on is raised to critical.
#include "analyze/run/io_rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "analyze/run/inputs.h"
#include "analyze/run/loader_rules.h"
#include "analyze/run/remote_rules.h"
#include "analyze/run/rules.h"
#include "core/stats.h"
#include "core/units.h"

namespace stallscope {
namespace {

using RankSteps = std::vector<const StepEvent*>;  // one rank's steps, by time

struct Context {
  const Timeline& timeline;
  std::optional<DataWait> wait;
  std::vector<EpochSummary> epochs;
  std::map<int, RankSteps> steps_by_rank;

  const RankSteps* StepsOf(int rank) const {
    auto it = steps_by_rank.find(rank);
    return it == steps_by_rank.end() ? nullptr : &it->second;
  }

  // The steps wait for data enough to matter (io.input_bound fires).
  bool InputBound() const {
    return wait && wait->worst_rank_fraction >= kInputBoundWarningFraction;
  }
  // Waiting enough for io.input_bound itself to be critical: a cause found
  // beside it is critical only then, never more severe than its symptom.
  bool InputBoundCritical() const {
    return wait && wait->worst_rank_fraction >= kInputBoundCriticalFraction;
  }
  // The steps were measured and do not wait.
  bool MeasuredQuiet() const {
    return wait && wait->worst_rank_fraction < kInputBoundWarningFraction;
  }
};

Severity Lower(Severity s) {
  return s == Severity::kCritical ? Severity::kWarning : Severity::kInfo;
}

RankSteps::const_iterator FirstStepAtOrAfter(const RankSteps& steps, double t) {
  return std::lower_bound(steps.begin(), steps.end(), t,
                          [](const StepEvent* s, double value) { return s->t < value; });
}

std::string JoinRanks(const std::set<int>& ranks) {
  std::string out;
  for (int rank : ranks) {
    if (!out.empty()) out += ",";
    out += std::to_string(rank);
  }
  return out;
}

// Ranks on this host: each runs its own DataLoader and its own workers.
int RanksOnHost(const Timeline& timeline) {
  std::set<int> ranks;
  for (const LoaderConfig& l : timeline.loaders) ranks.insert(l.rank);
  for (const StepEvent& s : timeline.steps) ranks.insert(s.rank);
  return std::max<int>(1, static_cast<int>(ranks.size()));
}

// Half the CPUs as num_workers is the usual steady start. Every rank on
// the host runs its own workers, so the half is split among them.
std::optional<int> SuggestedWorkers(const Timeline& timeline) {
  if (timeline.info.cpu_count <= 0) return std::nullopt;
  return std::max(1, timeline.info.cpu_count / 2 / RanksOnHost(timeline));
}

std::string SuggestedWorkersText(const Timeline& timeline) {
  std::optional<int> n = SuggestedWorkers(timeline);
  return n ? std::to_string(*n) : std::string("<half the CPUs / ranks>");
}

// Loader workers on the host: per rank its largest loader (a validation
// loader's workers mostly live at other times), summed over the ranks.
int TotalWorkers(const Timeline& timeline) {
  std::map<int, int> per_rank;
  for (const LoaderConfig& l : timeline.loaders) {
    per_rank[l.rank] = std::max(per_rank[l.rank], l.num_workers);
  }
  int total = 0;
  for (const auto& [rank, workers] : per_rank) total += workers;
  return total;
}

// The loader the waits belong to: the rank's loader with the largest
// dataset (training sets outnumber validation sets), else any.
const LoaderConfig* MainLoader(const Timeline& timeline, std::optional<int> rank) {
  const LoaderConfig* best = nullptr;
  for (const LoaderConfig& l : timeline.loaders) {
    if (rank && l.rank != *rank) continue;
    if (!best || l.dataset_length > best->dataset_length) best = &l;
  }
  if (!best && rank) return MainLoader(timeline, std::nullopt);
  return best;
}

// ---- io.device_saturated ---------------------------------------------------

std::optional<Finding> CheckDeviceSaturated(const Context& ctx) {
  const Timeline& timeline = ctx.timeline;
  const std::vector<TimelineSample>& samples = timeline.samples;
  if (samples.empty()) return std::nullopt;
  int saturated = 0;
  int stretch = 0;
  int longest = 0;
  double stretch_s = 0;
  double longest_s = 0;
  std::vector<double> util, await, read;
  for (size_t i = 0; i < samples.size(); ++i) {
    const TimelineSample& s = samples[i];
    if (s.disk_util_percent >= kDiskSaturatedUtilPercent &&
        s.disk_await_ms >= kDiskSaturatedAwaitMs) {
      ++saturated;
      ++stretch;
      stretch_s += IntervalOf(timeline, i);
      if (stretch > longest) {
        longest = stretch;
        longest_s = stretch_s;
      }
      util.push_back(s.disk_util_percent);
      await.push_back(s.disk_await_ms);
      read.push_back(s.disk_read_kib_per_s);
    } else {
      stretch = 0;
      stretch_s = 0;
    }
  }
  const double fraction = static_cast<double>(saturated) / static_cast<double>(samples.size());
  Severity severity;
  if (saturated >= kDiskSaturatedMinIntervals && fraction >= kDiskSaturatedCriticalFraction) {
    severity = Severity::kCritical;
  } else if (longest >= kDiskSaturatedMinIntervals) {
    severity = Severity::kWarning;  // sustained, but in bursts
  } else {
    return std::nullopt;
  }
  if (ctx.MeasuredQuiet()) severity = Lower(severity);

  const std::string& device = timeline.info.data_device;
  std::string disk = device.empty() ? std::string("the data disk") : "the data disk " + device;
  const double util_pct = Median(util);
  const double await_ms = Median(await);
  const double read_kib = Median(read);
  Finding f;
  f.id = "io.device_saturated";
  f.layer = Layer::kIo;
  f.severity = severity;
  f.summary = fmt::format(
      "{} is saturated {} of the run (longest {:.0f} s): {:.0f}% busy, requests wait {:.0f} ms, "
      "reading {}{}",
      disk, FormatPercent(fraction), longest_s, util_pct, await_ms, FormatRate(read_kib * 1024),
      ctx.MeasuredQuiet()
          ? fmt::format("; the steps wait only {} for data, so it does not slow training now",
                        FormatPercent(ctx.wait->worst_rank_fraction))
          : std::string());
  f.evidence = {{"device", device},
                {"saturated_intervals", int64_t{saturated}},
                {"saturated_fraction", fraction},
                {"longest_saturated_s", longest_s},
                {"util_percent", util_pct},
                {"await_ms", await_ms},
                {"read_kib_per_s", read_kib}};
  if (ctx.wait) f.evidence.push_back({"data_wait_fraction", ctx.wait->worst_rank_fraction});
  const std::string data = DataDirOf(WhatTheLoaderReads(timeline));
  f.next = fmt::format(
      "watch it: `iostat -x 1{0}` (a small rareq-sz means small random reads); census the data: "
      "`stallscope dataset {1}`; measure the storage: `stallscope bench io {1}` "
      "(500 MB/s, 5000 IOPS); then pack small files (`stallscope pack {1} OUT --format "
      "wds`) or copy the data to local NVMe",
      device.empty() ? std::string() : " " + device, data);
  return f;
}

// ---- io.cpu_bound_loader ---------------------------------------------------

// The busiest process that is not a rank (the ranks are the loaders' pids
// and the root): a loader worker to point py-spy at.
std::optional<int> BusiestWorker(const Timeline& timeline) {
  std::set<int> ranks{timeline.info.root_pid};
  for (const LoaderConfig& l : timeline.loaders) ranks.insert(l.pid);
  std::map<int, double> cpu;
  for (const ProcessPoint& p : timeline.processes) {
    if (!ranks.contains(p.pid)) cpu[p.pid] += p.cpu_percent;
  }
  auto it = std::max_element(cpu.begin(), cpu.end(),
                             [](const auto& a, const auto& b) { return a.second < b.second; });
  if (it == cpu.end() || it->second <= 0) return std::nullopt;
  return it->first;
}

// The sample at time t (the process points share their sample's t).
const TimelineSample* SampleAt(const Timeline& timeline, double t) {
  auto it = std::lower_bound(timeline.samples.begin(), timeline.samples.end(), t,
                             [](const TimelineSample& s, double value) { return s.t < value; });
  return it != timeline.samples.end() && it->t == t ? &*it : nullptr;
}

// What the loader's `next` names: the unpacking of an archive or
// compressed input, or the decoding fixes.
std::string LoaderFixes(const std::optional<LoaderInput>& input) {
  if (input && input->compressed) {
    // The tool that unpacks it once, by what its first bytes say.
    const std::string& p = input->path;
    const std::string name = p.substr(p.rfind('/') + 1);
    std::string unpack;
    if (input->format == "zip") {
      unpack = fmt::format("unzip -q {} -d /local/data", p);
    } else if (input->format == "7z") {
      unpack = fmt::format("7z x {} -o/local/data", p);
    } else if (input->kind == "archive") {  // a tar inside gzip, bzip2, xz, zstd or lz4
      unpack = fmt::format("tar -xf {} -C /local/data", p);
    } else {
      const char* tool = input->format == "gzip"    ? "gzip -dc"
                         : input->format == "bzip2" ? "bzip2 -dc"
                         : input->format == "xz"    ? "xz -dc"
                         : input->format == "zstd"  ? "zstd -dc"
                                                    : "lz4 -dc";
      unpack = fmt::format("{} {} > /local/data/{}", tool, p, name);
    }
    return fmt::format(
        "{} is decompressed on every read: unpack it to local disk once (`mkdir -p "
        "/local/data && {}`) and read that, or pack the files into uncompressed shards "
        "(`stallscope pack /local/data /local/shards --format wds`)",
        p, unpack);
  }
  const std::string data = input ? DataDirOf({*input}) : std::string("DATA_DIR");
  return fmt::format(
      "decoding and augmentation are the usual cost: decode on the GPU (NVIDIA DALI, "
      "torchvision.io.decode_jpeg on cuda), pre-resize or pack the data offline (`stallscope "
      "pack {} OUT --format wds`); more workers than CPUs does not help",
      data);
}

std::optional<Finding> CheckCpuBoundLoader(const Context& ctx) {
  const Timeline& timeline = ctx.timeline;
  const int cpus = timeline.info.cpu_count;
  if (timeline.samples.empty()) return std::nullopt;
  std::vector<LoaderInput> inputs = WhatTheLoaderReads(timeline);
  std::optional<LoaderInput> input;
  if (!inputs.empty()) input = inputs[0];
  // The workers are known from the hook (the ranks it named); without it
  // every process below the command would count, ranks too.
  const bool hooked = !timeline.loaders.empty() || !timeline.ranks.empty();
  const std::vector<WorkerInterval> load =
      hooked ? WorkerLoad(timeline) : std::vector<WorkerInterval>{};
  int loader_saturated = 0;
  int host_saturated = 0;
  int judged = 0;
  std::vector<double> shares, loader_pct, busy_pct, worker_cpu, worker_delay;
  if (!load.empty()) {
    // The workers themselves: on a CPU or waiting for one for most of each
    // interval, most of it their own work, while the data disk idles.
    for (const WorkerInterval& w : load) {
      const TimelineSample* s = SampleAt(timeline, w.t);
      if (!s) continue;
      ++judged;
      worker_cpu.push_back(w.cpu_percent);
      worker_delay.push_back(w.run_delay_percent);
      loader_pct.push_back(s->loader_cpu_percent);
      busy_pct.push_back(s->cpu_busy_percent);
      if (w.cpu_percent + w.run_delay_percent >= kWorkerBusyPercent &&
          w.cpu_percent >= kWorkerOwnCpuPercent && s->disk_util_percent < kDataDiskIdlePercent) {
        ++loader_saturated;
      }
    }
  } else {
    for (const TimelineSample& s : timeline.samples) {
      ++judged;
      // The ranks' own CPU (the tree minus the loaders) is not the workers' to use.
      double ranks_pct = std::max(0.0, s.tree_cpu_percent - s.loader_cpu_percent);
      if (cpus > 0) {
        double capacity = std::max(100.0, cpus * 100.0 - ranks_pct);
        double share = s.loader_cpu_percent / capacity;
        shares.push_back(share);
        if (share >= kLoaderCpuSaturatedFraction) ++loader_saturated;
      }
      if (s.cpu_busy_percent >= kHostCpuSaturatedPercent) ++host_saturated;
      loader_pct.push_back(s.loader_cpu_percent);
      busy_pct.push_back(s.cpu_busy_percent);
    }
  }
  if (judged == 0) return std::nullopt;
  // Over the run, not only the intervals that had workers: a short-lived
  // pool busy for seconds of an hour is not "most of the run".
  const double n = static_cast<double>(std::max<size_t>(
      static_cast<size_t>(judged), load.empty() ? 0 : timeline.samples.size() - 1));
  const bool loader_bound = loader_saturated / n >= kCpuSaturatedRunFraction;
  // A busy host matters to the loader only when the steps wait for data;
  // with the workers' run delay recorded, io.cpu_contention judges it.
  const bool host_bound =
      load.empty() && host_saturated / n >= kCpuSaturatedRunFraction && ctx.InputBound();
  if (!loader_bound && !host_bound) return std::nullopt;

  Severity severity = Severity::kWarning;
  if (ctx.InputBoundCritical()) severity = Severity::kCritical;
  if (ctx.MeasuredQuiet()) severity = Lower(severity);

  const int workers = TotalWorkers(timeline);
  const double saturated_fraction = (loader_bound ? loader_saturated : host_saturated) / n;
  std::string wait_text =
      ctx.wait ? (ctx.InputBound() ? fmt::format("; steps wait {} of their time for data",
                                                 FormatPercent(ctx.wait->worst_rank_fraction))
                                   : fmt::format("; steps wait only {} for data, so they keep up",
                                                 FormatPercent(ctx.wait->worst_rank_fraction)))
               : std::string();
  const std::string reading = input ? fmt::format(", reading {}", input->Describe()) : "";
  Finding f;
  f.id = "io.cpu_bound_loader";
  f.layer = Layer::kIo;
  f.severity = severity;
  if (!load.empty()) {
    f.summary = fmt::format(
        "the loader workers{} are CPU-bound: each on a CPU {:.0f}% of the time and waiting for "
        "one {:.0f}% more, in {} of the run, while the data disk idles{}{}",
        workers > 0 ? fmt::format(" ({})", workers) : std::string(), Median(worker_cpu),
        Median(worker_delay), FormatPercent(saturated_fraction), reading, wait_text);
  } else if (loader_bound) {
    f.summary = fmt::format(
        "the loader workers{} use {} of the CPUs left to them for {} of the run{}{}",
        workers > 0 ? fmt::format(" ({})", workers) : std::string(), FormatPercent(Median(shares)),
        FormatPercent(saturated_fraction), reading, wait_text);
  } else {
    f.summary = fmt::format("the host's CPUs are {:.0f}% busy for {} of the run{}",
                            Median(busy_pct), FormatPercent(saturated_fraction), wait_text);
  }
  f.evidence = {{"loader_cpu_percent", Median(loader_pct)},
                {"host_cpu_busy_percent", Median(busy_pct)},
                {"cpu_count", int64_t{cpus}},
                {"saturated_fraction", saturated_fraction},
                {"host_saturated", !loader_bound}};
  if (!shares.empty()) f.evidence.push_back({"loader_cpu_share", Median(shares)});
  if (!load.empty()) {
    f.evidence.push_back({"worker_cpu_percent", Median(worker_cpu)});
    f.evidence.push_back({"worker_run_delay_percent", Median(worker_delay)});
  }
  if (input) {
    f.evidence.push_back({"input", input->path});
    f.evidence.push_back({"input_kind", input->kind});
    if (!input->format.empty()) f.evidence.push_back({"input_format", input->format});
    f.evidence.push_back({"input_compressed", input->compressed});
  }
  if (!timeline.loaders.empty()) f.evidence.push_back({"num_workers", int64_t{workers}});
  if (ctx.wait) f.evidence.push_back({"data_wait_fraction", ctx.wait->worst_rank_fraction});
  std::optional<int> worker = BusiestWorker(timeline);
  std::string fixes = LoaderFixes(input);
  // CPUs the job leaves idle: more workers would help first.
  const double idle_cpus = cpus > 0 ? (cpus * 100.0 - Median(busy_pct) * cpus) / 100.0 : 0;
  if (!load.empty() && idle_cpus >= 2) {
    fixes = fmt::format(
        "the host has about {:.0f} idle CPUs: raise num_workers first, one CPU per extra "
        "worker, while the steps still wait; then {}",
        idle_cpus, fixes);
    f.evidence.push_back({"idle_cpus", idle_cpus});
  }
  if (loader_bound) {
    f.next = fmt::format("see where a worker's CPU goes: `py-spy top --pid {}`; {}",
                         worker ? std::to_string(*worker) : std::string("WORKER_PID"), fixes);
  } else {
    f.next = fmt::format(
        "see what holds the CPUs: `pidstat -u 5 1 | sort -k8 -nr | head` (another job, or "
        "this one: `py-spy top --pid {}`); if it is the loading, {}",
        worker                       ? std::to_string(*worker)
        : timeline.info.root_pid > 0 ? std::to_string(timeline.info.root_pid)
                                     : std::string("PID"),
        fixes);
  }
  return f;
}

// ---- io.loader_config --------------------------------------------------------
// One finding per problem, all with this id: each problem has its own
// severity, evidence and fix (num_workers=0 can be critical while pin_memory
// is a warning), and a script can tell them apart by the "problem" evidence.
// Ranks with the same problem share one finding.

struct Problem {
  std::set<int> ranks;
  const LoaderConfig* example = nullptr;  // the worst loader with it
};

Finding LoaderFinding(std::string_view problem, Severity severity, const Problem& p) {
  Finding f;
  f.id = "io.loader_config";
  f.layer = Layer::kIo;
  f.severity = severity;
  f.evidence = {{"problem", std::string(problem)},
                {"ranks", JoinRanks(p.ranks)},
                {"num_workers", int64_t{p.example->num_workers}},
                {"prefetch_factor", int64_t{p.example->prefetch_factor}},
                {"pin_memory", p.example->pin_memory},
                {"persistent_workers", p.example->persistent_workers},
                {"batch_size", int64_t{p.example->batch_size}}};
  return f;
}

std::string OnRanks(const Problem& p, const Timeline& timeline) {
  if (RanksOnHost(timeline) <= 1) return std::string();
  return fmt::format(" on rank{} {}", p.ranks.size() > 1 ? "s" : "", JoinRanks(p.ranks));
}

// What each re-created set of workers costs: the first step of every epoch
// after the first waits for the workers to start and fill their queues; its
// wait above the rank's median wait is the restart.
std::optional<double> MeasuredRestartSeconds(const Context& ctx, int rank) {
  const RankSteps* steps = ctx.StepsOf(rank);
  if (ctx.epochs.size() < 2 || !steps) return std::nullopt;
  std::vector<double> waits;
  for (const StepEvent* s : *steps) waits.push_back(s->wait_seconds);
  const double typical = Median(waits);
  std::vector<double> restarts;
  for (size_t k = 1; k < ctx.epochs.size(); ++k) {
    const EpochSummary& e = ctx.epochs[k];
    auto first = FirstStepAtOrAfter(*steps, e.start_s);
    if (first != steps->end() && (*first)->t <= e.start_s + e.duration_s) {
      restarts.push_back(std::max(0.0, (*first)->wait_seconds - typical));
    }
  }
  if (restarts.empty()) return std::nullopt;
  double sum = 0;
  for (double r : restarts) sum += r;
  return sum / static_cast<double>(restarts.size());
}

void CheckLoaderConfig(const Context& ctx, std::vector<Finding>& out) {
  const Timeline& timeline = ctx.timeline;
  if (timeline.loaders.empty()) return;
  Problem no_workers, unpinned, restarting, big_queue;
  auto note = [](Problem& p, const LoaderConfig& l, bool worse) {
    p.ranks.insert(l.rank);
    if (!p.example || worse) p.example = &l;
  };
  auto queue = [](const LoaderConfig& l) {
    int factor = l.prefetch_factor > 0 ? l.prefetch_factor : kTorchDefaultPrefetchFactor;
    return l.num_workers * factor;
  };
  for (const LoaderConfig& l : timeline.loaders) {
    if (l.num_workers == 0) note(no_workers, l, false);
    if (!l.pin_memory && l.gpu_available) note(unpinned, l, false);
    if (l.num_workers > 0 && !l.persistent_workers) {
      note(restarting, l, restarting.example && l.num_workers > restarting.example->num_workers);
    }
    if (l.num_workers > 0 && queue(l) > kMaxPrefetchBatches) {
      note(big_queue, l, big_queue.example && queue(l) > queue(*big_queue.example));
    }
  }
  const std::string workers = SuggestedWorkersText(timeline);

  if (no_workers.example) {
    Severity severity = ctx.InputBoundCritical() ? Severity::kCritical
                        : ctx.MeasuredQuiet()    ? Severity::kInfo
                                                 : Severity::kWarning;
    Finding f = LoaderFinding("num_workers_zero", severity, no_workers);
    std::string effect =
        !ctx.wait ? std::string(": every batch is loaded between steps, while the GPU waits")
        : ctx.InputBound() ? fmt::format(", and steps wait {} of their time for data",
                                         FormatPercent(ctx.wait->worst_rank_fraction))
                           : fmt::format(", but steps wait only {} for data: this dataset keeps up",
                                         FormatPercent(ctx.wait->worst_rank_fraction));
    f.summary = fmt::format("the DataLoader loads in the training process (num_workers=0{}){}",
                            OnRanks(no_workers, timeline), effect);
    if (std::optional<int> n = SuggestedWorkers(timeline)) {
      f.evidence.push_back({"suggested_num_workers", int64_t{*n}});
    }
    if (ctx.wait) f.evidence.push_back({"data_wait_fraction", ctx.wait->worst_rank_fraction});
    f.next = fmt::format(
        "rerun with num_workers={}, prefetch_factor={}, persistent_workers=True (half the CPUs, "
        "split among the ranks, is a steady start); watch memory (`free -h -s 10`) as you raise "
        "it",
        workers, kSuggestedPrefetchFactor);
    out.push_back(std::move(f));
  }

  if (unpinned.example) {
    Finding f = LoaderFinding("pin_memory_off", Severity::kWarning, unpinned);
    f.summary = fmt::format(
        "pin_memory=False on a GPU job{}: every batch goes through pageable memory, an extra "
        "copy before the DMA to the GPU",
        OnRanks(unpinned, timeline));
    f.next =
        "set pin_memory=True and move batches with `.to(device, non_blocking=True)`; see the "
        "gap on this host: `stallscope bench h2d` (pinned vs pageable)";
    out.push_back(std::move(f));
  }

  if (restarting.example && ctx.epochs.size() >= 2) {
    double mean_epoch = 0;
    for (const EpochSummary& e : ctx.epochs) mean_epoch += e.duration_s;
    mean_epoch /= static_cast<double>(ctx.epochs.size());
    std::optional<double> restart = MeasuredRestartSeconds(ctx, *restarting.ranks.begin());
    const bool short_epochs = mean_epoch < kShortEpochSeconds;
    const bool costly =
        restart && mean_epoch > 0 && *restart >= kWorkerRestartCostFraction * mean_epoch;
    if (short_epochs || costly) {
      Finding f = LoaderFinding("workers_not_persistent", Severity::kWarning, restarting);
      f.summary = fmt::format(
          "the {} loader workers{} are started anew every epoch (persistent_workers=False); "
          "epochs last {:.0f} s{}",
          restarting.example->num_workers, OnRanks(restarting, timeline), mean_epoch,
          restart ? fmt::format(" and each restart makes the first step wait {:.1f} s", *restart)
                  : std::string());
      f.evidence.push_back({"epochs", static_cast<int64_t>(ctx.epochs.size())});
      f.evidence.push_back({"mean_epoch_s", mean_epoch});
      if (restart) {
        f.evidence.push_back({"restart_wait_s", *restart});
        if (mean_epoch > 0 && *restart > 0) {
          f.impact = Impact{*restart / mean_epoch, *restart,
                            "hook: first step's wait of each later epoch above the median wait"};
        }
      }
      f.next =
          "set persistent_workers=True: the workers, their open files and warm caches survive "
          "the epoch";
      out.push_back(std::move(f));
    }
  }

  if (big_queue.example) {
    const int batches = queue(*big_queue.example);
    bool swapped = std::any_of(
        timeline.samples.begin(), timeline.samples.end(),
        [](const TimelineSample& s) { return s.swap_in_pages_per_s + s.swap_out_pages_per_s > 0; });
    Finding f = LoaderFinding("prefetch_queue_large", Severity::kWarning, big_queue);
    f.summary = fmt::format(
        "{} batches in flight per loader{} (num_workers={} x prefetch_factor={}, over {}): "
        "each is held in memory{}",
        batches, OnRanks(big_queue, timeline), big_queue.example->num_workers,
        big_queue.example->prefetch_factor > 0 ? big_queue.example->prefetch_factor
                                               : kTorchDefaultPrefetchFactor,
        kMaxPrefetchBatches, swapped ? ", and the host swapped during the run" : "");
    f.evidence.push_back({"prefetch_batches", int64_t{batches}});
    f.evidence.push_back({"swapped", swapped});
    f.next = fmt::format(
        "lower prefetch_factor to 2-4 and num_workers toward {}: a deeper queue only hides "
        "latency the steps do not see; watch memory with `free -h -s 10`",
        workers);
    out.push_back(std::move(f));
  }

  const int total_workers = TotalWorkers(timeline);
  const int cpus = timeline.info.cpu_count;
  if (cpus > 0 && total_workers > cpus) {
    Problem all;
    for (const LoaderConfig& l : timeline.loaders) {
      note(all, l, all.example && l.num_workers > all.example->num_workers);
    }
    Finding f = LoaderFinding("workers_exceed_cpus", Severity::kWarning, all);
    f.summary = fmt::format(
        "{} loader workers for {} CPUs{}: they take turns on the CPUs, and each holds its "
        "prefetched batches in memory",
        total_workers, cpus,
        RanksOnHost(timeline) > 1 ? fmt::format(" over {} ranks", RanksOnHost(timeline))
                                  : std::string());
    f.evidence.push_back({"total_workers", int64_t{total_workers}});
    f.evidence.push_back({"cpu_count", int64_t{cpus}});
    f.next = fmt::format(
        "rerun with num_workers={} per rank and raise it only while io.input_bound falls", workers);
    out.push_back(std::move(f));
  }
}

// ---- io.input_bound ----------------------------------------------------------

// The mean wait per epoch of one rank, its first step of the run left out.
std::optional<double> WaitPerEpoch(const Context& ctx, int rank) {
  const RankSteps* steps = ctx.StepsOf(rank);
  if (ctx.epochs.empty() || !steps || steps->empty()) return std::nullopt;
  double total = 0;
  int counted = 0;
  for (const EpochSummary& e : ctx.epochs) {
    double wait = 0;
    bool any = false;
    for (auto it = FirstStepAtOrAfter(*steps, e.start_s);
         it != steps->end() && (*it)->t <= e.start_s + e.duration_s; ++it) {
      if (it == steps->begin()) continue;
      wait += std::clamp((*it)->wait_seconds, 0.0, std::max(0.0, (*it)->step_seconds));
      any = true;
    }
    if (any) {
      total += wait;
      ++counted;
    }
  }
  if (counted == 0) return std::nullopt;
  return total / counted;
}

std::optional<Finding> CheckInputBound(const Context& ctx) {
  if (!ctx.InputBound()) return std::nullopt;
  const DataWait& w = *ctx.wait;
  const Timeline& timeline = ctx.timeline;
  const double share = w.worst_rank_fraction;
  std::optional<double> per_epoch = WaitPerEpoch(ctx, w.worst_rank);

  Finding f;
  f.id = "io.input_bound";
  f.layer = Layer::kIo;
  f.severity = share >= kInputBoundCriticalFraction ? Severity::kCritical : Severity::kWarning;
  std::string which;
  // Name the rank when it stands out; ranks that wait alike need no name.
  if (w.ranks > 1 && share - w.fraction >= 0.05) {
    which = fmt::format(" on rank {} ({} over all {} ranks; the others wait for it)", w.worst_rank,
                        FormatPercent(w.fraction), w.ranks);
  }
  f.summary =
      fmt::format("steps wait {} of their time for data{}{}", FormatPercent(share), which,
                  per_epoch ? fmt::format(": {:.0f} s per epoch", *per_epoch) : std::string());
  f.evidence = {{"data_wait_fraction", w.fraction},  {"worst_rank", int64_t{w.worst_rank}},
                {"worst_rank_wait_fraction", share}, {"wait_s", w.wait_seconds},
                {"step_s", w.step_seconds},          {"steps", w.steps},
                {"ranks", int64_t{w.ranks}}};
  if (per_epoch) f.evidence.push_back({"wait_s_per_epoch", *per_epoch});
  f.impact = Impact{share, per_epoch,
                    fmt::format("hook: time next(loader) took over step time, rank {}, its first "
                                "step left out",
                                w.worst_rank)};

  const LoaderConfig* loader = MainLoader(timeline, w.worst_rank);
  const std::string workers = SuggestedWorkersText(timeline);
  std::vector<LoaderInput> inputs = WhatTheLoaderReads(timeline);
  const std::string data = DataDirOf(inputs);
  if (!inputs.empty()) {
    f.evidence.push_back({"input", inputs[0].path});
    f.evidence.push_back({"input_kind", inputs[0].kind});
  }
  if (!loader) {
    f.next = fmt::format(
        "the hook saw no DataLoader settings: check num_workers (start at {}), pin_memory=True, "
        "prefetch_factor={}, persistent_workers=True; then `stallscope dataset {}`",
        workers, kSuggestedPrefetchFactor, data);
  } else if (loader->num_workers == 0) {
    f.next = fmt::format("rerun with num_workers={}, prefetch_factor={}, persistent_workers=True{}",
                         workers, kSuggestedPrefetchFactor,
                         loader->gpu_available && !loader->pin_memory ? ", pin_memory=True" : "");
  } else {
    const std::string& device = timeline.info.data_device;
    f.next = fmt::format(
        "the {} workers do not keep up{}: find why with `stallscope dataset {}` (small files, "
        "remote file system, cold page cache), `iostat -x 1{}{}` and `stallscope bench io "
        "{}`{}",
        loader->num_workers,
        inputs.empty() ? std::string() : fmt::format(" reading {}", inputs[0].Describe()), data,
        device.empty() ? "" : " ", device, data,
        loader->gpu_available && !loader->pin_memory ? "; also set pin_memory=True" : "");
  }
  if (loader && loader->num_workers > 0) {
    const RankSteps* steps = ctx.StepsOf(w.worst_rank);
    RemoteInputFacts facts{0, 0, 0, per_epoch};
    if (steps) {
      for (const StepEvent* s : *steps) {
        if (s == steps->front()) continue;  // the first step waits for the workers' start
        facts.wait_seconds += s->wait_seconds;
        facts.step_seconds += s->step_seconds;
        ++facts.steps;
      }
    }
    AddRemoteFsCause(inputs, loader, facts, f);
  }
  return f;
}

}  // namespace

FindingsWithNotes CheckRunIo(const Timeline& timeline) {
  Context ctx{timeline, MeasureDataWait(timeline), SummarizeEpochs(timeline), {}};
  for (const StepEvent& s : timeline.steps) ctx.steps_by_rank[s.rank].push_back(&s);
  for (auto& [rank, steps] : ctx.steps_by_rank) {
    std::stable_sort(steps.begin(), steps.end(),
                     [](const StepEvent* a, const StepEvent* b) { return a->t < b->t; });
  }
  // The measured symptom first: at equal severity the verdict is what the job
  // pays (DESIGN.md's example: io.input_bound), and its `next` already names
  // the cause found below (loader settings, the disk, the CPUs).
  std::vector<Finding> findings;
  std::optional<Finding> cold = CheckColdCache(timeline, ctx.epochs);
  // The waits a cold first epoch explains: they hold only in it.
  const std::optional<double> later_wait = DataWaitAfterFirstEpoch(timeline, ctx.epochs);
  const bool only_first_epoch = cold && later_wait && *later_wait < kInputBoundWarningFraction;
  // Where the later epochs wait too (a loaded host's workers that fall
  // behind), epoch 0's waits are still the cache's: the loader's symptom and
  // its causes are judged on the later epochs alone, so that no cause is
  // more severe than the symptom it explains.
  std::optional<Context> later;
  if (cold && later_wait && !only_first_epoch) {
    const double from = ctx.epochs[1].start_s;
    later.emplace(Context{timeline,
                          MeasureDataWait(timeline, from),
                          std::vector<EpochSummary>(ctx.epochs.begin() + 1, ctx.epochs.end()),
                          {}});
    for (const auto& [rank, steps] : ctx.steps_by_rank) {
      RankSteps& kept = later->steps_by_rank[rank];
      for (const StepEvent* s : steps) {
        if (s->t > from) kept.push_back(s);
      }
    }
  }
  const Context& judged = later ? *later : ctx;
  std::optional<Finding> contention = CheckCpuContention(timeline, judged.wait);
  auto explained = [&](Finding f) {
    if (only_first_epoch) {
      f.severity = Severity::kInfo;
      f.summary += fmt::format(" (in epoch 0 only: the later epochs wait {}; see io.cold_cache)",
                               FormatPercent(*later_wait));
      f.evidence.push_back({"explained_by", std::string("io.cold_cache")});
    }
    return f;
  };
  if (later) {
    if (std::optional<Finding> f = CheckInputBound(*later)) {
      f->summary += fmt::format(
          " in epochs 1..{} (epoch 0 waited more, for a cold cache: see "
          "io.cold_cache)",
          ctx.epochs.back().epoch);
      f->evidence.push_back({"judged_from_epoch", int64_t{1}});
      f->evidence.push_back({"explained_by", std::string("io.cold_cache")});
      findings.push_back(std::move(*f));
    }
  } else if (std::optional<Finding> f = CheckInputBound(ctx)) {
    findings.push_back(explained(*f));
  }
  if (cold) findings.push_back(std::move(*cold));
  if (std::optional<Finding> f = CheckDeviceSaturated(ctx)) findings.push_back(std::move(*f));
  if (contention) findings.push_back(std::move(*contention));
  // CPUs others hold are not a loader verdict: the loader finding, if any,
  // waits for CPUs it could have had.
  if (std::optional<Finding> f = CheckCpuBoundLoader(judged);
      f && !(contention && contention->severity != Severity::kInfo)) {
    findings.push_back(explained(*f));
  }
  CheckLoaderConfig(judged, findings);
  return FindingsWithNotes{std::move(findings), {}};
}

}  // namespace stallscope
