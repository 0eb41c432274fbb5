// The finding a stuck job's Flight Recorder dumps give, from their analysis
// (analyze/flight_recorder/rules.h): distributed.hang, with the ranks the
// others wait for, the group and collective where they diverge, the ranks
// missing from it and their last completed collective as evidence, and the
// next check. Pure; thread-safe.
#pragma once

#include "sample/finding.h"
#include "sample/flight_recorder.h"

namespace stallscope {

// distributed.hang: critical when ranks diverge (a rank missing from a
// collective others entered, a GPU that stopped completing, sizes or dtypes
// that differ, a point-to-point op with no match), a warning when every rank
// entered a collective that never completed, none when nothing is in flight.
FindingsWithNotes FlightRecorderFindings(const FlightRecorderAnalysis& analysis);

}  // namespace stallscope
