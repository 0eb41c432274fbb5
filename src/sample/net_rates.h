// Rates between two /proc/net/dev samples: what an interface moved per second.
//
// Pure arithmetic over two NetDevCounters lists (sample/network.h); the
// sampler takes the two samples, this turns them into per-second rates and
// per-interval error and drop counts. Stateless; thread-safe.
#pragma once

#include <vector>

#include "core/status.h"
#include "sample/network.h"

namespace stallscope {

// Interfaces present in both samples, in the order of `after`. An interface
// that appeared or vanished between them has no rate and is left out. A
// counter that went backwards marks counters_reset and gives zeros. seconds
// must be positive and finite, else InvalidArgument.
Result<std::vector<NetRates>> ComputeNetRates(const std::vector<NetDevCounters>& before,
                                              const std::vector<NetDevCounters>& after,
                                              double seconds);

}  // namespace stallscope
