// `stallscope slurm prolog|epilog|task-prolog`: what Slurm's Prolog=,
// Epilog= and TaskProlog= scripts (share/stallscope/slurm/) call; the work
// is app/slurm_job.h's. Each reads the job from the environment Slurm gives
// it. A failure is written to syslog and stderr and exits 1; the scripts
// exit 0 whatever this does, so the job never fails for stallscope.
#include <syslog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <climits>
#include <cstdio>
#include <memory>

#include "app/slurm_job.h"
#include "cli/commands.h"
#include "cli/hook_files.h"
#include "dist/launcher.h"

namespace stallscope {
namespace {

int Failed(const std::string& action, const Status& status) {
  const std::string message = "stallscope slurm " + action + ": " + status.message();
  openlog("stallscope", LOG_PID, LOG_DAEMON);
  syslog(LOG_ERR, "%s", message.c_str());
  closelog();
  std::fprintf(stderr, "%s\n", message.c_str());
  return 1;
}

std::string ThisExecutable() {
  char path[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  return n > 0 ? std::string(path, static_cast<size_t>(n)) : "stallscope";
}

}  // namespace

CommandRunner SetupSlurm(CLI::App& app) {
  auto action = std::make_shared<std::string>();
  app.add_option("action", *action,
                 "prolog (root: start the job's recorder on this node), epilog (root: stop it, "
                 "merge the nodes' files on the batch host), task-prolog (the job's user: the "
                 "hook's environment for a task)")
      ->required()
      ->check(CLI::IsMember({"prolog", "epilog", "task-prolog"}));
  return [action]() {
    Result<SlurmSettings> settings = LoadSlurmSettings();
    const EnvLookup env = ProcessEnvLookup();
    if (*action == "task-prolog") {
      // The hook stays importable whatever the settings say (the prolog
      // logged a wrong file already): the defaults find no socket.
      NoteSlurmJobName(settings.ok() ? *settings : SlurmSettings{}, env);
      HookFiles files = FindHookFiles();
      if (!files.found) return 0;  // no hook installed: the task runs without
      for (const std::string& line :
           SlurmTaskPrologLines(settings.ok() ? *settings : SlurmSettings{}, env, files.python_dir,
                                files.crc32c_library)) {
        std::printf("%s\n", line.c_str());
      }
      return 0;
    }
    if (!settings.ok()) return Failed(*action, settings.status());
    Result<SlurmJobEnv> job = ReadSlurmJobEnv(env);
    if (!job.ok()) return Failed(*action, job.status());
    Status done = *action == "prolog" ? SlurmProlog(*settings, *job, ThisExecutable())
                                      : SlurmEpilog(*settings, *job);
    return done.ok() ? 0 : Failed(*action, done);
  };
}

}  // namespace stallscope
