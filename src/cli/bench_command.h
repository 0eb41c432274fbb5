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

}  // namespace stallscope
