// The comparison of two recorded runs (see run_diff.h for what is compared
// and when a change counts).
#include "analyze/run_diff.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "analyze/rank_rules.h"
#include "analyze/robust_slope.h"
#include "analyze/run_inputs.h"

namespace stallscope {
namespace {

using Json = nlohmann::ordered_json;

// A side's steps, every rank's counted ones pooled.
struct SideSteps {
  std::vector<double> step, wait, sync, compute;
  bool all_sync = true;
  std::map<int, std::pair<double, int64_t>> by_rank;  // rank -> (sum of steps, count)
  std::optional<double> steps_per_s;
};

double Mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0 : sum / static_cast<double>(v.size());
}

double VarianceOfMean(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double m = Mean(v);
  double ss = 0;
  for (double x : v) ss += (x - m) * (x - m);
  return ss / static_cast<double>(v.size() - 1) / static_cast<double>(v.size());
}

// The means of consecutive blocks of kDiffBlockSteps values (a rank's
// steps, in order): a loader with two workers hands batches out in pairs,
// long wait then none, and the noise of the mean is that of the blocks,
// not of the single steps. Single values when there are too few blocks.
std::vector<double> BlockMeans(const std::vector<double>& v) {
  if (v.size() < 2 * kDiffBlockSteps) return v;
  std::vector<double> blocks;
  for (size_t i = 0; i + kDiffBlockSteps <= v.size(); i += kDiffBlockSteps) {
    double sum = 0;
    for (size_t k = i; k < i + kDiffBlockSteps; ++k) sum += v[k];
    blocks.push_back(sum / kDiffBlockSteps);
  }
  return blocks;
}

// The change of a mean from a to b is beyond noise (run_diff.h).
bool BeyondNoise(const std::vector<double>& a, const std::vector<double>& b) {
  const double ma = Mean(a), mb = Mean(b);
  const double d = std::abs(mb - ma);
  const double se = std::sqrt(VarianceOfMean(BlockMeans(a)) + VarianceOfMean(BlockMeans(b)));
  return d >= kDiffMinChangeSeconds && d >= kDiffMinChangeFraction * std::max(ma, mb) &&
         d > kDiffNoiseSigmas * se;
}

SideSteps CollectSteps(const std::vector<RunAnalysis>& runs) {
  SideSteps s;
  for (const RunAnalysis& run : runs) {
    std::vector<StepParts> parts = CountedStepParts(run.timeline);
    for (const StepParts& p : parts) {
      s.step.push_back(p.step_s);
      s.wait.push_back(p.data_wait_s);
      s.sync.push_back(p.sync_wait_s.value_or(0));
      s.all_sync = s.all_sync && p.sync_wait_s.has_value();
      auto& [sum, count] = s.by_rank[p.rank];
      sum += p.step_s;
      ++count;
    }
    // The job's pace: the lowest rank's counted steps over the time they span.
    if (!s.steps_per_s && !parts.empty()) {
      const int lowest = std::min_element(parts.begin(), parts.end(), [](auto& x, auto& y) {
                           return x.rank < y.rank;
                         })->rank;
      std::set<int64_t> counted;
      for (const StepParts& p : parts) {
        if (p.rank == lowest) counted.insert(p.step);
      }
      double first = 0, last = 0;
      int64_t n = 0;
      for (const StepEvent& e : run.timeline.steps) {
        if (e.rank != lowest || counted.count(e.step) == 0) continue;
        if (n == 0 || e.t < first) first = e.t;
        last = std::max(last, e.t);
        ++n;
      }
      if (n >= 2 && last > first) s.steps_per_s = static_cast<double>(n - 1) / (last - first);
    }
  }
  for (size_t i = 0; i < s.step.size(); ++i) {
    s.compute.push_back(std::max(0.0, s.step[i] - s.wait[i] - (s.all_sync ? s.sync[i] : 0.0)));
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
    }
    if (side.command.empty()) side.command = info.command;
    if (side.started.empty()) side.started = info.started_utc;
    for (const EpochSummary& e : run.epochs) epochs.push_back(e.duration_s);
  }
  for (const auto& [rank, sum] : steps.by_rank) ranks.insert(rank);
  side.world_size = static_cast<int>(ranks.size());
  side.steps = static_cast<int64_t>(steps.step.size());
  if (!steps.step.empty()) side.step_s = Mean(steps.step);
  side.steps_per_s = steps.steps_per_s;
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
};

SideHost HostFigures(const std::vector<RunAnalysis>& runs) {
  SideHost h;
  std::vector<double> util, await, read, rank_cpu, worker_cpu, host_cpu, iowait, swap;
  double rss_peak = 0, swap_peak = 0;
  std::vector<double> slopes;
  std::map<std::string, double> other_cpu;
  size_t samples = 0;
  for (const RunAnalysis& run : runs) {
    const Timeline& t = run.timeline;
    if (h.data_device.empty()) h.data_device = t.info.data_device;
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
}

// The baseline snapshot's parts diff compares, merged over a side's runs.
struct SideBaseline {
  std::map<std::string, std::string> env;
  std::map<std::string, Json> host;  // "host.mem_total_bytes", "nic.eth0.mtu", ...
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
    if (auto env = j.find("environment"); env != j.end() && env->is_object()) {
      for (const auto& [key, value] : env->items()) {
        if (!value.is_string()) continue;
        auto [it, fresh] = out.env.try_emplace(key, value.get<std::string>());
        if (!fresh && it->second != value.get<std::string>()) {
          it->second += " | " + value.get<std::string>();  // the nodes disagree
        }
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
    auto ia = a.env.find(k), ib = b.env.find(k);
    changes.Text("env." + k, ia == a.env.end() ? "" : ia->second,
                 ib == b.env.end() ? "" : ib->second);
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

}  // namespace

RunDiff DiffRuns(const std::vector<RunAnalysis>& a, const std::vector<RunAnalysis>& b) {
  RunDiff d;
  const SideSteps sa = CollectSteps(a), sb = CollectSteps(b);
  d.a = Describe(a, sa);
  d.b = Describe(b, sb);
  d.same_command = d.a.command == d.b.command;
  d.same_hosts = JoinHosts(d.a.hosts) == JoinHosts(d.b.hosts);
  d.same_world_size = d.a.world_size == d.b.world_size;
  for (const auto* side : {&a, &b}) {
    for (const RunAnalysis& run : *side) {
      if (CountedStepParts(run.timeline).empty()) {
        d.notes.push_back(fmt::format(
            "{}: no training steps (the hook was not in the job, or it stopped before its "
            "warm-up ended): step times are not compared; the host, the loader and the "
            "environment are",
            run.path));
      }
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
    d.step_change_beyond_noise = BeyondNoise(sa.step, sb.step);
    for (const auto& [rank, ra] : sa.by_rank) {
      auto rb = sb.by_rank.find(rank);
      if (rb == sb.by_rank.end()) continue;
      DiffRank r{rank, ra.first / static_cast<double>(ra.second),
                 rb->second.first / static_cast<double>(rb->second.second), 0};
      r.slowdown = r.a_step_s > 0 ? r.b_step_s / r.a_step_s : 0;
      d.ranks.push_back(r);
    }
    const double total = *d.b.step_s - *d.a.step_s;
    auto component = [&](const char* what, const std::vector<double>& va,
                         const std::vector<double>& vb) {
      DiffComponent c{what, Mean(va), Mean(vb), std::nullopt, false};
      if (d.step_change_beyond_noise) {
        c.share = c.change_s() / total;
        c.cause = BeyondNoise(va, vb);
      }
      d.components.push_back(c);
    };
    component("data_wait", sa.wait, sb.wait);
    if (sa.all_sync && sb.all_sync) component("sync_wait", sa.sync, sb.sync);
    component("compute", sa.compute, sb.compute);
    std::stable_sort(d.components.begin(), d.components.end(),
                     [](const DiffComponent& x, const DiffComponent& y) {
                       return x.share.value_or(-1e9) > y.share.value_or(-1e9);
                     });
    for (const DiffComponent& c : d.components) {
      if (c.cause) causes.push_back(DiffChange{c.what, c.a_s, c.b_s, "s/step", c.share});
    }
  }

  d.changes = std::move(causes);
  Changes changes(&d.changes);
  changes.Text("command", d.a.command, d.b.command);
  changes.Text("hosts", JoinHosts(d.a.hosts), JoinHosts(d.b.hosts));
  if (!d.same_world_size) changes.Add("world_size", d.a.world_size, d.b.world_size, "");
  CompareLoaders(a, b, changes);
  const std::optional<LoaderInput> input_a = MainInput(a), input_b = MainInput(b);
  if (input_a && input_b) {
    CompareInputs(*input_a, *input_b, changes);
  } else if (input_a || input_b) {
    d.notes.push_back(fmt::format(
        "{}: no file the loader read was caught open (small files opened and closed between "
        "samples): what the loader read is not compared",
        fmt::join(input_a ? d.b.files : d.a.files, " ")));
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
