// `stallscope bench SUBCOMMAND`: the group entry. It parses nothing itself;
// it adds each bench of the table as a CLI11 subcommand and runs the one
// that was given.
#include "cli/bench_command.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <map>
#include <string>

namespace stallscope {
namespace {

constexpr Command kBenchCommands[] = {
    {"io",
     "storage under PATH as fio measures it: sequential 1 MiB O_DIRECT, random 4 KiB, "
     "metadata; verdict against 500 MB/s and 5000 IOPS",
     SetupBenchIo},
    {"h2d",
     "host<->GPU copy bandwidth per GPU, pinned vs pageable, GPU's NUMA node vs the other; "
     "what it means for pin_memory",
     SetupBenchH2d},
    {"allreduce",
     "under mpirun/srun: all-reduce bandwidth as nccl-tests prints it (MPI or NCCL), checked, "
     "against the line rate of the link in use",
     SetupBenchAllreduce},
};

}  // namespace

std::span<const Command> BenchCommands() { return kBenchCommands; }

CommandRunner SetupBench(CLI::App& app) {
  // Zero or one bench: `bench` alone gets our message naming the benches
  // rather than CLI11's generic one; `bench nosuch` is CLI11's "not expected".
  app.require_subcommand(0, 1);
  auto runners = std::make_shared<std::map<CLI::App*, CommandRunner>>();
  std::string names;
  for (const Command& c : kBenchCommands) {
    CLI::App* sub = app.add_subcommand(std::string(c.name), std::string(c.summary));
    (*runners)[sub] = c.setup(*sub);
    names += (names.empty() ? "" : ", ") + std::string(c.name);
  }
  return [runners, names]() {
    for (auto& [sub, run] : *runners) {
      if (sub->parsed()) return run();
    }
    std::fprintf(stderr, "stallscope bench: which bench? one of: %s (stallscope bench --help)\n",
                 names.c_str());
    return kExitUsage;
  };
}

}  // namespace stallscope
