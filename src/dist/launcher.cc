// Launcher detection from the environment: see launcher.h.
#include "dist/launcher.h"

#include <fmt/format.h>

#include <cstdlib>

#include "core/text.h"

namespace stallscope {
namespace {

std::optional<int> IntVar(const EnvLookup& env, std::string_view name) {
  std::optional<std::string> value = env(name);
  if (!value) return std::nullopt;
  std::optional<uint64_t> n = ParseUint(Trim(*value));
  if (!n || *n > 1u << 30) return std::nullopt;
  return static_cast<int>(*n);
}

}  // namespace

EnvLookup ProcessEnvLookup() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* value = std::getenv(std::string(name).c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

std::optional<LauncherInfo> DetectLauncher(const EnvLookup& env) {
  if (auto size = IntVar(env, "OMPI_COMM_WORLD_SIZE")) {
    return LauncherInfo{"mpirun (Open MPI)", fmt::format("OMPI_COMM_WORLD_SIZE={}", *size),
                        IntVar(env, "OMPI_COMM_WORLD_RANK"), size};
  }
  if (auto rank = IntVar(env, "PMIX_RANK")) {
    std::optional<int> size = IntVar(env, "PMIX_SIZE");
    if (!size) size = IntVar(env, "SLURM_NTASKS");
    return LauncherInfo{"PMIx", fmt::format("PMIX_RANK={}", *rank), rank, size};
  }
  if (auto rank = IntVar(env, "PMI_RANK")) {
    return LauncherInfo{"PMI", fmt::format("PMI_RANK={}", *rank), rank, IntVar(env, "PMI_SIZE")};
  }
  auto procid = IntVar(env, "SLURM_PROCID");
  auto ntasks = IntVar(env, "SLURM_NTASKS");
  // The batch script itself has SLURM_PROCID=0 but no step id, or the batch
  // step's (0xfffffffe): only srun's steps count.
  std::optional<std::string> step = env("SLURM_STEP_ID");
  if (procid && ntasks && step && *step != "4294967294" && *step != "batch") {
    return LauncherInfo{"srun (Slurm)",
                        fmt::format("SLURM_PROCID={} SLURM_NTASKS={}", *procid, *ntasks), procid,
                        ntasks};
  }
  return std::nullopt;
}

std::string NotUnderLauncherMessage(std::string_view command) {
  return fmt::format(
      "stallscope {0}: not started by mpirun or srun (none of OMPI_COMM_WORLD_SIZE, PMIX_RANK, "
      "PMI_RANK, SLURM_PROCID+SLURM_NTASKS is set). It runs one process per rank; start it "
      "with\n"
      "  mpirun -np 4 stallscope {0}                      (one host, 4 ranks)\n"
      "  mpirun -np 16 --host node1:8,node2:8 stallscope {0}\n"
      "  srun -N2 --ntasks-per-node=8 stallscope {0}      (Slurm)\n"
      "(as root Open MPI also wants --allow-run-as-root; more ranks than cores: --oversubscribe)\n",
      command);
}

}  // namespace stallscope
