#include "cli/commands.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/help_pages.h"
#include "cli/hook_files.h"
#include "core/version.h"

namespace stallscope {
namespace {

constexpr Command kCommands[] = {
    {"doctor", "the ordered triage of this host: memory -> io -> network -> distributed -> code",
     SetupDoctor},
    {"run", "runs CMD, records its timeline (host + process tree + hook), prints the findings",
     SetupRun},
    {"watch", "the same for a running process tree: --pid PID", SetupWatch},
    {"report", "the findings and per-epoch table of a recorded run file", SetupReport},
    {"diff", "what changed between a good run and a slow one, ranked by how much it explains",
     SetupDiff},
    {"history",
     "a job's runs over days: the change points of its step time, the run that "
     "slowed it, and why",
     SetupHistory},
    {"scale", "runs CMD at --procs 1,2,4,8: throughput, scaling efficiency, comm ratio, Amdahl",
     SetupScale},
    {"trace",
     "reads PyTorch profiler traces: HTA's breakdowns per rank, GPU idle, syncs, pageable copies",
     SetupTrace},
    {"nccl-log", "reads an NCCL_DEBUG=INFO log: versions, interfaces, transports, init, errors",
     SetupNcclLog},
    {"hang",
     "reads a stuck job's Flight Recorder dumps: where its ranks diverge, and who the others wait "
     "for",
     SetupHang},
    {"dataset", "census of a dataset folder: files, sizes, fs type, page cache, small files",
     SetupDataset},
    {"bench", "active tests: io (storage, as fio), h2d (host<->GPU copies), allreduce (MPI/NCCL)",
     SetupBench},
    {"pack", "packs small files into TFRecord or WebDataset shards, with an index", SetupPack},
    {"net", "net serve / net probe HOST: TCP throughput, latency, path MTU between two hosts",
     SetupNet},
    {"snapshot", "the baseline: memory, swap, disks (iostat -x), CPUs, NICs, RDMA, topology, env",
     SetupSnapshot},
    {"plan", "plan memory (per-GPU memory under tp/pp/dp/ZeRO) / plan loader (DataLoader settings)",
     SetupPlan},
    {"exporter",
     "Prometheus /metrics: host memory, swap, disks, NICs, RDMA, GPUs, hook jobs per rank",
     SetupExporter},
    {"ab",
     "runs CMD twice, as is and degraded (num_workers=0, --env K=V): steps/s and what it means",
     SetupAb},
    {"cluster",
     "under mpirun/srun: every node's GPUs, driver, CPU, kernel, MTUs, NCCL env, clock; "
     "what differs",
     SetupCluster},
    {"hook-env",
     "the environment a job started elsewhere (srun, Kubernetes, the exporter's) needs "
     "for the Python hook",
     SetupHookEnv},
    {"slurm",
     "prolog / epilog / task-prolog: what Slurm's scripts call to record every job "
     "(docs/slurm.md)",
     SetupSlurm},
};

}  // namespace

std::span<const Command> Commands() { return kCommands; }

namespace {

// The whole command tree, each command's runner beside it.
struct CommandTree {
  CLI::App app{"stallscope: finds why training is slower than its hardware", "stallscope"};
  std::map<CLI::App*, CommandRunner> runners;
};

// `only`: the command the line names first, built alone: its parse and its
// errors are the same, and the other commands' few hundred options are not
// built for nothing (a third of a small run's start-up). Empty: every
// command, for the top-level usage, `help`, and a first word that is no
// command (its error lists them).
std::unique_ptr<CommandTree> BuildTree(std::string_view only = {}) {
  auto tree = std::make_unique<CommandTree>();
  tree->app.require_subcommand(0, 1);
  tree->app.set_version_flag("--version", VersionLine());
  for (const Command& c : kCommands) {
    if (!only.empty() && c.name != only) continue;
    CLI::App* sub = tree->app.add_subcommand(std::string(c.name), std::string(c.summary));
    tree->runners[sub] = c.setup(*sub);
  }
  return tree;
}

// The command named by the first word, when it names one.
std::string_view NamedCommand(int argc, const char* const* argv) {
  if (argc < 2) return {};
  for (const Command& c : kCommands) {
    if (c.name == argv[1]) return c.name;
  }
  return {};
}

int Dispatch(CommandTree& tree, int argc, const char* const* argv) {
  try {
    tree.app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    if (argc >= 2 && (std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h")) {
      std::fputs(Usage(tree.app).c_str(), stdout);
      return kExitOk;
    }
    return tree.app.exit(e);
  } catch (const CLI::ParseError& e) {
    tree.app.exit(e);
    return kExitUsage;
  }
  for (auto& [sub, run] : tree.runners) {
    if (sub->parsed()) return run();
  }
  std::fputs(Usage(tree.app).c_str(), stderr);
  return kExitUsage;
}

// `stallscope help [COMMAND [SUBCOMMAND]]`: what `COMMAND ... --help`
// prints; and the build's hidden --man-page and --bash-completion.
int Help(CommandTree& tree, const char* argv0, const std::vector<std::string>& words) {
  if (words.size() == 1 && words[0] == "--man-page") {
    std::fputs(ManPage(tree.app).c_str(), stdout);
    return kExitOk;
  }
  if (words.size() == 1 && words[0] == "--bash-completion") {
    std::fputs(BashCompletion(tree.app).c_str(), stdout);
    return kExitOk;
  }
  if (words.empty()) {
    std::fputs(Usage(tree.app).c_str(), stdout);
    return kExitOk;
  }
  if (Result<CLI::App*> found = FindCommand(tree.app, words); !found.ok()) {
    return Fail("help", found.status().message() + " (stallscope --help lists them)", kExitUsage);
  }
  std::vector<const char*> args = {argv0};
  for (const std::string& w : words) args.push_back(w.c_str());
  args.push_back("--help");
  return Dispatch(tree, static_cast<int>(args.size()), args.data());
}

}  // namespace

int RunCli(int argc, char** argv) {
  if (argc >= 2 && std::string_view(argv[1]) == "help") {
    std::unique_ptr<CommandTree> tree = BuildTree();
    return Help(*tree, argv[0], std::vector<std::string>(argv + 2, argv + argc));
  }
  std::unique_ptr<CommandTree> tree = BuildTree(NamedCommand(argc, argv));
  return Dispatch(*tree, argc, argv);
}

int Fail(std::string_view command, std::string_view message, int code) {
  std::fprintf(stderr, "stallscope %.*s: %.*s\n", static_cast<int>(command.size()), command.data(),
               static_cast<int>(message.size()), message.data());
  return code;
}

int Fail(std::string_view command, const Status& s, bool usage) {
  return Fail(command, s.message(), usage ? kExitUsage : kExitCouldNotRun);
}

std::vector<std::pair<std::string, std::string>> HookEnvironment(const std::string& socket_path) {
  HookFiles files = FindHookFiles();
  if (!files.found) {
    static bool told = false;  // once per process: scale starts many jobs
    if (!told) {
      std::fprintf(stderr,
                   "stallscope: warning: no Python hook at %s (nor beside this binary in "
                   "../lib/stallscope/python): the job's steps will not be recorded; install "
                   "stallscope with `cmake --install` or `make install`\n",
                   files.python_dir.c_str());
      told = true;
    }
  }
  std::vector<std::pair<std::string, std::string>> env = {{"STALLSCOPE_SOCKET", socket_path},
                                                          {"PYTHONPATH", HookPythonPath()}};
  // The TFRecord reader's native CRC32C (python/native/crc32c.c); a value
  // the user set (empty: the pure-Python code) is kept.
  if (std::getenv("STALLSCOPE_CRC32C") == nullptr && !files.crc32c_library.empty()) {
    env.emplace_back("STALLSCOPE_CRC32C", files.crc32c_library);
  }
  return env;
}

std::string HookPythonPath() {
  std::string pythonpath = FindHookFiles().python_dir;
  if (const char* old = std::getenv("PYTHONPATH"); old && *old)
    pythonpath += ":" + std::string(old);
  return pythonpath;
}

}  // namespace stallscope
