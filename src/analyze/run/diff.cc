// The comparison of two recorded runs (see diff.h for what is compared
// and when a change counts).
#include "analyze/run/diff.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "analyze/robust_slope.h"
#include "analyze/run/inputs.h"
#include "analyze/run/rank_rules.h"
#include "core/stats.h"
#include "core/text.h"

namespace stallscope {
namespace {

using Json = nlohmann::ordered_json;

// A side's steps: every rank's counted ones, of every file.
struct SideSteps {
  std::vector<StepParts> parts;
  bool all_sync = true;                               // every step has its sync wait
  std::map<int, std::pair<double, int64_t>> by_rank;  // rank -> (sum of steps, count)
  std::optional<double> steps_per_s;
  std::vector<std::string> without_steps;                                // the files with none
  std::vector<std::pair<double, double>> step_series, data_wait_series;  // the lowest rank's
};

enum class Part { kStep, kDataWait, kSyncWait, kCompute };

// One step's part; compute is the step less its waits, the sync wait taken
// out only when both sides have it (`with_sync`), so the two sides' compute
// is the same quantity.
double PartOf(const StepParts& p, Part part, bool with_sync) {
  switch (part) {
    case Part::kStep:
      return p.step_s;
    case Part::kDataWait:
      return p.data_wait_s;
    case Part::kSyncWait:
      return p.sync_wait_s.value_or(0);
    case Part::kCompute:
      return std::max(0.0, p.step_s - p.data_wait_s - (with_sync ? p.sync_wait_s.value_or(0) : 0));
  }
  return 0;
}

double VarianceOfMean(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double m = Mean(v);
  double ss = 0;
  for (double x : v) ss += (x - m) * (x - m);
  return ss / static_cast<double>(v.size() - 1) / static_cast<double>(v.size());
}

// The figures the noise of a part's mean is judged from: per step number,
// the mean over the ranks (ranks in lockstep are not independent samples),
// then the means of consecutive blocks of kDiffBlockSteps of those (a
// loader with two workers hands batches out in pairs, a long wait then
// none: single steps would overstate the noise). The steps alone when
// there are too few for two blocks.
std::vector<double> NoiseSamples(const SideSteps& s, Part part, bool with_sync) {
  std::map<int64_t, std::pair<double, int>> by_step;
  for (const StepParts& p : s.parts) {
    auto& [sum, count] = by_step[p.step];
    sum += PartOf(p, part, with_sync);
    ++count;
  }
  std::vector<double> steps;
  for (const auto& [step, sum] : by_step) steps.push_back(sum.first / sum.second);
  if (steps.size() < 2 * kDiffBlockSteps) return steps;
  std::vector<double> blocks;
  for (size_t i = 0; i + kDiffBlockSteps <= steps.size(); i += kDiffBlockSteps) {
    double sum = 0;
    for (size_t k = i; k < i + kDiffBlockSteps; ++k) sum += steps[k];
    blocks.push_back(sum / kDiffBlockSteps);
  }
  return blocks;
}

double MeanOf(const SideSteps& s, Part part, bool with_sync) {
  double sum = 0;
  for (const StepParts& p : s.parts) sum += PartOf(p, part, with_sync);
  return s.parts.empty() ? 0 : sum / static_cast<double>(s.parts.size());
}

// More than kDiffNoiseSigmas standard errors of the difference of the means.
bool BeyondSpread(const SideSteps& a, const SideSteps& b, Part part, bool with_sync) {
  const double d = std::abs(MeanOf(b, part, with_sync) - MeanOf(a, part, with_sync));
  const double se = std::sqrt(VarianceOfMean(NoiseSamples(a, part, with_sync)) +
                              VarianceOfMean(NoiseSamples(b, part, with_sync)));
  return d > kDiffNoiseSigmas * se;
}

SideSteps CollectSteps(const std::vector<RunAnalysis>& runs) {
  SideSteps s;
  std::optional<int> lowest;
  std::vector<StepParts> of_lowest;  // from its own file: another node's clock is not this one's
  for (const RunAnalysis& run : runs) {
    std::vector<StepParts> parts = CountedStepParts(run.timeline);
    if (parts.empty()) s.without_steps.push_back(run.path);
    for (const StepParts& p : parts) {
      s.all_sync = s.all_sync && p.sync_wait_s.has_value();
      auto& [sum, count] = s.by_rank[p.rank];
      sum += p.step_s;
      ++count;
      s.parts.push_back(p);
    }
    if (parts.empty()) continue;
    const int low = std::min_element(parts.begin(), parts.end(), [](auto& x, auto& y) {
                      return x.rank < y.rank;
                    })->rank;
    if (lowest && *lowest <= low) continue;
    lowest = low;
    of_lowest.clear();
    for (const StepParts& p : parts) {
      if (p.rank == low) of_lowest.push_back(p);
    }
  }
  if (of_lowest.empty()) return s;
  // The job's pace: the lowest rank's counted steps over the time they span.
  double first = of_lowest.front().t, last = first;
  for (const StepParts& p : of_lowest) {
    first = std::min(first, p.t);
    last = std::max(last, p.t);
  }
  if (of_lowest.size() >= 2 && last > first) {
    s.steps_per_s = static_cast<double>(of_lowest.size() - 1) / (last - first);
  }
  for (const StepParts& p : of_lowest) {
    s.step_series.emplace_back(p.t - first, p.step_s);
    s.data_wait_series.emplace_back(p.t - first, p.data_wait_s);
  }
  return s;
}

DiffSide Describe(const std::vector<RunAnalysis>& runs, const SideSteps& steps) {
  DiffSide side;
  std::set<int> ranks;
  std::vector<double> epochs;
  for (const RunAnalysis& run : runs) {
    side.files.push_back(run.path);
    const RunInfo& info = run.timeline.info;
    auto add_host = [&](const std::string& h) {
      if (!h.empty() && std::find(side.hosts.begin(), side.hosts.end(), h) == side.hosts.end()) {
        side.hosts.push_back(h);
      }
    };
    add_host(info.hostname);
    for (const RankInfo& r : run.timeline.ranks) {
      add_host(r.hostname);
      ranks.insert(r.rank);
      side.world_size = std::max(side.world_size, r.world_size);  // what the launcher said
    }
    if (side.command.empty()) side.command = info.command;
    if (side.argv.empty()) side.argv = info.argv;
    if (side.started.empty()) side.started = info.started_utc;
    // A last epoch shorter than the first (the job stopped in it) is left
    // out; a node's file repeats the others' epochs, so one file's are kept.
    if (epochs.empty()) {
      for (size_t i = 0; i < run.epochs.size(); ++i) {
        const EpochSummary& e = run.epochs[i];
        const bool cut = i > 0 && i + 1 == run.epochs.size() && e.steps < run.epochs[0].steps;
        if (!cut && e.duration_s > 0) epochs.push_back(e.duration_s);
      }
    }
  }
  for (const auto& [rank, sum] : steps.by_rank) ranks.insert(rank);
  side.world_size = std::max(side.world_size, static_cast<int>(ranks.size()));
  side.steps = static_cast<int64_t>(steps.parts.size());
  if (!steps.parts.empty()) side.step_s = MeanOf(steps, Part::kStep, false);
  side.steps_per_s = steps.steps_per_s;
  side.step_series = steps.step_series;
  side.data_wait_series = steps.data_wait_series;
  if (!epochs.empty()) side.epoch_s = Mean(epochs);
  return side;
}

// The other changes, in the order they are listed.
class Changes {
 public:
  explicit Changes(std::vector<DiffChange>* out) : out_(out) {}
  void Add(const std::string& what, Json a, Json b, const std::string& unit) {
    out_->push_back(DiffChange{what, std::move(a), std::move(b), unit, std::nullopt});
  }
  void Text(const std::string& what, const std::string& a, const std::string& b) {
    if (a != b) Add(what, a.empty() ? Json() : Json(a), b.empty() ? Json() : Json(b), "");
  }
  void Flag(const std::string& what, std::optional<bool> a, std::optional<bool> b) {
    if (a != b) Add(what, a ? Json(*a) : Json(), b ? Json(*b) : Json(), "");
  }
  // Listed when it moved by at least `at_least` and by `fraction` of the
  // larger value, or is known on one side only.
  void Number(const std::string& what, std::optional<double> a, std::optional<double> b,
              const std::string& unit, double at_least, double fraction) {
    if (!a && !b) return;
    if (a && b) {
      const double d = std::abs(*b - *a);
      if (d < at_least || d < fraction * std::max(std::abs(*a), std::abs(*b))) return;
    }
    Add(what, a ? Json(*a) : Json(), b ? Json(*b) : Json(), unit);
  }

 private:
  std::vector<DiffChange>* out_;
};

constexpr size_t kSlopeSamples = 10;

// The host-wide figures of a side, over every sample of its runs.
struct SideHost {
  std::string data_device;
  std::optional<double> disk_util, disk_await, disk_read;
  std::optional<double> rank_cpu, worker_cpu, host_cpu, iowait;
  std::optional<double> rss_peak, rss_slope, swap_peak, swap_rate;
  std::string busiest_other;  // outside the tree, at least 25% of a CPU on average
  // The interface toward the master (multi-node runs) and its rates, MiB/s.
  std::string net_interface;
  std::optional<double> net_rx, net_tx;
};

SideHost HostFigures(const std::vector<RunAnalysis>& runs) {
  SideHost h;
  std::vector<double> util, await, read, rank_cpu, worker_cpu, host_cpu, iowait, swap, rx, tx;
  double rss_peak = 0, swap_peak = 0;
  std::vector<double> slopes;
  std::map<std::string, double> other_cpu;
  size_t samples = 0;
  for (const RunAnalysis& run : runs) {
    const Timeline& t = run.timeline;
    if (h.data_device.empty()) h.data_device = t.info.data_device;
    if (h.net_interface.empty() && t.node) h.net_interface = t.node->net_interface;
    // The slope over the steps' span (start-up and the exit's freeing left
    // out), from at least kSlopeSamples samples in it.
    double from = 0, to = 1e300;
    if (!t.steps.empty()) {
      from = to = t.steps.front().t;
      for (const StepEvent& e : t.steps) {
        from = std::min(from, e.t);
        to = std::max(to, e.t);
      }
    }
    std::vector<double> ts, rss;
    for (const TimelineSample& s : t.samples) {
      if (!t.info.data_device.empty()) {
        util.push_back(s.disk_util_percent);
        await.push_back(s.disk_await_ms);
        read.push_back(s.disk_read_kib_per_s);
      }
      rank_cpu.push_back(std::max(0.0, s.tree_cpu_percent - s.loader_cpu_percent));
      worker_cpu.push_back(s.loader_cpu_percent);
      host_cpu.push_back(s.cpu_busy_percent);
      iowait.push_back(s.cpu_iowait_percent);
      swap.push_back(s.swap_in_pages_per_s + s.swap_out_pages_per_s);
      if (s.net_rx_bytes_per_s) rx.push_back(*s.net_rx_bytes_per_s / (1 << 20));
      if (s.net_tx_bytes_per_s) tx.push_back(*s.net_tx_bytes_per_s / (1 << 20));
      rss_peak = std::max(rss_peak, static_cast<double>(s.tree_rss_bytes));
      swap_peak = std::max(swap_peak, static_cast<double>(s.swap_used_bytes));
      if (s.t >= from && s.t <= to) {
        ts.push_back(s.t);
        rss.push_back(static_cast<double>(s.tree_rss_bytes) / (1 << 20));
      }
    }
    samples += t.samples.size();
    if (ts.size() >= kSlopeSamples) {
      if (std::optional<SlopeFit> fit = TheilSen(ts, rss)) slopes.push_back(fit->slope);
    }
    for (const OtherProcessPoint& o : t.other_processes) other_cpu[o.comm] += o.cpu_percent;
  }
  if (samples == 0) return h;
  auto mean = [](const std::vector<double>& v) -> std::optional<double> {
    if (v.empty()) return std::nullopt;
    return Mean(v);
  };
  h.disk_util = mean(util);
  h.disk_await = mean(await);
  h.disk_read = mean(read);
  h.rank_cpu = mean(rank_cpu);
  h.worker_cpu = mean(worker_cpu);
  h.host_cpu = mean(host_cpu);
  h.iowait = mean(iowait);
  h.swap_rate = mean(swap);
  h.net_rx = mean(rx);
  h.net_tx = mean(tx);
  h.rss_peak = rss_peak;
  h.swap_peak = swap_peak;
  if (!slopes.empty()) h.rss_slope = Mean(slopes);
  double best = 0;
  for (const auto& [comm, cpu] : other_cpu) {
    const double average = cpu / static_cast<double>(samples);
    if (average >= 25 && average > best) {
      best = average;
      h.busiest_other = comm;
    }
  }
  return h;
}

// The first loader each rank reported, over the side's runs.
std::map<int, LoaderConfig> LoadersByRank(const std::vector<RunAnalysis>& runs) {
  std::map<int, LoaderConfig> by_rank;
  for (const RunAnalysis& run : runs) {
    for (const LoaderConfig& l : run.timeline.loaders) by_rank.try_emplace(l.rank, l);
  }
  return by_rank;
}

void CompareLoaders(const std::vector<RunAnalysis>& a, const std::vector<RunAnalysis>& b,
                    Changes& changes) {
  const std::map<int, LoaderConfig> la = LoadersByRank(a), lb = LoadersByRank(b);
  std::set<int> ranks;
  for (const auto& [r, l] : la) ranks.insert(r);
  for (const auto& [r, l] : lb) ranks.insert(r);
  // One setting: a line for the job when every rank changed it alike, else
  // a line per rank that changed.
  auto compare = [&](const std::string& name, auto get) {
    std::map<int, std::pair<Json, Json>> moved;
    for (int r : ranks) {
      auto ia = la.find(r), ib = lb.find(r);
      Json va = ia == la.end() ? Json() : Json(get(ia->second));
      Json vb = ib == lb.end() ? Json() : Json(get(ib->second));
      if (va != vb) moved[r] = {va, vb};
    }
    if (moved.empty()) return;
    bool alike = moved.size() == ranks.size();
    for (const auto& [r, ab] : moved) alike = alike && ab == moved.begin()->second;
    if (alike) {
      changes.Add("loader." + name, moved.begin()->second.first, moved.begin()->second.second, "");
      return;
    }
    for (const auto& [r, ab] : moved) {
      changes.Add(fmt::format("loader.{} (rank {})", name, r), ab.first, ab.second, "");
    }
  };
  compare("num_workers", [](const LoaderConfig& l) { return l.num_workers; });
  compare("batch_size", [](const LoaderConfig& l) { return l.batch_size; });
  // 0: unknown (a loader without workers has no prefetching).
  compare("prefetch_factor", [](const LoaderConfig& l) {
    return l.prefetch_factor > 0 ? Json(l.prefetch_factor) : Json();
  });
  compare("pin_memory", [](const LoaderConfig& l) { return l.pin_memory; });
  compare("persistent_workers", [](const LoaderConfig& l) { return l.persistent_workers; });
}

// What the loader read most, over the side's runs; nullopt when nothing was
// caught (or the files predate the inputs table).
std::optional<LoaderInput> MainInput(const std::vector<RunAnalysis>& runs) {
  for (const RunAnalysis& run : runs) {
    std::vector<LoaderInput> inputs = WhatTheLoaderReads(run.timeline);
    if (!inputs.empty()) return inputs.front();
  }
  return std::nullopt;
}

// Only what does not depend on which files the samples happened to catch:
// a folder of small files shows as whichever of its files or folders were
// caught open, so its path is compared only for an archive or a compressed
// file, which stands as itself.
void CompareInputs(const LoaderInput& a, const LoaderInput& b, Changes& changes) {
  auto whole = [](const LoaderInput& in) { return in.kind == "archive" || in.compressed; };
  if (whole(a) || whole(b)) changes.Text("input.path", a.path, b.path);
  changes.Text("input.format", a.format, b.format);
  changes.Text("input.fs_type", a.fs_type, b.fs_type);
  changes.Text("input.device", a.device, b.device);
  changes.Flag("input.remote", a.remote, b.remote);
  changes.Flag("input.compressed", a.compressed, b.compressed);
}

void CompareHost(const SideHost& a, const SideHost& b, Changes& changes) {
  // The data disk's figures only where both runs know which disk it is.
  if (!a.data_device.empty() && !b.data_device.empty()) {
    changes.Text("disk.data_device", a.data_device, b.data_device);
    changes.Number("disk.util_percent", a.disk_util, b.disk_util, "%", 10, 0.25);
    changes.Number("disk.await_ms", a.disk_await, b.disk_await, "ms", 1, 0.5);
    changes.Number("disk.read_kib_per_s", a.disk_read, b.disk_read, "KiB/s", 1024, 0.5);
  }
  changes.Number("cpu.ranks_percent", a.rank_cpu, b.rank_cpu, "%", 20, 0.2);
  changes.Number("cpu.workers_percent", a.worker_cpu, b.worker_cpu, "%", 20, 0.2);
  changes.Number("host.cpu_busy_percent", a.host_cpu, b.host_cpu, "%", 10, 0.2);
  changes.Number("host.cpu_iowait_percent", a.iowait, b.iowait, "%", 5, 0.5);
  changes.Text("host.busiest_other_process", a.busiest_other, b.busiest_other);
  changes.Number("memory.rss_peak_bytes", a.rss_peak, b.rss_peak, "bytes", 64.0 * (1 << 20), 0.2);
  changes.Number("memory.rss_slope_mib_per_s", a.rss_slope, b.rss_slope, "MiB/s", 1, 0.5);
  changes.Number("memory.swap_peak_bytes", a.swap_peak, b.swap_peak, "bytes", 64.0 * (1 << 20),
                 0.5);
  changes.Number("memory.swap_pages_per_s", a.swap_rate, b.swap_rate, "pages/s", 10, 0.5);
  // The NIC toward the master: its rates only where both runs recorded them.
  if (a.net_rx && b.net_rx) {
    changes.Text("net.interface", a.net_interface, b.net_interface);
    changes.Number("net.receive_mib_per_s", a.net_rx, b.net_rx, "MiB/s", 1, 0.2);
    changes.Number("net.transmit_mib_per_s", a.net_tx, b.net_tx, "MiB/s", 1, 0.2);
  }
}

// The baseline snapshot's parts diff compares, merged over a side's runs.
struct SideBaseline {
  std::map<std::string, std::set<std::string>> env;  // the nodes' values, distinct
  std::map<std::string, size_t> env_files;           // how many baselines set it
  size_t files = 0;                                  // baselines read
  std::map<std::string, Json> host;                  // "host.mem_total_bytes", "nic.eth0.mtu", ...
};

SideBaseline Baselines(const std::vector<RunAnalysis>& runs) {
  SideBaseline out;
  for (const RunAnalysis& run : runs) {
    const RunInfo& info = run.timeline.info;
    out.host.try_emplace("host.cpus", info.cpu_count);
    out.host.try_emplace("host.mem_total_bytes", info.mem_total_bytes);
    if (info.cgroup_limit_bytes)
      out.host.try_emplace("host.cgroup_limit_bytes", *info.cgroup_limit_bytes);
    if (run.baseline_json.empty()) continue;
    Json j = Json::parse(run.baseline_json, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) continue;
    ++out.files;
    if (auto env = j.find("environment"); env != j.end() && env->is_object()) {
      for (const auto& [key, value] : env->items()) {
        if (!value.is_string()) continue;
        out.env[key].insert(value.get<std::string>());
        ++out.env_files[key];
      }
    }
    if (auto nics = j.find("interfaces"); nics != j.end() && nics->is_array()) {
      for (const Json& nic : *nics) {
        if (!nic.is_object() || !nic.contains("name") || !nic["name"].is_string()) continue;
        const std::string name = nic["name"].get<std::string>();
        if (name == "lo") continue;
        for (const char* key : {"mtu", "speed_mbps"}) {
          if (nic.contains(key) && !nic[key].is_null()) {
            out.host.try_emplace(fmt::format("nic.{}.{}", name, key), nic[key]);
          }
        }
      }
    }
    if (auto disks = j.find("disks"); disks != j.end() && disks->is_array()) {
      for (const Json& disk : *disks) {
        if (!disk.is_object() || !disk.contains("name") || !disk["name"].is_string()) continue;
        if (disk.value("is_partition", false)) continue;
        const std::string name = disk["name"].get<std::string>();
        for (const char* key : {"size_bytes", "rotational", "model"}) {
          if (disk.contains(key) && !disk[key].is_null()) {
            out.host.try_emplace(fmt::format("disk.{}.{}", name, key), disk[key]);
          }
        }
      }
    }
  }
  return out;
}

void CompareBaselines(const SideBaseline& a, const SideBaseline& b, Changes& changes) {
  std::set<std::string> keys;
  for (const auto& [k, v] : a.env) keys.insert(k);
  for (const auto& [k, v] : b.env) keys.insert(k);
  for (const std::string& k : keys) {
    // Set on some nodes only: "(unset)" among the values.
    auto values = [&](const SideBaseline& side) -> std::string {
      auto it = side.env.find(k);
      if (it == side.env.end()) return "";
      std::set<std::string> v = it->second;
      if (side.env_files.at(k) < side.files) v.insert("(unset)");
      return fmt::format("{}", fmt::join(v, " | "));
    };
    changes.Text("env." + k, values(a), values(b));
  }
  keys.clear();
  for (const auto& [k, v] : a.host) keys.insert(k);
  for (const auto& [k, v] : b.host) keys.insert(k);
  for (const std::string& k : keys) {
    auto ia = a.host.find(k), ib = b.host.find(k);
    Json va = ia == a.host.end() ? Json() : ia->second;
    Json vb = ib == b.host.end() ? Json() : ib->second;
    if (va != vb) changes.Add(k, va, vb, k.ends_with("_bytes") ? "bytes" : "");
  }
}

// Each finding id's most severe appearance on a side.
std::map<std::string, Severity> FindingsOf(const std::vector<RunAnalysis>& runs) {
  std::map<std::string, Severity> ids;
  for (const RunAnalysis& run : runs) {
    for (const Finding& f : run.findings) {
      auto [it, fresh] = ids.try_emplace(f.id, f.severity);
      if (!fresh && f.severity > it->second) it->second = f.severity;
    }
  }
  return ids;
}

void CompareFindings(const std::vector<RunAnalysis>& a, const std::vector<RunAnalysis>& b,
                     Changes& changes) {
  const std::map<std::string, Severity> fa = FindingsOf(a), fb = FindingsOf(b);
  std::set<std::string> ids;
  for (const auto& [id, s] : fa) ids.insert(id);
  for (const auto& [id, s] : fb) ids.insert(id);
  for (const std::string& id : ids) {
    auto ia = fa.find(id), ib = fb.find(id);
    changes.Text("finding." + id, ia == fa.end() ? "" : std::string(SeverityName(ia->second)),
                 ib == fb.end() ? "" : std::string(SeverityName(ib->second)));
  }
}

std::string JoinHosts(const std::vector<std::string>& hosts) {
  std::vector<std::string> sorted = hosts;
  std::sort(sorted.begin(), sorted.end());
  return fmt::format("{}", fmt::join(sorted, ","));
}

// By share, largest first; those without a share last. For parts and changes.
constexpr auto LargerShareFirst = [](const auto& x, const auto& y) {
  return x.share.value_or(-1e9) > y.share.value_or(-1e9);
};

// A part's change is noise when under 2 ms a step and under 10% of its value.
bool SmallChange(const DiffComponent& c) {
  const double change = std::abs(c.change_s());
  return change < kDiffMinChangeSeconds && change < kDiffMinChangeFraction * std::max(c.a_s, c.b_s);
}

}  // namespace

std::optional<DiffGpuSide> GpuSideOf(const std::vector<TraceRankBreakdown>& ranks) {
  DiffGpuSide g;
  for (const TraceRankBreakdown& r : ranks) {
    if (!r.temporal || r.steps.empty()) continue;
    const double steps = static_cast<double>(r.steps.size());
    g.compute_s += r.temporal->compute_us / 1e6 / steps;
    g.non_compute_s += r.temporal->non_compute_us / 1e6 / steps;
    g.idle_s += r.temporal->idle_us / 1e6 / steps;
    g.steps += static_cast<int64_t>(r.steps.size());
    ++g.ranks;
  }
  if (g.ranks == 0) return std::nullopt;
  g.compute_s /= g.ranks;
  g.non_compute_s /= g.ranks;
  g.idle_s /= g.ranks;
  return g;
}

std::pair<std::string, std::string> ArgvChange(const std::vector<std::string>& a,
                                               const std::vector<std::string>& b) {
  size_t head = 0;
  while (head < a.size() && head < b.size() && a[head] == b[head]) ++head;
  if (head == a.size() && head == b.size()) return {};
  size_t tail = 0;
  while (tail < a.size() - head && tail < b.size() - head &&
         a[a.size() - 1 - tail] == b[b.size() - 1 - tail]) {
    ++tail;
  }
  // A changed value keeps its flag: "--workers 2", not "2".
  if (head > 0 && a[head - 1].starts_with("-") && head < a.size() && head < b.size() &&
      !a[head].starts_with("-") && !b[head].starts_with("-")) {
    --head;
  }
  auto words = [&](const std::vector<std::string>& v) {
    return JoinCommand(std::vector<std::string>(v.begin() + static_cast<std::ptrdiff_t>(head),
                                                v.end() - static_cast<std::ptrdiff_t>(tail)));
  };
  return {words(a), words(b)};
}

RunDiff DiffRuns(const std::vector<RunAnalysis>& a, const std::vector<RunAnalysis>& b,
                 const std::optional<DiffGpuSide>& gpu_a, const std::optional<DiffGpuSide>& gpu_b,
                 const std::optional<InputElsewhere>& input_a,
                 const std::optional<InputElsewhere>& input_b) {
  RunDiff d;
  d.gpu_a = gpu_a;
  d.gpu_b = gpu_b;
  const SideSteps sa = CollectSteps(a), sb = CollectSteps(b);
  d.a = Describe(a, sa);
  d.b = Describe(b, sb);
  d.same_command = d.a.command == d.b.command;
  d.same_hosts = JoinHosts(d.a.hosts) == JoinHosts(d.b.hosts);
  d.same_world_size = d.a.world_size == d.b.world_size;
  for (const RunAnalysis& run : a) JoinTimes(d.time_a, run.time);
  for (const RunAnalysis& run : b) JoinTimes(d.time_b, run.time);
  for (const SideSteps* steps : {&sa, &sb}) {
    for (const std::string& path : steps->without_steps) {
      d.notes.push_back(fmt::format(
          "{}: no training steps (the hook was not in the job, or it stopped before its "
          "warm-up ended): step times are not compared; the host, the loader and the "
          "environment are",
          path));
    }
  }
  for (const auto* side : {&a, &b}) {
    for (const RunAnalysis& run : *side) {
      if (!run.timeline.inputs_recorded) {
        d.notes.push_back(fmt::format(
            "{}: written before stallscope recorded what the job reads: its inputs are not "
            "compared",
            run.path));
      }
    }
  }

  std::vector<DiffChange> causes;
  if (d.a.step_s && d.b.step_s && *d.a.step_s > 0) {
    d.slowdown = *d.b.step_s / *d.a.step_s;
    const double total = *d.b.step_s - *d.a.step_s;
    // The step changed: by enough to matter, and beyond the runs' own spread.
    d.step_change_beyond_noise = std::abs(total) >= kDiffMinChangeSeconds &&
                                 std::abs(total) >= kDiffMinStepFraction * *d.a.step_s &&
                                 BeyondSpread(sa, sb, Part::kStep, false);
    for (const auto& [rank, ra] : sa.by_rank) {
      auto rb = sb.by_rank.find(rank);
      if (rb == sb.by_rank.end()) continue;
      DiffRank r{rank, ra.first / static_cast<double>(ra.second),
                 rb->second.first / static_cast<double>(rb->second.second), 0};
      r.slowdown = r.b_step_s / r.a_step_s;  // counted steps last more than 0 s
      d.ranks.push_back(r);
    }
    const bool with_sync = sa.all_sync && sb.all_sync;
    auto component = [&](const char* what, Part part) {
      DiffComponent c{what, MeanOf(sa, part, with_sync), MeanOf(sb, part, with_sync), std::nullopt,
                      false};
      if (d.step_change_beyond_noise) {
        c.share = c.change_s() / total;
        // Noise: a small change, or within the spread of the two runs.
        c.cause = !SmallChange(c) && BeyondSpread(sa, sb, part, with_sync);
      }
      d.components.push_back(c);
    };
    component("data_wait", Part::kDataWait);
    if (with_sync) component("sync_wait", Part::kSyncWait);
    component("compute", Part::kCompute);
    std::stable_sort(d.components.begin(), d.components.end(), LargerShareFirst);
    for (const DiffComponent& c : d.components) {
      if (c.cause) causes.push_back(DiffChange{c.what, c.a_s, c.b_s, "s/step", c.share});
    }
  }
  if (gpu_a && gpu_b) {
    // The GPU's view of the same step. No per-step spread here (the traces
    // cover a window of steps): a part is a cause when the step changed and
    // the part is not under 2 ms and under 10% of its value.
    const double total = d.a.step_s && d.b.step_s ? *d.b.step_s - *d.a.step_s : 0;
    auto gpu = [&](const char* what, double a_s, double b_s) {
      DiffComponent c{what, a_s, b_s, std::nullopt, false};
      if (d.step_change_beyond_noise && total != 0) {
        c.share = c.change_s() / total;
        c.cause = !SmallChange(c);
      }
      d.gpu_components.push_back(c);
    };
    gpu("gpu.compute", gpu_a->compute_s, gpu_b->compute_s);
    gpu("gpu.communication_and_copies", gpu_a->non_compute_s, gpu_b->non_compute_s);
    gpu("gpu.idle", gpu_a->idle_s, gpu_b->idle_s);
    std::stable_sort(d.gpu_components.begin(), d.gpu_components.end(), LargerShareFirst);
    for (const DiffComponent& c : d.gpu_components) {
      if (c.cause) causes.push_back(DiffChange{c.what, c.a_s, c.b_s, "s/step", c.share});
    }
  } else if (gpu_a || gpu_b) {
    d.notes.push_back(fmt::format(
        "{}: no profiler trace with GPU rows beside the run file (record with stallscope run "
        "--profile A:B on a GPU job): the GPU's time is not compared",
        fmt::join(gpu_a ? d.b.files : d.a.files, " ")));
  }

  // Both decompositions' causes by share, largest first: of the same change.
  std::stable_sort(causes.begin(), causes.end(), LargerShareFirst);
  d.changes = std::move(causes);
  Changes changes(&d.changes);
  // The words that changed, where both files keep the command's words;
  // else the whole command line.
  if (!d.a.argv.empty() && !d.b.argv.empty()) {
    auto [was, is] = ArgvChange(d.a.argv, d.b.argv);
    if (!was.empty() || !is.empty()) changes.Add("argv", Json(was), Json(is), "");
  } else {
    changes.Text("command", d.a.command, d.b.command);
  }
  changes.Text("hosts", JoinHosts(d.a.hosts), JoinHosts(d.b.hosts));
  if (!d.same_world_size) changes.Add("world_size", d.a.world_size, d.b.world_size, "");
  CompareLoaders(a, b, changes);
  std::optional<LoaderInput> main_a = MainInput(a), main_b = MainInput(b);
  // A side that caught nothing takes what a run of its setting caught, where
  // the caller knows one, and says so.
  auto borrow = [&](std::optional<LoaderInput>& main, const std::optional<InputElsewhere>& other,
                    const std::vector<std::string>& files) {
    if (main || !other) return;
    main = other->input;
    d.notes.push_back(fmt::format(
        "{}: no file the loader read was caught open (small files opened and closed between "
        "samples): what {} caught, a run of the same setting, is compared instead",
        fmt::join(files, " "), other->file));
  };
  borrow(main_a, input_a, d.a.files);
  borrow(main_b, input_b, d.b.files);
  if (main_a && main_b) {
    CompareInputs(*main_a, *main_b, changes);
  } else if (main_a || main_b) {
    d.notes.push_back(fmt::format(
        "{}: no file the loader read was caught open (small files opened and closed between "
        "samples): what the loader read is not compared",
        fmt::join(main_a ? d.b.files : d.a.files, " ")));
  }
  const SideHost host_a = HostFigures(a), host_b = HostFigures(b);
  if (host_a.data_device.empty() != host_b.data_device.empty()) {
    d.notes.push_back(fmt::format(
        "{}: the data disk is not known (no --data, and no worker's read was caught): the data "
        "disk is not compared",
        fmt::join(host_a.data_device.empty() ? d.a.files : d.b.files, " ")));
  }
  CompareHost(host_a, host_b, changes);
  CompareBaselines(Baselines(a), Baselines(b), changes);
  CompareFindings(a, b, changes);
  return d;
}

}  // namespace stallscope
