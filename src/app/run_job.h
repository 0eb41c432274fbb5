// The steps of `stallscope run` and `watch` around the recording loop, as
// functions of their inputs: where the run file goes, the node layout of
// `run --procs` (checked before anything starts), the run file made and its
// baseline snapshot taken under a probe root, the record options of a
// layout, the NCCL logs the job wrote, and what `run` concluded beyond the
// timeline (NCCL logs, profiler traces) kept in the run file. The command
// (cli/run_command.cc) parses flags, calls these and prints. Reads under the
// root it is given; writes only the run file and RUN.db.traces/;
// thread-compatible.
#pragma once

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "core/file.h"
#include "core/status.h"
#include "dist/node_layout.h"
#include "formats/nccl_log/files.h"
#include "record/recorder.h"
#include "sample/finding.h"
#include "sample/nccl_log.h"
#include "store/run_writer.h"

namespace stallscope {

// What `run` and `watch` were asked for, beside the command.
struct RunRequest {
  double interval_seconds = 1.0;
  std::string out;  // --out, with %h and %r; empty: the default name
  bool force = false;
  std::string data;  // --data: the dataset's path, its disk watched as the data disk
  // run --procs K [--nnodes N --node-rank R --master-addr A --master-port P]
  int procs = 0;
  std::optional<int> nnodes;
  std::optional<int> node_rank;
  std::string master_addr;
  std::optional<int> master_port;
  std::vector<std::string> nccl_logs;  // --nccl-log FILE...
};

// The run file's name: --out with %h and %r expanded, or
// stallscope-run-HOST-YYYYMMDD-HHMMSS.db (with -nodeR for a node of several),
// HOST from the root's hostname and the time local.
Result<std::string> RunFilePath(const Root& root, const RunRequest& request, int node_rank,
                                bool several_nodes);

// The layout of `run --procs` from the flags and srun's or mpirun's
// environment (`env`), checked before anything starts, the master's address
// too (it must resolve here); nullopt without --procs, where the flags of
// several nodes are refused.
Result<std::optional<NodeLayout>> ResolveRunLayout(const RunRequest& request, const EnvLookup& env);

// The run file created (not over an existing one without `force`), the
// baseline snapshot of the root written into it, and the facts of the run
// before the job starts, so that an unwritable --out or a bad --interval
// fails before anything runs.
Result<RunInfo> PrepareRunFile(const Root& root, const RunRequest& request, const std::string& path,
                               std::optional<RunWriter>& writer);

// The recorder's options for the ranks of a layout (`master_port` as the
// launcher chose it): the node's place, the clock exchange across nodes, the
// interface toward the master; without a layout, the node read off the
// ranks' environment.
RecordOptions RunRecordOptions(const std::optional<NodeLayout>& layout, int master_port);

// The NCCL logs of a job read once it ended: the files named by --nccl-log,
// and those matching NCCL_DEBUG_FILE (`debug_file_pattern`, empty when not
// set) that were not there before it started (`before`). A file that cannot
// be read is a note, and said on `err`: the job ran, its report still comes
// out.
std::vector<NcclLogFile> ReadJobNcclLogs(const Root& root, const RunRequest& request,
                                         const std::string& debug_file_pattern,
                                         const std::vector<DebugFileState>& before,
                                         std::vector<std::string>& notes, std::FILE* err);

// Who and what the job is, for `history` (RunInfo argv .. program): the
// command, the user, the working folder, and its name: `job_flag` (run
// --job), else STALLSCOPE_JOB, else SLURM_JOB_NAME unless it is one of
// Slurm's defaults (IsSlurmDefaultJobName); the program and its first
// argument naming an existing file, made absolute.
void FillJobIdentity(const std::vector<std::string>& argv, const std::string& job_flag,
                     RunInfo& info);

// The identity of a run `watch --slurm-job ID` records: the user it runs as
// (the job's, after the prolog dropped to it), the job's working folder
// (SLURM_JOB_WORK_DIR), and the job id as the node's launcher job.
void FillSlurmJobIdentity(const std::string& job_id, RunInfo& info, NodeInfo& node);
// Slurm names a job after its batch script or command unless told
// (`--job-name`), and "wrap" / "interactive" for those: such a name says
// nothing of the job. True for those, for a name that is a word of `argv`'s
// base name, and for script names (.sh, .sbatch, .slurm, .py).
bool IsSlurmDefaultJobName(const std::string& name, const std::vector<std::string>& argv);

// The prefix `run` gives PyTorch's Flight Recorder for its dumps (one file a
// rank, the rank appended), in the stacks folder beside the run file.
std::string FlightRecorderPrefix(const std::string& stacks_dir);

// The Flight Recorder's variables for the job, those the user set left as
// they are: a 2000-entry buffer (TORCH_FR_BUFFER_SIZE, which newer PyTorch
// reads first, and TORCH_NCCL_TRACE_BUFFER_SIZE), a dump when the NCCL
// watchdog times out (TORCH_NCCL_DUMP_ON_TIMEOUT=1), and the dumps' prefix
// (TORCH_FR_DUMP_TEMP_FILE, older TORCH_NCCL_DEBUG_INFO_TEMP_FILE).
std::vector<std::pair<std::string, std::string>> FlightRecorderEnvironment(
    const std::string& prefix);

// The dumps the job's ranks wrote under `prefix` (a timeout, an exception),
// judged (analyze/flight_recorder/rules.h): their findings carry evidence
// source "flight-recorder"; nothing when there is none; a dump that does not
// read is a note.
FindingsWithNotes JudgeFlightRecorderDumps(const std::string& prefix);

// What `run` concluded beyond the timeline kept in the run file, each under
// its source ("trace", "nccl-log", "flight-recorder"), so that `report
// RUN.db` shows it later. What the file could not keep is said on `err` and
// returned, to be printed with the report all the same.
FindingsWithNotes KeepRunConclusions(RunWriter& writer,
                                     const std::optional<FindingsWithNotes>& from_traces,
                                     FindingsWithNotes from_logs, FindingsWithNotes from_dumps,
                                     std::FILE* err);

}  // namespace stallscope
