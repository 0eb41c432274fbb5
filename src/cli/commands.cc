#include "cli/commands.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

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
    {"scale", "runs CMD at --procs 1,2,4,8: throughput, scaling efficiency, comm ratio, Amdahl",
     SetupScale},
    {"trace",
     "reads PyTorch profiler traces: HTA's breakdowns per rank, GPU idle, syncs, pageable copies",
     SetupTrace},
    {"nccl-log", "reads an NCCL_DEBUG=INFO log: versions, interfaces, transports, init, errors",
     SetupNcclLog},
    {"dataset", "census of a dataset folder: files, sizes, fs type, page cache, small files",
     SetupDataset},
    {"bench", "active tests: bench io PATH (storage as fio measures it)", SetupBench},
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
};

std::string Usage() {
  std::string out =
      "stallscope: finds why training is slower than its hardware\n\n"
      "usage: stallscope COMMAND [OPTIONS]   (stallscope COMMAND --help for its options)\n\n"
      "commands:\n";
  for (const Command& c : kCommands) out += fmt::format("  {:<10} {}\n", c.name, c.summary);
  return out;
}

}  // namespace

std::span<const Command> Commands() { return kCommands; }

int RunCli(int argc, char** argv) {
  CLI::App app{"stallscope: finds why training is slower than its hardware", "stallscope"};
  app.require_subcommand(0, 1);
  app.set_version_flag("--version", VersionLine());
  std::map<CLI::App*, CommandRunner> runners;
  for (const Command& c : kCommands) {
    CLI::App* sub = app.add_subcommand(std::string(c.name), std::string(c.summary));
    runners[sub] = c.setup(*sub);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    if (argc >= 2 && (std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h")) {
      std::fputs(Usage().c_str(), stdout);
      return kExitOk;
    }
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitUsage;
  }
  for (auto& [sub, run] : runners) {
    if (sub->parsed()) return run();
  }
  std::fputs(Usage().c_str(), stderr);
  return kExitUsage;
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
  std::vector<std::pair<std::string, std::string>> env = {{"STALLSCOPE_SOCKET", socket_path},
                                                          {"PYTHONPATH", HookPythonPath()}};
#ifdef STALLSCOPE_CRC32C_LIBRARY
  // The TFRecord reader's native CRC32C (python/native/crc32c.c); a value
  // the user set (empty: the pure-Python code) is kept.
  if (std::getenv("STALLSCOPE_CRC32C") == nullptr) {
    env.emplace_back("STALLSCOPE_CRC32C", STALLSCOPE_CRC32C_LIBRARY);
  }
#endif
  return env;
}

std::string HookPythonPath() {
  std::string pythonpath = STALLSCOPE_PYTHON_DIR;
  if (const char* old = std::getenv("PYTHONPATH"); old && *old)
    pythonpath += ":" + std::string(old);
  return pythonpath;
}

}  // namespace stallscope
