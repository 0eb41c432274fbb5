// What `cluster` and `bench allreduce` share on the command-line side:
// joining the world under a launcher, the host name, where a rank sits on its
// node, and the agreement step that turns one rank's failure into one message
// from rank 0 and the same exit on every rank (a rank that just returned
// would leave the others waiting in their next collective).
#pragma once

#include <ctime>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.h"
#include "core/host_clock.h"
#include "core/status.h"
#include "dist/launcher.h"
#include "dist/mpi_world.h"

namespace stallscope {

// HostName() and UtcTime() come from core/host_clock.h.

struct LocalPlace {
  int local_rank = 0;   // index among the ranks on the same host
  int local_ranks = 1;  // ranks on that host
};
LocalPlace LocalPlaceOf(const std::vector<std::string>& rank_hosts, int rank);
std::vector<std::string> DistinctInOrder(const std::vector<std::string>& items);

// How a distributed command starts: world is null when it must exit now with
// exit_code (its message already on stderr).
struct JoinedWorld {
  std::unique_ptr<MpiWorld> world;
  int exit_code = kExitOk;
  std::time_t started = 0;              // just before MPI_Init
  std::vector<std::string> rank_hosts;  // rank_hosts[r]: rank r's host name
};
// Outside mpirun/srun: how to start one, kExitUsage. Then MPI_Init
// (kExitCouldNotRun when it fails) and every rank's host name; a failure
// there aborts the job, as the others may already wait in the collective.
JoinedWorld JoinWorld(std::string_view command);

// Collective: true when `status` is OK on every rank. Otherwise rank 0
// prints each distinct failure once with the ranks and hosts that had it,
// and every rank gets false.
bool AgreeOrReport(MpiWorld& world, std::string_view command, const Status& status);

}  // namespace stallscope
