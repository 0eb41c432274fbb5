// The training-related environment of a job: the variables that decide how
// torchrun/SLURM/OpenMPI ranks find each other and how NCCL, Gloo, OpenMP and
// the CUDA caching allocator behave (NCCL_*, GLOO_*, TORCH_*, TORCHELASTIC_*,
// CUDA_VISIBLE_DEVICES, RANK, MASTER_ADDR, SLURM_PROCID, ...). Nothing else is
// collected: an environment also holds tokens and passwords, and those never
// leave this parser. Read from this process's environ or /proc/PID/environ.
// Plain data and pure functions; thread-safe. probe/environment.h reads it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace stallscope {

struct EnvironmentVariable {
  std::string name;
  std::string value;
};

struct TrainingEnvironment {
  std::string source;                          // "environ", "/proc/42/environ"
  std::vector<EnvironmentVariable> variables;  // sorted by name, first occurrence wins

  // The value of a collected variable; nullopt when unset (or not collected).
  std::optional<std::string_view> Get(std::string_view name) const;
  // Global rank: RANK, else SLURM_PROCID, else OMPI_COMM_WORLD_RANK.
  std::optional<int64_t> Rank() const;
  // LOCAL_RANK, else SLURM_LOCALID, else OMPI_COMM_WORLD_LOCAL_RANK.
  std::optional<int64_t> LocalRank() const;
  // WORLD_SIZE, else SLURM_NTASKS, else OMPI_COMM_WORLD_SIZE.
  std::optional<int64_t> WorldSize() const;
};

// True for the names this module collects.
bool IsTrainingVariable(std::string_view name);

// NUL-separated NAME=VALUE entries (as in /proc/PID/environ). Entries without
// '=' (execve allows them) are skipped. A rank or size variable that is not a
// non-negative integer ("RANK=abc") is a ParseError naming the entry number as
// its line: torch would fail on it too, and the user should see which.
Result<TrainingEnvironment> ParseEnviron(std::string_view text, std::string_view source);

}  // namespace stallscope
