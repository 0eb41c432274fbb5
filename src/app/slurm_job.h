// Slurm's side of stallscope: what the scheduler's prolog, epilog and task
// prolog do (`stallscope slurm prolog|epilog|task-prolog`, called by the
// three scripts `make install` puts in share/stallscope/slurm/), and the
// merge of a job's run files into one report (`report --slurm-job ID`).
//
// - prolog (root, on each node of the job, before its tasks): starts
//   `watch --slurm-job ID` detached (its own session, stdio on a log file,
//   no inherited descriptor), as the job's user, writing the node's run
//   file NODE.db into the job's folder; keeps the job's line in the jobs
//   folder (one small file per running job, written atomically) with the
//   recorder's pid; returns once the recorder's hook socket exists.
// - task prolog (the job's user, before each task): the `export` lines
//   that point the task's Python hook at that socket.
// - epilog (root, on each node): stops the recorder (SIGTERM, SIGKILL after
//   stop_wait), removes the job's line and socket folder, and, detached and
//   as the user, marks the node's file done; the first node of the job's
//   node list (the batch host) then waits up to merge_wait for the other
//   nodes' marks and writes report.txt and report.json.
// None of them calls a Slurm command (Slurm's advice for prologs), and the
// scripts exit 0 whatever happens here: a failure is logged, never the job's.
// Settings come from one file (/etc/stallscope/slurm.conf, or the file
// STALLSCOPE_SLURM_CONF names), `key = value` lines.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "app/run_files.h"
#include "core/status.h"
#include "dist/launcher.h"
#include "probe/slurm_job.h"

namespace stallscope {

inline constexpr const char* kSlurmSettingsFile = "/etc/stallscope/slurm.conf";

struct SlurmSettings {
  // The job's folder of run files: %w the job's working folder
  // (SLURM_JOB_WORK_DIR: the submit folder unless --chdir), %j the job id,
  // %u the user, %% a percent sign.
  std::string output = "%w/stallscope-%j";
  // Root's folder for the recorders' sockets (job-ID/, the job user's) and
  // the running jobs' lines (jobs/ID). Not the job's /tmp: Slurm may give
  // each job a private one.
  std::string state_dir = "/run/stallscope";
  double interval_seconds = 1;
  double stop_wait_seconds = 10;   // epilog: SIGTERM to SIGKILL
  double start_wait_seconds = 5;   // prolog: for the recorder's socket
  double merge_wait_seconds = 60;  // batch host: for the other nodes' files
};

// Parses the settings file's text; errors name the file and line.
Result<SlurmSettings> ParseSlurmSettings(std::string_view text, std::string_view file_name);
// The settings file (STALLSCOPE_SLURM_CONF, else kSlurmSettingsFile);
// defaults when it does not exist.
Result<SlurmSettings> LoadSlurmSettings();

// The output pattern with %w, %j, %u and %% replaced; InvalidArgument for
// another %-sequence.
Result<std::string> ExpandSlurmFolder(std::string_view pattern, std::string_view work_dir,
                                      std::string_view job_id, std::string_view user);

// What the prolog's and epilog's environment says of the job.
struct SlurmJobEnv {
  std::string id;         // SLURM_JOB_ID
  std::string user;       // SLURM_JOB_USER
  uid_t uid = 0;          // SLURM_JOB_UID
  gid_t gid = 0;          // SLURM_JOB_GID
  std::string work_dir;   // SLURM_JOB_WORK_DIR
  std::string node;       // SLURMD_NODENAME
  std::string node_list;  // SLURM_JOB_NODELIST or SLURM_NODELIST
  std::string partition;  // SLURM_JOB_PARTITION
  int restart_count = 0;  // SLURM_JOB_RESTART_COUNT: a requeued job's try
  std::string cpus;       // SLURM_JOB_CPUS_PER_NODE
  std::string gpus;       // SLURM_JOB_GPUS, else CUDA_VISIBLE_DEVICES
};
Result<SlurmJobEnv> ReadSlurmJobEnv(const EnvLookup& env);

// Where things are for one job.
struct SlurmJobPaths {
  std::string folder;      // the run files (the user's)
  std::string run_file;    // folder/NODE.db (NODE.rN.db for a requeued try N)
  std::string log_file;    // the recorder's output beside it
  std::string done_file;   // the node's mark: its run file is closed
  std::string socket_dir;  // state_dir/job-ID
  std::string job_line;    // state_dir/jobs/ID
};
Result<SlurmJobPaths> PathsOfSlurmJob(const SlurmSettings& settings, const SlurmJobEnv& job);

// The running job's line in the jobs folder (probe/slurm_job.h).
SlurmJobLine LineOfSlurmJob(const SlurmJobEnv& job, pid_t recorder);

Status SlurmProlog(const SlurmSettings& settings, const SlurmJobEnv& job,
                   const std::string& stallscope_exe);
Status SlurmEpilog(const SlurmSettings& settings, const SlurmJobEnv& job);
// The task prolog's lines (`export NAME=VALUE`; Slurm expands nothing, so
// PYTHONPATH carries the task's own value after the hook's): the hook on
// PYTHONPATH always (a script that imports it runs anywhere), and
// STALLSCOPE_SOCKET where a recorder listens for the job on this node.
std::vector<std::string> SlurmTaskPrologLines(const SlurmSettings& settings, const EnvLookup& env,
                                              const std::string& hook_python_dir,
                                              const std::string& crc32c_library);

// The task prolog's note of the job's name (SLURM_JOB_NAME, which the
// prolog's environment lacks) for the exporter's stallscope_job_info:
// STATE_DIR/job-ID/job_name, written atomically where the recorder's
// folder is there. Nothing to do outside a recorded job.
void NoteSlurmJobName(const SlurmSettings& settings, const EnvLookup& env);

// The run files in a job's folder, by name; NotFound naming the folder
// when there are none.
Result<std::vector<std::string>> SlurmJobRunFiles(const std::string& folder);
// Analyzes the folder's run files as one job and writes report.txt and
// report.json beside them (each atomically); the analysis, for printing.
Result<RunAnalysis> WriteSlurmJobReport(const std::string& folder);

}  // namespace stallscope
