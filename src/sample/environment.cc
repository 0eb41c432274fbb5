// The training-related environment (see environment.h): which variables are
// kept, and the parse of NUL-separated NAME=VALUE entries.
#include "sample/environment.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <span>

#include "core/text.h"

extern char** environ;  // POSIX; not declared by <unistd.h> without _GNU_SOURCE

namespace stallscope {
namespace {

constexpr std::array<std::string_view, 5> kPrefixes = {"NCCL_", "GLOO_", "TORCH_", "TORCHELASTIC_",
                                                       "OMPI_COMM_WORLD_"};
// Of OMPI_COMM_WORLD_*, only these three; the prefix above is a fast filter.
constexpr std::array<std::string_view, 3> kOmpiNames = {
    "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"};
constexpr std::array<std::string_view, 16> kNames = {"CUDA_VISIBLE_DEVICES",
                                                     "CUDA_DEVICE_ORDER",
                                                     "OMP_NUM_THREADS",
                                                     "MKL_NUM_THREADS",
                                                     "PYTORCH_CUDA_ALLOC_CONF",
                                                     "RANK",
                                                     "LOCAL_RANK",
                                                     "WORLD_SIZE",
                                                     "LOCAL_WORLD_SIZE",
                                                     "GROUP_RANK",
                                                     "NODE_RANK",
                                                     "MASTER_ADDR",
                                                     "MASTER_PORT",
                                                     "SLURM_PROCID",
                                                     "SLURM_LOCALID",
                                                     "SLURM_NTASKS"};

// Variables whose value must be a non-negative integer for the launcher.
constexpr std::array<std::string_view, 12> kIntegerNames = {"RANK",
                                                            "LOCAL_RANK",
                                                            "WORLD_SIZE",
                                                            "LOCAL_WORLD_SIZE",
                                                            "GROUP_RANK",
                                                            "NODE_RANK",
                                                            "SLURM_PROCID",
                                                            "SLURM_LOCALID",
                                                            "SLURM_NTASKS",
                                                            "OMPI_COMM_WORLD_RANK",
                                                            "OMPI_COMM_WORLD_SIZE",
                                                            "OMPI_COMM_WORLD_LOCAL_RANK"};

bool Contains(std::span<const std::string_view> names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::optional<int64_t> FirstInteger(const TrainingEnvironment& env,
                                    std::initializer_list<std::string_view> names) {
  for (std::string_view name : names) {
    if (std::optional<std::string_view> value = env.Get(name)) {
      if (std::optional<int64_t> number = ParseInt(*value)) return number;
    }
  }
  return std::nullopt;
}

}  // namespace

bool IsTrainingVariable(std::string_view name) {
  if (name.empty()) return false;
  for (std::string_view prefix : kPrefixes) {
    if (name.size() > prefix.size() && name.substr(0, prefix.size()) == prefix) {
      return prefix != "OMPI_COMM_WORLD_" || Contains(kOmpiNames, name);
    }
  }
  return Contains(kNames, name);
}

std::optional<std::string_view> TrainingEnvironment::Get(std::string_view name) const {
  auto it = std::lower_bound(
      variables.begin(), variables.end(), name,
      [](const EnvironmentVariable& variable, std::string_view n) { return variable.name < n; });
  if (it == variables.end() || it->name != name) return std::nullopt;
  return std::string_view(it->value);
}

std::optional<int64_t> TrainingEnvironment::Rank() const {
  return FirstInteger(*this, {"RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK"});
}
std::optional<int64_t> TrainingEnvironment::LocalRank() const {
  return FirstInteger(*this, {"LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK"});
}
std::optional<int64_t> TrainingEnvironment::WorldSize() const {
  return FirstInteger(*this, {"WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE"});
}

Result<TrainingEnvironment> ParseEnviron(std::string_view text, std::string_view source) {
  TrainingEnvironment env;
  env.source = std::string(source);
  int entry = 0;
  while (!text.empty()) {
    size_t end = text.find('\0');
    if (end == std::string_view::npos) end = text.size();
    std::string_view item = text.substr(0, end);
    text.remove_prefix(std::min(end + 1, text.size()));
    ++entry;
    size_t equals = item.find('=');
    if (equals == std::string_view::npos) continue;
    std::string_view name = item.substr(0, equals);
    if (!IsTrainingVariable(name)) continue;
    std::string_view value = item.substr(equals + 1);
    if (Contains(kIntegerNames, name)) {
      std::optional<uint64_t> number = ParseUint(value);
      if (!number || *number > static_cast<uint64_t>(INT64_MAX)) {
        return Status::ParseError(source, entry,
                                  std::string(name) + " is not a non-negative integer: '" +
                                      std::string(value.substr(0, 64)) + "'");
      }
    }
    env.variables.push_back({std::string(name), std::string(value)});
  }
  // Stable: of duplicate names the first stays first, as getenv() finds it.
  std::stable_sort(
      env.variables.begin(), env.variables.end(),
      [](const EnvironmentVariable& a, const EnvironmentVariable& b) { return a.name < b.name; });
  env.variables.erase(std::unique(env.variables.begin(), env.variables.end(),
                                  [](const EnvironmentVariable& a, const EnvironmentVariable& b) {
                                    return a.name == b.name;
                                  }),
                      env.variables.end());
  return env;
}

}  // namespace stallscope
