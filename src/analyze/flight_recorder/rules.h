// Where a stuck job's ranks diverge, from their Flight Recorder dumps
// (sample/flight_recorder.h): per process group, the first collective not
// every member entered (by collective_seq_id), the ranks that never entered
// it, each member's last completed collective, ranks whose GPU stopped
// completing what their peers completed, sizes or dtypes that differ between
// ranks, and point-to-point ops whose peer has none to match; then the ranks
// the others wait for (the finding: analyze/flight_recorder/finding.h).
//
// It follows the rules of PyTorch's own analyzer
// (torch/distributed/flight_recorder, fr_trace) for what makes two ranks'
// entries the same collective (group, sequence id, op, sizes, dtypes) and
// differs where that analyzer is misled by the dumps torch writes at a
// timeout: those hold only entries still in flight, so a rank that
// completed a collective has no entry for it, and record ids are each rank's
// own counter. Here a rank's position comes from its pg_status counters
// (last enqueued, last completed; format 2.3 on) and only then from its
// entries, and ranks are never aligned by record id. docs/commands/hang.md
// compares the two on real dumps.
//
// Pure: dumps in, analysis out. Thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "sample/flight_recorder.h"

namespace stallscope {

// Differences kept per group (the first ones by sequence id): one is enough
// to know the ranks disagree, a few show whether it repeats.
inline constexpr size_t kFrMaxMismatchesPerGroup = 8;
inline constexpr size_t kFrMaxUnmatchedP2pPerGroup = 16;

FlightRecorderAnalysis AnalyzeFlightRecorder(const std::vector<FlightRecorderDump>& dumps);

// Ranks as "9,14": the form evidence and text print rank lists in.
std::string RankList(const std::vector<int64_t>& ranks);

}  // namespace stallscope
