#include "analyze/run/congestion_sync.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>
#include <vector>

namespace stallscope {
namespace {

// The port's congestion signal in one reading (see the header).
double Signal(const CongestionPoint& p) {
  const NicCongestion& c = p.counters;
  if (c.has_xmit_wait) return static_cast<double>(c.xmit_wait_ticks);
  return static_cast<double>(c.pause_rx + c.ecn_marked + c.cnp_handled);
}

// The signal at time t: the last reading at or before t (rows are stored
// only when a counter moved, so the last one holds until the next).
std::optional<double> SignalAt(const std::vector<const CongestionPoint*>& rows, double t) {
  std::optional<double> v;
  for (const CongestionPoint* p : rows) {
    if (p->t > t) break;
    v = Signal(*p);
  }
  return v;
}

double Pearson(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  double mx = 0, my = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    mx += x[i] / n;
    my += y[i] / n;
  }
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  return sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : 0;
}

}  // namespace

std::optional<CongestionSyncCorrelation> CorrelateCongestionWithSync(const Timeline& timeline,
                                                                     const std::string& port) {
  std::vector<const CongestionPoint*> rows;
  for (const CongestionPoint& p : timeline.congestion)
    if (p.port == port) rows.push_back(&p);
  std::stable_sort(rows.begin(), rows.end(),
                   [](const CongestionPoint* a, const CongestionPoint* b) { return a->t < b->t; });
  if (rows.empty() || timeline.step_syncs.empty()) return std::nullopt;
  std::map<std::pair<int, int64_t>, double> sync;
  for (const StepSync& s : timeline.step_syncs) sync[{s.rank, s.step}] = s.sync_seconds;

  std::vector<double> times;
  for (const TimelineSample& s : timeline.samples) times.push_back(s.t);
  std::sort(times.begin(), times.end());
  std::vector<double> rates, shares;
  CongestionSyncCorrelation out;
  out.port = port;
  double congested_sum = 0, quiet_sum = 0;
  for (size_t i = 1; i < times.size(); ++i) {
    const double from = times[i - 1], to = times[i];
    if (to <= from) continue;
    double synced = 0, stepped = 0;
    for (const StepEvent& e : timeline.steps) {
      if (e.t <= from || e.t > to) continue;
      auto it = sync.find({e.rank, e.step});
      if (it == sync.end() || e.step_seconds <= 0) continue;
      synced += std::min(it->second, e.step_seconds);
      stepped += e.step_seconds;
    }
    std::optional<double> a = SignalAt(rows, from), b = SignalAt(rows, to);
    if (stepped <= 0 || !a || !b) continue;
    const double grew = *b >= *a ? *b - *a : 0;
    const double share = synced / stepped;
    rates.push_back(grew / (to - from));
    shares.push_back(share);
    if (grew > 0) {
      ++out.congested_intervals;
      congested_sum += share;
    } else {
      quiet_sum += share;
    }
  }
  out.intervals = static_cast<int>(rates.size());
  if (out.intervals < kCorrelationMinIntervals || out.congested_intervals == 0 ||
      out.congested_intervals == out.intervals) {
    return std::nullopt;
  }
  out.sync_share_congested = congested_sum / out.congested_intervals;
  out.sync_share_quiet = quiet_sum / (out.intervals - out.congested_intervals);
  out.correlation = Pearson(rates, shares);
  return out;
}

}  // namespace stallscope
