// `stallscope hook-env [--hook-socket PATH]`: the environment a job that
// stallscope does not start (srun, a Kubernetes pod, a job the exporter
// watches) needs for the Python hook, one NAME=VALUE line each:
// STALLSCOPE_SOCKET (the exporter's socket by default), PYTHONPATH (the
// hook's directory) and STALLSCOPE_CRC32C (its native CRC32C, when built).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cli/hook_files.h"
#include "export/hook_listener.h"

namespace stallscope {

std::vector<std::pair<std::string, std::string>> HookEnvLines(const std::string& socket_path) {
  HookFiles files = FindHookFiles();
  std::vector<std::pair<std::string, std::string>> lines = {{"PYTHONPATH", files.python_dir},
                                                            {"STALLSCOPE_SOCKET", socket_path}};
  if (!files.crc32c_library.empty()) lines.emplace_back("STALLSCOPE_CRC32C", files.crc32c_library);
  return lines;
}

CommandRunner SetupHookEnv(CLI::App& app) {
  auto socket = std::make_shared<std::string>();
  app.add_option("--hook-socket", *socket,
                 "the socket the job reports to, as the exporter's --hook-socket; default " +
                     DefaultHookSocketPath());
  return [socket]() {
    HookFiles files = FindHookFiles();
    if (!files.found) {
      return Fail("hook-env",
                  "no Python hook at " + files.python_dir +
                      " (nor in ../lib/stallscope/python beside this binary): install "
                      "stallscope with `make install` or `cmake --install`",
                  kExitCouldNotRun);
    }
    std::string path = socket->empty() ? DefaultHookSocketPath() : *socket;
    for (const auto& [name, value] : HookEnvLines(path)) {
      std::printf("%s=%s\n", name.c_str(), value.c_str());
    }
    return kExitOk;
  };
}

}  // namespace stallscope
