// Writing a run file (schema in store/run_file.h, tables in
// docs/timeline-schema.md). RunWriter owns the database connection and its
// prepared statements; it is written by one thread (the sampler) and is not
// thread-safe. The file is in WAL mode and every interval is one
// transaction, so a sampler killed with SIGKILL loses at most the interval
// it was writing, and readers (`report` on a live run) never block it.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "core/status.h"
#include "sample/finding.h"
#include "sample/timeline.h"
#include "store/run_file.h"

struct sqlite3;
struct sqlite3_stmt;

namespace stallscope {

class RunWriter {
 public:
  // Creates the run file at `path`. An existing file is an InvalidArgument
  // error ("RUN.db exists; pass --force to overwrite") unless `force`, which
  // replaces it together with its -wal/-shm. A directory that does not exist
  // or cannot be written fails here, naming the path and the errno text, so
  // the caller creates the writer before it starts the job. The writer holds
  // an exclusive lock (flock) on the file until Close(): a file another
  // `run` is recording fails here, with or without `force`, naming it.
  static Result<RunWriter> Create(const std::string& path, bool force);

  RunWriter(RunWriter&&) noexcept = default;
  RunWriter& operator=(RunWriter&&) noexcept = default;
  RunWriter(const RunWriter&) = delete;
  RunWriter& operator=(const RunWriter&) = delete;
  ~RunWriter();  // Close(), ignoring its error.

  // The single row of `run`: written at start and rewritten at exit, when
  // the duration and the exit status are known.
  Status WriteRunInfo(const RunInfo& info);
  // The single row of `node` (created on first use): the run's place in a
  // job that may span nodes; rewritten when more is learnt.
  Status WriteNode(const NodeInfo& node);
  // The baseline snapshot, SnapshotToJson(snapshot).dump(); rewrites it if
  // called again.
  Status WriteBaseline(const std::string& snapshot_json);
  // One interval: its sample and the process points and hook events that
  // arrived in it, in one transaction. Either all of it is stored or, on an
  // error, none of it (and the next call may still succeed).
  Status AppendInterval(const TimelineSample& sample, std::span<const ProcessPoint> processes,
                        std::span<const StepEvent> steps, std::span<const EpochEvent> epochs,
                        std::span<const LoaderConfig> loaders,
                        std::span<const PortCounterPoint> ports = {},
                        std::span<const RankInfo> ranks = {}, std::span<const StepSync> syncs = {});
  // The GPUs of the interval just appended (store/gpu_samples.cc), in their
  // own transaction, into gpu_samples (created on first use). No-op before
  // the first interval or without GPUs.
  Status AppendGpuSamples(std::span<const GpuPoint> gpus);
  // What `source` (e.g. "nccl-log") concluded about the run from outside the
  // timeline, in one transaction, into the findings and notes tables
  // (store/stored_findings.h; created on first use). No-op when both are
  // empty. Called once the job ended, before Close().
  Status AppendFindings(std::string_view source, std::span<const Finding> findings,
                        std::span<const std::string> notes);
  // The hook's allocation reports that arrived in the interval just
  // appended, in their own transaction, into allocations (created on first
  // use). No-op before the first interval or without reports.
  Status AppendAllocations(std::span<const AllocationReport> reports);
  // What the kernel kept of the job's memory peak, in one transaction, into
  // memory_peaks (created here, also with no row: the peaks were looked
  // for). Called once the job ended, before Close().
  Status AppendMemoryPeaks(std::span<const MemoryPeak> peaks);
  // How ranks stopped, and where ranks were at a hang or a death, into
  // rank_stops and rank_states: both created even when empty (the run's end
  // calls it, so a file without them predates them).
  Status AppendRankStops(std::span<const RankStop> stops, std::span<const RankState> states);
  // kernel_events (created here, also with no row: the log was looked at):
  // the Xids and port events the kernel logged during the run, their
  // monotonic_seconds already made seconds since the run's start.
  Status AppendKernelEvents(std::span<const GpuXid> xids, std::span<const PortLogEvent> ports);
  // What the job's processes were seen reading, in one transaction, into
  // inputs (created here, also with no row: they were looked for). Called
  // once the job ended, before Close().
  Status AppendInputs(std::span<const InputSeen> inputs);
  // The processes outside the tree that took CPU in the interval just
  // appended, into other_processes (created on first use). No-op before the
  // first interval or without rows.
  Status AppendOtherProcesses(std::span<const OtherProcessPoint> points);
  // The ports' congestion counters stored for the interval just appended,
  // into congestion_counters (created on first use). No-op before the
  // first interval or without rows.
  Status AppendCongestion(std::span<const CongestionPoint> points);
  // The gradient buckets' all-reduces the hook reported in the interval just
  // appended, into bucket_sync (created on first use). No-op before the
  // first interval or without rows.
  Status AppendBuckets(std::span<const BucketSync> buckets);
  // Checkpoints and evaluation loops the hook reported, into phase_spans
  // (created by the first call, rows or none: a run calls it at its start).
  Status AppendPhaseSpans(std::span<const PhaseSpan> spans);
  // Steps that waited for the GPU, into host_syncs (made by the first
  // call, rows or none).
  Status AppendHostSyncs(std::span<const HostSync> syncs);
  // One boundary sample, in its own transaction, into boundary_samples
  // (created on first use), under the interval being recorded.
  Status AppendBoundarySample(const BoundarySample& sample);
  // Intervals committed so far; the next one is numbered this.
  int64_t intervals() const { return next_interval_; }
  int64_t boundary_samples() const { return next_boundary_; }
  const std::string& path() const { return path_; }

  // Folds the -wal into the file now (PRAGMA wal_checkpoint(TRUNCATE)), so
  // that the file alone holds the run: after a write failed (its disk full)
  // and when the run ends. Fails where the file cannot grow by the -wal's
  // pages; the -wal then still holds them.
  Status Checkpoint();
  // Finalizes the statements and closes the database, which folds the WAL
  // back into the file and removes -wal/-shm. Idempotent; later writes fail.
  // Where the last Checkpoint() could not fold for want of space (the disk
  // still full), the -wal stays with the run's end: an error that names both
  // files to copy. A -wal a reader's open transaction keeps is no error.
  Status Close();

 private:
  struct CloseDatabase {
    void operator()(sqlite3* db) const;
  };
  struct FinalizeStatement {
    void operator()(sqlite3_stmt* statement) const;
  };
  struct CloseFile {
    void operator()(int* fd) const;
  };
  using Database = std::unique_ptr<sqlite3, CloseDatabase>;
  using Statement = std::unique_ptr<sqlite3_stmt, FinalizeStatement>;

  RunWriter() = default;
  Status Prepare();
  Status Fail(std::string_view what) const;
  Status Step(sqlite3_stmt* statement, std::string_view what);
  // Creates a table on first use (`create`, IF NOT EXISTS) and inserts
  // `rows` rows with `insert`, `bind(statement, i)` binding row i (false: it
  // could not), all in one transaction: a failure leaves neither. `what`
  // names the rows in errors ("memory peaks").
  Status AppendRows(std::string_view what, std::string_view create, const char* insert, size_t rows,
                    const std::function<bool(sqlite3_stmt*, size_t)>& bind);
  Status InsertInterval(const TimelineSample& sample, std::span<const ProcessPoint> processes,
                        std::span<const StepEvent> steps, std::span<const EpochEvent> epochs,
                        std::span<const LoaderConfig> loaders,
                        std::span<const PortCounterPoint> ports, std::span<const RankInfo> ranks,
                        std::span<const StepSync> syncs);

  std::string path_;
  bool fold_failed_full_ = false;  // the last Checkpoint() failed: no space for the -wal's pages
  std::unique_ptr<int, CloseFile> lock_;  // the descriptor that holds the flock
  int64_t next_interval_ = 0;
  int64_t next_boundary_ = 0;
  // Declared before the statements so that it is destroyed after them.
  Database db_;
  Statement begin_, commit_, rollback_;
  Statement insert_run_, insert_baseline_;
  Statement insert_sample_, insert_process_, insert_step_, insert_epoch_, insert_loader_;
  Statement insert_port_, insert_step_sync_, insert_rank_;
};

}  // namespace stallscope
