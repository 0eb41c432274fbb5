// Whether this process was started by a parallel launcher (mpirun, srun, a
// PMI/PMIx process manager), decided from the environment alone, before any
// MPI call: MPI_Init outside a launcher either starts a singleton job that
// silently measures nothing, or hangs looking for a process manager. Also
// the message that tells a user who ran `stallscope bench allreduce` by hand
// how to start it. Pure; thread-safe.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace stallscope {

// Looks a variable up; nullopt when unset. std::getenv in the CLI, a map in tests.
using EnvLookup = std::function<std::optional<std::string>(std::string_view name)>;
EnvLookup ProcessEnvLookup();

struct LauncherInfo {
  std::string name;      // "mpirun (Open MPI)", "srun (Slurm)", "PMIx", "PMI"
  std::string evidence;  // the variables that decided it: "OMPI_COMM_WORLD_SIZE=4"
  std::optional<int> rank;
  std::optional<int> size;
};

// Open MPI's OMPI_COMM_WORLD_SIZE/RANK, then PMIX_RANK (any PMIx launcher),
// PMI_RANK/PMI_SIZE (MPICH's hydra, srun --mpi=pmi2), SLURM_PROCID with
// SLURM_NTASKS and a SLURM_STEP_ID (srun: the batch script has
// SLURM_PROCID=0 too, but no step of its own). nullopt: not under a launcher.
std::optional<LauncherInfo> DetectLauncher(const EnvLookup& env);

// What to type instead, for `stallscope <command>`:
//   mpirun -np 4 stallscope bench allreduce
//   srun -N2 --ntasks-per-node=8 stallscope bench allreduce
std::string NotUnderLauncherMessage(std::string_view command);

}  // namespace stallscope
