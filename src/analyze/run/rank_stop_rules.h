// A job that stopped: the rank that died first, how and at which step, and
// where the others were (distributed.rank_died; memory.oom_killed when the
// kernel's OOM killer ended it); a job where no rank finished a step for
// --hang-after, with where each rank stopped and which wait in a collective
// (distributed.hang). They judge what `run` kept in rank_stops and
// rank_states (record/rank_watch.h, the hook's exception and bye records,
// the rank launcher's reports) and the kernel's OOM reports (memory_peaks).
// A stop is the verdict of its report (analyze/report.h, IsJobStop).
//
// The steps a rank finished are the hook's: a step left by an exception
// ends there, as one left by `break` does.
//
// The first to fail is the cause: the ranks the launcher then ended
// (SIGTERM, SIGKILL after kRankTermGraceSeconds), or that vanished with it,
// are its consequences and named as such. Every rank ended at once by
// SIGINT, SIGTERM or SIGHUP is a stop the user (or the scheduler) asked for:
// no finding. Pure; thread-safe.
#pragma once

#include "sample/finding.h"
#include "sample/timeline.h"

namespace stallscope {

FindingsWithNotes CheckRankStops(const Timeline& timeline);

// The parts of PyTorch's message when a DataLoader worker dies: "DataLoader
// worker (pid 4242) is killed by signal: Killed." or "DataLoader worker
// (pid(s) 4242, 4243) exited unexpectedly".
struct LoaderWorkerDeath {
  std::vector<int> pids;
  std::string signal;  // "Killed", "Segmentation fault", ...; empty when not said
};
std::optional<LoaderWorkerDeath> ParseLoaderWorkerDeath(std::string_view message);

}  // namespace stallscope
