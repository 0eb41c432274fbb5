// The arithmetic and rules of `stallscope scale` (analyze/run/scaling.h).
#include "analyze/run/scaling.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace stallscope {

ScalePoint MeasureScalePoint(int procs, const std::vector<StepEvent>& steps,
                             const std::vector<StepSync>& syncs,
                             const std::vector<LoaderConfig>& loaders) {
  std::map<std::pair<int, int64_t>, double> sync_of;
  for (const StepSync& s : syncs) sync_of[{s.rank, s.step}] = s.sync_seconds;
  ScalePoint p;
  p.procs = procs;
  std::map<int, std::vector<const StepEvent*>> by_rank;
  for (const StepEvent& e : steps) {
    if (e.step >= kScaleWarmupSteps && e.step_seconds > 0) by_rank[e.rank].push_back(&e);
  }
  std::map<int, int> batch;
  for (const LoaderConfig& l : loaders) {
    if (l.batch_size > 0) batch[l.rank] = l.batch_size;
  }
  double step_sum = 0, sync_sum = 0;
  bool all_sync = true;
  for (auto& [rank, list] : by_rank) {
    if (list.size() < 2) continue;
    std::sort(list.begin(), list.end(),
              [](const StepEvent* a, const StepEvent* b) { return a->t < b->t; });
    double span = list.back()->t - list.front()->t;
    if (!(span > 0)) continue;
    ++p.ranks_reported;
    p.steps += static_cast<int64_t>(list.size());
    double per_rank = static_cast<double>(list.size() - 1) / span;
    p.samples_per_s += per_rank * (batch.count(rank) ? batch[rank] : 1);
    double step = 0, sync = 0;
    for (const StepEvent* e : list) {
      step += e->step_seconds;
      if (auto it = sync_of.find({e->rank, e->step}); it != sync_of.end()) {
        sync += it->second;
      } else {
        all_sync = false;
      }
    }
    step_sum += step / static_cast<double>(list.size());
    sync_sum += sync / static_cast<double>(list.size());
  }
  if (p.ranks_reported > 0) {
    p.step_s = step_sum / p.ranks_reported;
    if (all_sync && procs > 1) p.sync_s = sync_sum / p.ranks_reported;
  }
  return p;
}

std::optional<double> FitAmdahl(const std::vector<std::pair<double, double>>& n_speedup) {
  // 1/S = s + (1 - s)/n  <=>  1/S - 1/n = s (1 - 1/n): a line through the origin.
  double sxy = 0, sxx = 0;
  for (const auto& [n, speedup] : n_speedup) {
    if (!(n >= 1) || !(speedup > 0)) continue;
    double x = 1 - 1 / n;
    double y = 1 / speedup - 1 / n;
    sxy += x * y;
    sxx += x * x;
  }
  if (!(sxx > 0)) return std::nullopt;
  return std::clamp(sxy / sxx, 0.0, 1.0);
}

ScaleAnalysis AnalyzeScaling(std::vector<ScalePoint> points) {
  ScaleAnalysis out;
  std::erase_if(points, [](const ScalePoint& p) {
    return p.procs < 1 || !(p.samples_per_s > 0) || !(p.step_s > 0);
  });
  std::sort(points.begin(), points.end(),
            [](const ScalePoint& a, const ScalePoint& b) { return a.procs < b.procs; });
  if (points.empty()) return out;
  const ScalePoint base = points.front();
  out.base_procs = base.procs;
  std::vector<std::pair<double, double>> fit;
  for (const ScalePoint& p : points) {
    ScaleRow row;
    row.point = p;
    double n = static_cast<double>(p.procs) / base.procs;
    row.speedup = p.samples_per_s / base.samples_per_s;
    row.efficiency = row.speedup / n;
    row.comm_ratio = std::max(0.0, (p.step_s - base.step_s) / p.step_s);
    fit.emplace_back(n, row.speedup);
    out.rows.push_back(row);
  }
  if (out.rows.size() >= 2) out.serial_fraction = FitAmdahl(fit);
  const ScaleRow& last = out.rows.back();
  const double compute = base.step_s;
  const double comm = std::max(0.0, last.point.step_s - base.step_s);
  for (int k : kAccumulationSteps) {
    double total = k * compute + comm;
    out.accumulation.push_back(
        {k, total > 0 ? comm / total : 0, total > 0 ? k * compute / total : 1});
  }
  return out;
}

FindingsWithNotes CheckScaling(const ScaleAnalysis& a, const std::string& command) {
  std::vector<Finding> findings;
  if (a.rows.size() < 2) return FindingsWithNotes{std::move(findings), {}};
  const ScaleRow& last = a.rows.back();
  const int n = last.point.procs;
  // Triage order: memory first (a shortage looks like slow IO), then io, then the network.
  const std::string triage = fmt::format(
      "in this order: memory (`stallscope doctor` on the node), then io (`stallscope run "
      "--procs {} -- {}`: data wait and stragglers per rank), then the network (`mpirun -np {} "
      "stallscope bench allreduce`)",
      n, command, n);

  std::optional<std::pair<const ScaleRow*, const ScaleRow*>> weak_doubling;
  for (const ScaleRow& from : a.rows) {
    for (const ScaleRow& to : a.rows) {
      if (from.point.procs >= kDoublingFromProcs && to.point.procs == 2 * from.point.procs &&
          to.point.samples_per_s / from.point.samples_per_s < kDoublingMinGain && !weak_doubling) {
        weak_doubling = std::pair{&from, &to};
      }
    }
  }
  if (last.efficiency < kScalingPoorEfficiency || weak_doubling) {
    Finding f;
    f.id = "distributed.scaling_poor";
    f.layer = Layer::kDistributed;
    f.severity =
        last.efficiency < kScalingCriticalEfficiency ? Severity::kCritical : Severity::kWarning;
    f.summary = fmt::format(
        "{} ranks give {:.2f}x the throughput of {} ({:.0f}% efficiency)", n, last.speedup,
        a.base_procs == 1 ? "one" : fmt::format("{}", a.base_procs), 100 * last.efficiency);
    if (weak_doubling) {
      f.summary += fmt::format(
          "; {} against {} ranks gains only {:.2f}x: stop adding ranks",
          weak_doubling->second->point.procs, weak_doubling->first->point.procs,
          weak_doubling->second->point.samples_per_s / weak_doubling->first->point.samples_per_s);
    }
    f.evidence = {{"procs", int64_t{n}},
                  {"base_procs", int64_t{a.base_procs}},
                  {"speedup", last.speedup},
                  {"efficiency", last.efficiency},
                  {"samples_per_s", last.point.samples_per_s},
                  {"base_samples_per_s", a.rows.front().point.samples_per_s}};
    if (a.serial_fraction) f.evidence.push_back({"amdahl_serial_fraction", *a.serial_fraction});
    if (weak_doubling) {
      f.evidence.push_back({"doubling_from_procs", int64_t{weak_doubling->first->point.procs}});
      f.evidence.push_back({"doubling_gain", weak_doubling->second->point.samples_per_s /
                                                 weak_doubling->first->point.samples_per_s});
    }
    f.next = "find where the time goes before adding ranks, " + triage;
    f.impact =
        Impact{std::clamp(1 - last.efficiency, 0.0, 1.0), std::nullopt,
               "1 - scaling efficiency: the share of the ranks' time that adds no throughput"};
    findings.push_back(std::move(f));
  }

  if (last.comm_ratio > kCommRatioHigh) {
    Finding f;
    f.id = "network.comm_ratio_high";
    f.layer = Layer::kNetwork;
    f.severity = last.comm_ratio > kCommRatioCritical ? Severity::kCritical : Severity::kWarning;
    f.summary = fmt::format(
        "a step at {} ranks takes {:.0f} ms against {:.0f} ms at {}: an estimated {:.0f}% of it "
        "is communication",
        n, 1000 * last.point.step_s, 1000 * a.rows.front().point.step_s, a.base_procs,
        100 * last.comm_ratio);
    f.evidence = {{"procs", int64_t{n}},
                  {"step_seconds", last.point.step_s},
                  {"base_step_seconds", a.rows.front().point.step_s},
                  {"comm_ratio", last.comm_ratio}};
    if (last.point.sync_s) {
      f.evidence.push_back({"measured_sync_fraction", *last.point.sync_s / last.point.step_s});
    }
    std::string accumulation;
    for (const Accumulation& acc : a.accumulation) {
      f.evidence.push_back({fmt::format("comm_ratio_accumulate_{}", acc.k), acc.comm_ratio});
      accumulation += fmt::format("{}{}: {:.0f}%", accumulation.empty() ? "" : ", ", acc.k,
                                  100 * acc.comm_ratio);
    }
    f.next = fmt::format(
        "first rule out memory and io (`stallscope doctor`; `stallscope run --procs {} -- {}`), "
        "then accumulate gradients (communication share with accumulation {}), then measure "
        "the network: `mpirun -np {} stallscope bench allreduce` and NCCL_DEBUG=INFO through "
        "`stallscope nccl-log`",
        n, command, accumulation, n);
    f.impact = Impact{std::clamp(last.comm_ratio, 0.0, 1.0), std::nullopt,
                      "(t_N - t_1) / t_N: the step time added by running on N ranks"};
    findings.push_back(std::move(f));
  }
  return FindingsWithNotes{std::move(findings), {}};
}

}  // namespace stallscope
