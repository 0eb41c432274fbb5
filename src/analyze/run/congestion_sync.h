// Whether a port's congestion coincides with the job's all-reduce phases:
// per interval of the run (the timeline's samples), the growth of the
// port's congestion signal (pause frames received + ECN marks + CNPs
// handled for a NIC; port_xmit_wait ticks for an InfiniBand port) against
// the job's sync-wait share (the steps' all-reduce wait over their time,
// from stallscope.ddp's step_sync records joined to the steps). Congestion
// that rises with the sync share is the fabric slowing the collectives;
// congestion in intervals where the job hardly syncs is someone else's
// traffic. Pure; thread-safe.
#pragma once

#include <optional>
#include <string>

#include "sample/timeline.h"

namespace stallscope {

struct CongestionSyncCorrelation {
  std::string port;
  int intervals = 0;                // intervals with steps and a sync share
  int congested_intervals = 0;      // of which the port's signal grew
  double sync_share_congested = 0;  // mean sync-wait share of those
  double sync_share_quiet = 0;      // ... and of the others
  double correlation = 0;           // Pearson's r of the signal's rate and the share
};

// The run's network.congestion says the congestion comes with the
// all-reduce phases from this Pearson r between the two series.
inline constexpr double kCongestionSyncCorrelation = 0.5;

// Fewer intervals than this (with steps) say nothing of a correlation.
inline constexpr int kCorrelationMinIntervals = 4;

// nullopt when the port has no rows, the job sent no step_sync records, or
// fewer than kCorrelationMinIntervals intervals have both, or the port was
// congested in all of them or none (nothing to compare).
std::optional<CongestionSyncCorrelation> CorrelateCongestionWithSync(const Timeline& timeline,
                                                                     const std::string& port);

}  // namespace stallscope
