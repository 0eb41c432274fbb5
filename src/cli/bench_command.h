// The `bench` command group: active tests of one part of the data path,
// each a sub-subcommand (`bench io`, later `bench allreduce`, `bench h2d`).
// A new bench adds one line to the table in bench_command.cc and defines its
// setup in cli/bench_<name>_command.cc, declared here.
#pragma once

#include <span>

#include "cli/commands.h"

namespace stallscope {

// The benches, in the order `stallscope bench --help` lists them.
std::span<const Command> BenchCommands();

CommandRunner SetupBenchIo(CLI::App& app);
// bench h2d (cli/bench_h2d_command.cc). Without the CUDA runtime or a GPU it
// exits kExitNoGpu: "nothing to measure here", apart from 1 (it failed).
inline constexpr int kExitNoGpu = 3;
CommandRunner SetupBenchH2d(CLI::App& app);
CommandRunner SetupBenchAllreduce(CLI::App& app);  // cli/bench_allreduce_command.cc

}  // namespace stallscope
