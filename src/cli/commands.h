// The subcommand table and the entry point main() calls.
//
// One table of {name, summary, setup}: setup adds the command's flags to its
// CLI11 subcommand and returns the function that runs it. Help is printed
// from the table. The CLI parses and wires; the logic lives in probe/,
// analyze/ and render/. Exit codes (DESIGN.md): 0 the check ran, whatever it
// found; 1 it could not run; 2 bad usage. Also the helpers the commands
// share: the error line they print, the PYTHONPATH of a hooked job.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace CLI {
class App;
}

namespace stallscope {

inline constexpr int kExitOk = 0;
inline constexpr int kExitCouldNotRun = 1;
inline constexpr int kExitUsage = 2;
// `doctor --fail-on LEVEL`: a finding reached LEVEL (3 is bench h2d's no GPU).
inline constexpr int kExitGateReached = 4;

using CommandRunner = std::function<int()>;

struct Command {
  std::string_view name;
  std::string_view summary;
  CommandRunner (*setup)(CLI::App& app);
};

std::span<const Command> Commands();

// Each command's setup, defined in cli/<name>_command.cc.
CommandRunner SetupSnapshot(CLI::App& app);
CommandRunner SetupDoctor(CLI::App& app);
CommandRunner SetupHistory(CLI::App& app);
CommandRunner SetupRun(CLI::App& app);
CommandRunner SetupScale(CLI::App& app);  // cli/scale_command.cc
CommandRunner SetupWatch(CLI::App& app);
CommandRunner SetupReport(CLI::App& app);
CommandRunner SetupDiff(CLI::App& app);  // cli/diff_command.cc
CommandRunner SetupNcclLog(CLI::App& app);
CommandRunner SetupHang(CLI::App& app);   // cli/hang_command.cc
CommandRunner SetupBench(CLI::App& app);  // the group; its benches: cli/bench_command.h
CommandRunner SetupDataset(CLI::App& app);
CommandRunner SetupPack(CLI::App& app);
CommandRunner SetupNet(CLI::App& app);
CommandRunner SetupPlan(CLI::App& app);  // plan memory / plan loader: cli/plan_command.cc
CommandRunner SetupExporter(CLI::App& app);
CommandRunner SetupAb(CLI::App& app);
CommandRunner SetupCluster(CLI::App& app);  // cli/cluster_command.cc
CommandRunner SetupTrace(CLI::App& app);    // cli/trace_command.cc
CommandRunner SetupHookEnv(CLI::App& app);  // cli/hook_env_command.cc
CommandRunner SetupSlurm(CLI::App& app);    // cli/slurm_command.cc

int RunCli(int argc, char** argv);

// "stallscope COMMAND: MESSAGE" on stderr; returns `code`.
int Fail(std::string_view command, std::string_view message, int code);
// The same with s.message(); kExitUsage when `usage`, else kExitCouldNotRun.
int Fail(std::string_view command, const Status& s, bool usage);

// PYTHONPATH for a job the hook watches: the hook's directory (installed
// beside the binary, or the build tree's: cli/hook_files.h), then the PYTHONPATH inherited, when
// set.
std::string HookPythonPath();
// What a job started under the hook gets in its environment: the hook's
// socket (STALLSCOPE_SOCKET), PYTHONPATH (above) and STALLSCOPE_CRC32C, the
// path of the native CRC32C library stallscope.crc32c loads (unless the
// user set it).
// Warns once on stderr when the hook is not found.
std::vector<std::pair<std::string, std::string>> HookEnvironment(const std::string& socket_path);
// What `stallscope hook-env` prints for a job started elsewhere: PYTHONPATH
// (the hook's directory alone), STALLSCOPE_SOCKET and STALLSCOPE_CRC32C.
std::vector<std::pair<std::string, std::string>> HookEnvLines(const std::string& socket_path);

}  // namespace stallscope
