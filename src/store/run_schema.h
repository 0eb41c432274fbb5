// Internal to store/: the SQL of schema stallscope.timeline/1 and the
// translation of SQLite errors into Status. docs/timeline-schema.md documents
// every table and column below; change both together, and bump
// kTimelineSchemaVersion (run_file.h) when a change breaks old readers.
// Constants and pure functions; thread-safe.
#pragma once

#include <string_view>

#include "core/status.h"

struct sqlite3;

namespace stallscope::store {

// Tables are plain (not STRICT) so that sqlite3 shells older than 3.37 read
// them. Counters and sizes are INTEGER, rates and times REAL, booleans 0/1.
inline constexpr std::string_view kCreateTables = R"sql(
CREATE TABLE meta (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
CREATE TABLE run (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  command TEXT NOT NULL,
  hostname TEXT NOT NULL,
  started_utc TEXT NOT NULL,
  start_monotonic_seconds REAL NOT NULL,
  interval_seconds REAL NOT NULL,
  root_pid INTEGER NOT NULL,
  cpu_count INTEGER NOT NULL,
  mem_total_bytes INTEGER NOT NULL,
  cgroup_limit_bytes INTEGER,
  data_device TEXT NOT NULL,
  duration_seconds REAL,
  exit_code INTEGER,
  exit_signal INTEGER,
  oom_killed INTEGER NOT NULL CHECK (oom_killed IN (0, 1))
);
CREATE TABLE baseline (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  snapshot_json TEXT NOT NULL
);
CREATE TABLE samples (
  interval INTEGER PRIMARY KEY,
  t_seconds REAL NOT NULL,
  processes INTEGER NOT NULL,
  tree_rss_bytes INTEGER NOT NULL,
  tree_pss_bytes INTEGER NOT NULL,
  tree_cpu_percent REAL NOT NULL,
  loader_cpu_percent REAL NOT NULL,
  mem_available_bytes INTEGER NOT NULL,
  swap_used_bytes INTEGER NOT NULL,
  swap_in_pages_per_s REAL NOT NULL,
  swap_out_pages_per_s REAL NOT NULL,
  cpu_busy_percent REAL NOT NULL,
  cpu_iowait_percent REAL NOT NULL,
  disk_util_percent REAL NOT NULL,
  disk_await_ms REAL NOT NULL,
  disk_read_kib_per_s REAL NOT NULL,
  steps_per_s REAL NOT NULL,
  data_wait_fraction REAL NOT NULL,
  realtime_seconds REAL,
  net_rx_bytes_per_s REAL,
  net_tx_bytes_per_s REAL
);
CREATE TABLE processes (
  interval INTEGER NOT NULL REFERENCES samples(interval),
  t_seconds REAL NOT NULL,
  pid INTEGER NOT NULL,
  ppid INTEGER NOT NULL,
  comm TEXT NOT NULL,
  rss_bytes INTEGER NOT NULL,
  cpu_percent REAL NOT NULL,
  run_delay_percent REAL,
  read_kib_per_s REAL,
  rchar_kib_per_s REAL,
  write_kib_per_s REAL,
  wchar_kib_per_s REAL
);
CREATE TABLE steps (
  interval INTEGER NOT NULL REFERENCES samples(interval),
  rank INTEGER NOT NULL,
  step INTEGER NOT NULL,
  t_seconds REAL NOT NULL,
  wait_seconds REAL NOT NULL,
  step_seconds REAL NOT NULL
);
CREATE TABLE step_sync (
  interval INTEGER NOT NULL REFERENCES samples(interval),
  rank INTEGER NOT NULL,
  step INTEGER NOT NULL,
  sync_seconds REAL NOT NULL,
  cpu_seconds REAL NOT NULL
);
CREATE TABLE ranks (
  interval INTEGER NOT NULL REFERENCES samples(interval),
  pid INTEGER NOT NULL,
  rank INTEGER NOT NULL,
  local_rank INTEGER NOT NULL,
  world_size INTEGER NOT NULL,
  hostname TEXT NOT NULL
);
CREATE TABLE epochs (
  interval INTEGER NOT NULL REFERENCES samples(interval),
  rank INTEGER NOT NULL,
  epoch INTEGER NOT NULL,
  t_seconds REAL NOT NULL
);
CREATE TABLE loaders (
  interval INTEGER NOT NULL REFERENCES samples(interval),
  rank INTEGER NOT NULL,
  pid INTEGER NOT NULL,
  batch_size INTEGER NOT NULL,
  num_workers INTEGER NOT NULL,
  pin_memory INTEGER NOT NULL CHECK (pin_memory IN (0, 1)),
  prefetch_factor INTEGER NOT NULL,
  persistent_workers INTEGER NOT NULL CHECK (persistent_workers IN (0, 1)),
  dataset_length INTEGER NOT NULL,
  gpu_available INTEGER NOT NULL CHECK (gpu_available IN (0, 1))
);
CREATE TABLE port_counters (
  interval INTEGER NOT NULL REFERENCES samples(interval),
  t_seconds REAL NOT NULL,
  port TEXT NOT NULL,
  rdma INTEGER NOT NULL CHECK (rdma IN (0, 1)),
  packets INTEGER NOT NULL,
  rx_errors INTEGER NOT NULL,
  tx_errors INTEGER NOT NULL,
  rx_drops INTEGER NOT NULL,
  tx_drops INTEGER NOT NULL,
  symbol_errors INTEGER NOT NULL,
  link_downed INTEGER NOT NULL,
  rcv_errors INTEGER NOT NULL
);
)sql";

// The run file's place in a multi-node job (sample/timeline.h NodeInfo):
// one row, written at start and rewritten when the ranks' environment or the
// clock offset is learnt. Files of older versions lack it.
inline constexpr std::string_view kCreateNode = R"sql(
CREATE TABLE IF NOT EXISTS node (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  node_rank INTEGER,
  nnodes INTEGER,
  procs_per_node INTEGER,
  world_size INTEGER,
  master_addr TEXT NOT NULL,
  master_port INTEGER,
  launcher_job TEXT NOT NULL,
  source TEXT NOT NULL,
  start_realtime_seconds REAL NOT NULL,
  clock_offset_seconds REAL,
  clock_round_trip_seconds REAL,
  net_interface TEXT
);
)sql";

// What the kernel kept of the job's memory peak (sample/timeline.h
// MemoryPeak), written when the job ended; created then, so files of older
// versions lack it. Made even when there is no row: its presence says the
// peaks were looked for.
inline constexpr std::string_view kCreateMemoryPeaks = R"sql(
CREATE TABLE IF NOT EXISTS memory_peaks (
  source TEXT NOT NULL,
  pid INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  detail TEXT NOT NULL
);
)sql";

// What the kernel logged about the hardware while the job ran (Timeline
// xids and port_events), written when the job ended; created then, also
// with no row (its presence says the log was looked at), so files of older
// versions lack it. kind: "xid" or "port"; t_seconds: since the run's
// start, NULL when the record had no time; device: the Xid's bus id or the
// port's device; xid: the number (NULL for a port).
inline constexpr std::string_view kCreateKernelEvents = R"sql(
CREATE TABLE IF NOT EXISTS kernel_events (
  kind TEXT NOT NULL,
  t_seconds REAL,
  device TEXT NOT NULL,
  xid INTEGER,
  pid INTEGER,
  process TEXT NOT NULL,
  message TEXT NOT NULL
);
)sql";

// The hook's allocation tracing (sample/timeline.h AllocationReport),
// created with its first rows; files of runs that never traced lack it.
inline constexpr std::string_view kCreateAllocations = R"sql(
CREATE TABLE IF NOT EXISTS allocations (
  interval INTEGER NOT NULL REFERENCES samples(interval),
  t_seconds REAL NOT NULL,
  rank INTEGER NOT NULL,
  pid INTEGER NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('site', 'holder', 'note')),
  bytes INTEGER NOT NULL,
  count INTEGER NOT NULL,
  grew_bytes INTEGER NOT NULL,
  location TEXT NOT NULL,
  text TEXT NOT NULL
);
)sql";

// What the job's processes were seen reading (sample/timeline.h InputSeen):
// made with the file, filled when the job ended. Files of older versions
// lack it.
inline constexpr std::string_view kCreateInputs = R"sql(
CREATE TABLE IF NOT EXISTS inputs (
  path TEXT NOT NULL,
  role TEXT NOT NULL,
  deleted INTEGER NOT NULL CHECK (deleted IN (0, 1)),
  readers INTEGER NOT NULL,
  samples INTEGER NOT NULL,
  first_t_seconds REAL NOT NULL,
  last_t_seconds REAL NOT NULL,
  size_bytes INTEGER NOT NULL,
  max_position INTEGER NOT NULL,
  fs_type TEXT NOT NULL,
  remote INTEGER NOT NULL CHECK (remote IN (0, 1)),
  device TEXT NOT NULL,
  format TEXT NOT NULL,
  archive INTEGER NOT NULL CHECK (archive IN (0, 1)),
  compressed INTEGER NOT NULL CHECK (compressed IN (0, 1)),
  method TEXT NOT NULL
);
)sql";

// With stallscope.ddp(model) on gloo: each gradient bucket's all-reduce
// per step and rank (sample/timeline.h BucketSync); created with its first
// rows, so files of older versions, and runs without them, lack it.
inline constexpr std::string_view kCreateBucketSync = R"sql(
CREATE TABLE IF NOT EXISTS bucket_sync (
  interval INTEGER NOT NULL REFERENCES samples(interval),
  rank INTEGER NOT NULL,
  step INTEGER NOT NULL,
  bucket INTEGER NOT NULL,
  launch_seconds REAL NOT NULL,
  done_seconds REAL NOT NULL
);
)sql";

// Checkpoints and evaluation loops (sample/timeline.h PhaseSpan): created
// at the run's start even when empty, so a file that lacks it predates it.
inline constexpr std::string_view kCreatePhaseSpans = R"sql(
CREATE TABLE IF NOT EXISTS phase_spans (
  pid INTEGER NOT NULL,
  rank INTEGER NOT NULL,
  kind TEXT NOT NULL,
  start_seconds REAL NOT NULL,
  end_seconds REAL NOT NULL
);
)sql";

// Steps whose loop thread waited for the GPU (sample/timeline.h HostSync):
// created at the run's start even when empty, so a file that lacks it
// predates it.
inline constexpr std::string_view kCreateHostSyncs = R"sql(
CREATE TABLE IF NOT EXISTS host_syncs (
  rank INTEGER NOT NULL,
  step INTEGER NOT NULL,
  seconds REAL NOT NULL,
  calls INTEGER NOT NULL
);
)sql";

// Who and what the job is (sample/timeline.h RunInfo: argv .. program),
// one row, written with the run row; files without it group in `history`
// by their command line.
inline constexpr std::string_view kCreateJobIdentity = R"sql(
CREATE TABLE IF NOT EXISTS job_identity (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  argv_json TEXT NOT NULL,
  uid INTEGER,
  cwd TEXT NOT NULL,
  job_name TEXT NOT NULL,
  job_name_from TEXT NOT NULL,
  script TEXT NOT NULL,
  program TEXT NOT NULL
);
)sql";

// How ranks stopped and where they were (sample/timeline.h RankStop,
// RankState): created at the run's end even when empty, so a file that
// lacks them predates them; rows of a hang are also written as it is found.
inline constexpr std::string_view kCreateRankStops = R"sql(
CREATE TABLE IF NOT EXISTS rank_stops (
  pid INTEGER NOT NULL,
  rank INTEGER NOT NULL,
  t_seconds REAL NOT NULL,
  how TEXT NOT NULL,
  exit_code INTEGER,
  signal INTEGER,
  detail TEXT NOT NULL,
  source TEXT NOT NULL
);
)sql";

inline constexpr std::string_view kCreateRankStates = R"sql(
CREATE TABLE IF NOT EXISTS rank_states (
  t_seconds REAL NOT NULL,
  reason TEXT NOT NULL,
  pid INTEGER NOT NULL,
  rank INTEGER NOT NULL,
  steps INTEGER NOT NULL,
  last_step_seconds REAL,
  collective_since_seconds REAL,
  state TEXT NOT NULL,
  wchan TEXT NOT NULL,
  threads INTEGER NOT NULL,
  cpu_seconds REAL,
  frame TEXT NOT NULL,
  stack TEXT NOT NULL,
  stack_unchanged INTEGER
);
)sql";

// The ports' congestion counters (sample/timeline.h CongestionPoint),
// created with their first rows; the has_* columns say which kinds the
// driver counts at all.
inline constexpr std::string_view kCreateCongestionCounters = R"sql(
CREATE TABLE IF NOT EXISTS congestion_counters (
  interval INTEGER NOT NULL REFERENCES samples(interval),
  t_seconds REAL NOT NULL,
  port TEXT NOT NULL,
  rdma INTEGER NOT NULL,
  pause_rx INTEGER NOT NULL,
  pause_tx INTEGER NOT NULL,
  ecn_marked INTEGER NOT NULL,
  cnp_sent INTEGER NOT NULL,
  cnp_handled INTEGER NOT NULL,
  buffer_drops INTEGER NOT NULL,
  allowance_exceeded INTEGER NOT NULL,
  xmit_wait_ticks INTEGER NOT NULL,
  xmit_words INTEGER NOT NULL,
  has_pause INTEGER NOT NULL,
  has_ecn_cnp INTEGER NOT NULL,
  has_drops INTEGER NOT NULL,
  has_xmit_wait INTEGER NOT NULL
);
)sql";

// Processes outside the job's tree that took CPU (sample/timeline.h
// OtherProcessPoint), created with their first rows.
inline constexpr std::string_view kCreateOtherProcesses = R"sql(
CREATE TABLE IF NOT EXISTS other_processes (
  interval INTEGER NOT NULL REFERENCES samples(interval),
  t_seconds REAL NOT NULL,
  pid INTEGER NOT NULL,
  comm TEXT NOT NULL,
  cpu_percent REAL NOT NULL
);
)sql";

// The boundary samples (sample/timeline.h BoundarySample), created with the
// first: one row per whole disk per sample (one row with disk '' when no
// disk could be read), `boundary` numbering the samples 0, 1, 2, ...
inline constexpr std::string_view kCreateBoundarySamples = R"sql(
CREATE TABLE IF NOT EXISTS boundary_samples (
  boundary INTEGER NOT NULL,
  interval INTEGER NOT NULL,
  t_seconds REAL NOT NULL,
  epoch INTEGER,
  processes INTEGER NOT NULL,
  tree_rss_bytes INTEGER NOT NULL,
  tree_cpu_seconds REAL NOT NULL,
  tree_read_bytes INTEGER,
  disk TEXT NOT NULL,
  disk_read_bytes INTEGER
);
)sql";

// "<path>: <what>: <SQLite's message>". The errno of the refused system call,
// when SQLite reports one, decides the code as Status::FromErrno does (so a
// missing directory is NotFound); SQLITE_NOTADB is a ParseError of the file;
// anything else is Unavailable.
Status SqliteError(std::string_view path, sqlite3* db, std::string_view what);

}  // namespace stallscope::store
