// `stallscope hook-env [--hook-socket PATH]`: the environment a job that
// stallscope does not start (srun, a Kubernetes pod, a job the exporter
// watches) needs for the Python hook, one NAME=VALUE line each:
// STALLSCOPE_SOCKET (the exporter's socket by default), PYTHONPATH (the
// hook's directory) and STALLSCOPE_CRC32C (its native CRC32C, when built).
// The default socket is the system exporter's when one is bound there (a
// root exporter serves every user), else this user's own exporter's; a
// warning on stderr says when the chosen socket does not exist yet.
#include <sys/stat.h>

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
                 std::string("the socket the job reports to, as the exporter's --hook-socket; "
                             "default ") +
                     kSystemHookSocket + " when an exporter is bound there, else " +
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
    std::string path = socket->empty() ? HookSocketForJobs() : *socket;
    struct stat st;
    if (stat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) {
      std::fprintf(stderr,
                   "stallscope hook-env: warning: no socket at %s yet; the job's records are "
                   "lost until an exporter listens there (start `stallscope exporter%s`)\n",
                   path.c_str(), socket->empty() ? "" : (" --hook-socket " + path).c_str());
    }
    for (const auto& [name, value] : HookEnvLines(path)) {
      std::printf("%s=%s\n", name.c_str(), value.c_str());
    }
    return kExitOk;
  };
}

}  // namespace stallscope
