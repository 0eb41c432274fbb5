// The network rules over a recorded run: port error counters that grew
// between their first and last stored readings, and the network facts of
// the run's baseline snapshot for the host rules (network_rules.h). Pure;
// thread-safe. Part of the run's rules (rules.h: CheckRun).
#pragma once

#include <string_view>
#include <vector>

#include "analyze/host/network_rules.h"
#include "core/status.h"
#include "sample/finding.h"
#include "sample/timeline.h"

namespace stallscope {

// network.port_errors over the run: each port's error counters from its
// first stored reading to its last (network_rules.cc).
FindingsWithNotes CheckRunNetwork(const Timeline& timeline);

// The network facts of the run's baseline snapshot (stallscope.snapshot/1
// JSON, as the run file keeps it) for CheckNetwork's host rules; missing or
// mistyped fields are unknown. ParseError when it is not a JSON object.
Result<NetworkObservation> NetworkFromBaseline(std::string_view snapshot_json);

}  // namespace stallscope
