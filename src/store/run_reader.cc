#include "store/run_reader.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "store/gpu_samples.h"
#include "store/run_file.h"
#include "store/run_schema.h"
#include "store/stored_findings.h"

namespace stallscope {
namespace {

struct CloseDatabase {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using Database = std::unique_ptr<sqlite3, CloseDatabase>;

struct FinalizeStatement {
  void operator()(sqlite3_stmt* statement) const { sqlite3_finalize(statement); }
};
using Statement = std::unique_ptr<sqlite3_stmt, FinalizeStatement>;

// Reads the columns of the current row in order.
class Columns {
 public:
  explicit Columns(sqlite3_stmt* statement) : statement_(statement) {}

  int64_t Int() { return sqlite3_column_int64(statement_, index_++); }
  int Int32() { return static_cast<int>(Int()); }
  uint64_t Bytes() { return static_cast<uint64_t>(Int()); }  // see Binder::Bytes
  bool Bool() { return Int() != 0; }
  double Real() { return sqlite3_column_double(statement_, index_++); }
  bool IsNull() const { return sqlite3_column_type(statement_, index_) == SQLITE_NULL; }
  void Skip() { ++index_; }
  std::string Text() {
    const unsigned char* text = sqlite3_column_text(statement_, index_);
    int size = sqlite3_column_bytes(statement_, index_++);
    return text == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(text), size);
  }
  template <typename T>
  std::optional<T> Optional() {
    if (sqlite3_column_type(statement_, index_) == SQLITE_NULL) {
      ++index_;
      return std::nullopt;
    }
    if constexpr (std::is_floating_point_v<T>) {
      return Real();
    } else {
      return static_cast<T>(Int());
    }
  }

 private:
  sqlite3_stmt* statement_;
  int index_ = 0;
};

// Runs `sql` and calls `row(Columns&)` for each row it returns.
template <typename Row>
Status ForEachRow(sqlite3* db, const std::string& path, const char* sql, Row&& row) {
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v2(db, sql, -1, &raw, nullptr) != SQLITE_OK) {
    return store::SqliteError(path, db, "cannot read");
  }
  Statement statement(raw);
  while (true) {
    int rc = sqlite3_step(statement.get());
    if (rc == SQLITE_DONE) return Status::Ok();
    if (rc != SQLITE_ROW) return store::SqliteError(path, db, "cannot read");
    Columns columns(statement.get());
    row(columns);
  }
}

// How many rows `table` holds, to reserve for before reading them: its
// largest rowid (the writer only appends, so it is the count; looked up in
// the b-tree, not counted), bounded by what the file could hold (a row
// takes more than 16 bytes on disk), so a damaged rowid reserves at most
// file size / 16 rows (a few times the file's size in memory, mostly never
// touched) instead of whatever it says. 0 when unknown. Reading a job's
// files reserves once rather than doubling into up to twice the rows'
// memory.
size_t RowsHint(sqlite3* db, const std::string& path, const char* max_rowid_sql,
                int64_t file_bytes) {
  int64_t rows = 0;
  if (!ForEachRow(db, path, max_rowid_sql, [&](Columns& c) { rows = c.Int(); }).ok()) return 0;
  return static_cast<size_t>(std::clamp<int64_t>(rows, 0, file_bytes / 16));
}

// Whether the file has the table (files of older versions lack some).
Result<bool> HasTable(sqlite3* db, const std::string& path, const char* table) {
  bool present = false;
  Status st = ForEachRow(db, path,
                         (std::string("SELECT 1 FROM sqlite_master WHERE type = 'table' AND "
                                      "name = '") +
                          table + "'")
                             .c_str(),
                         [&](Columns&) { present = true; });
  if (!st.ok()) return st;
  return present;
}

// Whether the table has the column (columns added in place later).
Result<bool> HasColumn(sqlite3* db, const std::string& path, const char* table,
                       const char* column) {
  bool present = false;
  Status st = ForEachRow(db, path,
                         (std::string("SELECT 1 FROM pragma_table_info('") + table +
                          "') WHERE name = '" + column + "'")
                             .c_str(),
                         [&](Columns&) { present = true; });
  if (!st.ok()) return st;
  return present;
}

// SQLite URI filenames treat '?', '#' and '%' specially: escape all but the
// plainest characters.
std::string FileUri(const std::string& path, const char* query) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string uri = "file:";
  for (unsigned char c : path) {
    bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '/' || c == '.' || c == '_' || c == '-' || c == '~';
    if (plain) {
      uri += static_cast<char>(c);
    } else {
      uri += '%';
      uri += kHex[c >> 4];
      uri += kHex[c & 0xf];
    }
  }
  uri += query;
  return uri;
}

// Checks that `db` is a run file this code reads.
Status CheckSchema(sqlite3* db, const std::string& path) {
  int64_t version = -1;
  if (Status st =
          ForEachRow(db, path, "PRAGMA user_version", [&](Columns& c) { version = c.Int(); });
      !st.ok()) {
    return st;
  }
  bool has_meta = false;
  if (Status st =
          ForEachRow(db, path, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'",
                     [&](Columns&) { has_meta = true; });
      !st.ok()) {
    return st;
  }
  if (!has_meta) {
    return Status::ParseError(path, 0, "not a stallscope run file (no meta table)");
  }
  std::optional<std::string> schema;
  if (Status st = ForEachRow(db, path, "SELECT value FROM meta WHERE key = 'schema'",
                             [&](Columns& c) { schema = c.Text(); });
      !st.ok()) {
    return st;
  }
  if (!schema.has_value()) {
    return Status::ParseError(path, 0, "not a stallscope run file (meta has no schema)");
  }
  return CheckRunFileSchema(path, *schema, version);
}

Result<Database> OpenWith(const std::string& name, int flags, const std::string& path) {
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(name.c_str(), &raw, flags, nullptr);
  Database db(raw);
  if (rc != SQLITE_OK) return store::SqliteError(path, raw, "cannot open the run file");
  // Pages mapped rather than copied by read(): a job's files are read whole.
  // Best effort (a build without mmap ignores it).
  (void)sqlite3_exec(raw, "PRAGMA mmap_size = 1073741824", nullptr, nullptr, nullptr);
  if (Status st = CheckSchema(db.get(), path); !st.ok()) return st;
  return db;
}

// Opens `path` read-only and checks its schema; never changes the file.
//
// A WAL database opened read-only needs its -shm (and -wal) to exist or be
// creatable, and SQLite leaves any it creates behind. So a file without a
// -wal, or with an empty one, is opened as immutable: it was closed cleanly
// (closing folds the WAL into the file and removes it) or never written, so
// the main file is the whole truth, and reading needs no side files and no
// write access to the directory. A -wal with content belongs to a live
// writer or to one that was killed: the committed intervals in it are read
// through the WAL index in -shm, which SQLite rebuilds in memory when the
// reader may not write it.
Result<Database> OpenRunFile(const std::string& path) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0) {
    return Status::FromErrno(path + ": cannot open the run file", errno);
  }
  if (S_ISDIR(info.st_mode)) {
    return Status::InvalidArgument(path + ": is a directory, not a run file");
  }
  struct stat wal;
  if (stat((path + "-wal").c_str(), &wal) != 0 || wal.st_size == 0) {
    return OpenWith(FileUri(path, "?immutable=1"),
                    SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, path);
  }
  Result<Database> db = OpenWith(path, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, path);
  struct stat shm;
  if (db.ok() || db.status().code() == Status::Code::kParseError ||
      stat((path + "-shm").c_str(), &shm) == 0) {
    return db;
  }
  return Status::Unavailable(db.status().message() + " (" + path +
                             "-wal holds the end of the run, and its -shm is missing and cannot "
                             "be created here: copy " +
                             path + " and " + path +
                             "-wal to a writable directory and read the copy)");
}

}  // namespace

namespace {

// Table job_identity, where the file has it: argv as a JSON array of
// strings (anything else in it is left out, the rest still read).
Status ReadJobIdentity(sqlite3* db, const std::string& path, RunInfo& info) {
  Status st = ForEachRow(
      db, path, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'job_identity'",
      [&](Columns&) { info.identity_recorded = true; });
  if (!st.ok() || !info.identity_recorded) return st;
  return ForEachRow(db, path,
                    "SELECT argv_json, uid, cwd, job_name, job_name_from, script, program "
                    "FROM job_identity WHERE id = 1",
                    [&](Columns& c) {
                      const nlohmann::json argv =
                          nlohmann::json::parse(c.Text(), nullptr, /*allow_exceptions=*/false);
                      if (argv.is_array()) {
                        for (const auto& word : argv) {
                          if (word.is_string() && info.argv.size() < 100000) {
                            info.argv.push_back(word.get<std::string>());
                          }
                        }
                      }
                      info.uid = c.Optional<int64_t>();
                      info.cwd = c.Text();
                      info.job_name = c.Text();
                      info.job_name_from = c.Text();
                      info.script = c.Text();
                      info.program = c.Text();
                    });
}

// Rows of rank_stops and rank_states read at most: a file written by
// another tool may hold any number; a job's stops are a few per rank.
constexpr size_t kMaxRankRows = 100000;

// Table boundary_samples, where the file has it: the rows of one sample
// (one per disk) into one BoundarySample, by time.
Status ReadBoundarySamples(sqlite3* db, const std::string& path, Timeline& timeline) {
  bool present = false;
  Status st = ForEachRow(
      db, path, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'boundary_samples'",
      [&](Columns&) { present = true; });
  if (!st.ok() || !present) return st;
  std::optional<int64_t> last;
  st = ForEachRow(db, path,
                  "SELECT boundary, t_seconds, epoch, processes, tree_rss_bytes, "
                  "tree_cpu_seconds, tree_read_bytes, disk, disk_read_bytes "
                  "FROM boundary_samples ORDER BY boundary, rowid",
                  [&](Columns& c) {
                    const int64_t boundary = c.Int();
                    if (boundary != last) {
                      last = boundary;
                      BoundarySample& b = timeline.boundaries.emplace_back();
                      b.t = c.Real();
                      b.epoch = c.Optional<int>();
                      b.processes = c.Int32();
                      b.tree_rss_bytes = c.Bytes();
                      b.tree_cpu_seconds = c.Real();
                      b.tree_read_bytes = c.Optional<uint64_t>();
                    } else {
                      for (int i = 0; i < 6; ++i) c.Skip();
                    }
                    std::string disk = c.Text();
                    std::optional<uint64_t> bytes = c.Optional<uint64_t>();
                    if (!disk.empty() && bytes) {
                      timeline.boundaries.back().disk_read_bytes.emplace_back(std::move(disk),
                                                                              *bytes);
                    }
                  });
  std::stable_sort(timeline.boundaries.begin(), timeline.boundaries.end(),
                   [](const BoundarySample& a, const BoundarySample& b) { return a.t < b.t; });
  return st;
}

// Table phase_spans, where the file has it (made at every run's start
// since it exists): checkpoints and evaluation loops, at most kMaxRankRows.
Status ReadPhaseSpans(sqlite3* db, const std::string& path, Timeline& timeline) {
  Result<bool> has = HasTable(db, path, "phase_spans");
  if (!has.ok()) return has.status();
  timeline.spans_recorded = *has;
  if (!*has) return Status::Ok();
  return ForEachRow(db, path,
                    "SELECT pid, rank, kind, start_seconds, end_seconds FROM phase_spans "
                    "ORDER BY start_seconds, rowid",
                    [&](Columns& c) {
                      if (timeline.spans.size() >= kMaxRankRows) return;
                      PhaseSpan& s = timeline.spans.emplace_back();
                      s.pid = c.Int32();
                      s.rank = c.Int32();
                      s.kind = c.Text();
                      s.start_t = c.Real();
                      s.end_t = c.Real();
                    });
}

// Table host_syncs, where the file has it (made at every run's start since
// it exists): at most one row per step of a rank.
Status ReadHostSyncs(sqlite3* db, const std::string& path, Timeline& timeline) {
  Result<bool> has = HasTable(db, path, "host_syncs");
  if (!has.ok()) return has.status();
  timeline.host_syncs_recorded = *has;
  if (!*has) return Status::Ok();
  return ForEachRow(db, path, "SELECT rank, step, seconds, calls FROM host_syncs ORDER BY rowid",
                    [&](Columns& c) {
                      HostSync& h = timeline.host_syncs.emplace_back();
                      h.rank = c.Int32();
                      h.step = c.Int();
                      h.seconds = c.Real();
                      h.calls = c.Int();
                    });
}

// Tables rank_stops and rank_states, where the file has them (written at
// every run's end since they exist).
Status ReadRankStops(sqlite3* db, const std::string& path, Timeline& timeline) {
  Status st = ForEachRow(db, path,
                         "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'rank_stops'",
                         [&](Columns&) { timeline.rank_stops_recorded = true; });
  if (!st.ok() || !timeline.rank_stops_recorded) return st;
  st = ForEachRow(db, path,
                  "SELECT pid, rank, t_seconds, how, exit_code, signal, detail, source "
                  "FROM rank_stops ORDER BY t_seconds, rowid",
                  [&](Columns& c) {
                    if (timeline.rank_stops.size() >= kMaxRankRows) return;
                    RankStop& s = timeline.rank_stops.emplace_back();
                    s.pid = c.Int32();
                    s.rank = c.Int32();
                    s.t = c.Real();
                    s.how = c.Text();
                    s.exit_code = c.Optional<int>();
                    s.signal = c.Optional<int>();
                    s.detail = c.Text();
                    s.source = c.Text();
                  });
  if (!st.ok()) return st;
  bool states = false;
  st = ForEachRow(db, path,
                  "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'rank_states'",
                  [&](Columns&) { states = true; });
  if (!st.ok() || !states) return st;
  return ForEachRow(db, path,
                    "SELECT t_seconds, reason, pid, rank, steps, last_step_seconds, "
                    "collective_since_seconds, state, wchan, threads, cpu_seconds, frame, stack, "
                    "stack_unchanged FROM rank_states ORDER BY t_seconds, rowid",
                    [&](Columns& c) {
                      if (timeline.rank_states.size() >= kMaxRankRows) return;
                      RankState& r = timeline.rank_states.emplace_back();
                      r.t = c.Real();
                      r.reason = c.Text();
                      r.pid = c.Int32();
                      r.rank = c.Int32();
                      r.steps = c.Int();
                      r.last_step_t = c.Optional<double>();
                      r.collective_since_t = c.Optional<double>();
                      r.state = c.Text();
                      r.wchan = c.Text();
                      r.threads = c.Int32();
                      r.cpu_seconds = c.Optional<double>();
                      r.frame = c.Text();
                      r.stack = c.Text();
                      r.stack_unchanged = c.Optional<bool>();
                    });
}

}  // namespace

namespace {
Result<Timeline> ReadRunFile(const std::string& path);
}  // namespace

Result<Timeline> ReadRun(const std::string& path) {
  Result<Timeline> read = ReadRunFile(path);
  if (read.ok() || read.status().message().find("malformed") == std::string::npos) return read;
  // A file copied without the -wal a full disk left beside it reads as
  // malformed: say so where no -wal with content is beside it.
  struct stat wal {};
  if (stat((path + "-wal").c_str(), &wal) == 0 && wal.st_size > 0) return read;
  return Status::Unavailable(
      read.status().message() +
      " (if it was copied from a run whose disk filled, its last part may be in "
      "its -wal: copy " +
      path + "-wal from beside the original)");
}

namespace {

// A table's rows reserved at once, sized by its largest rowid against the
// file's size (RowsHint).
template <typename Rows>
void Reserve(sqlite3* db, const std::string& path, Rows& rows, const char* max_rowid_sql) {
  int64_t file_bytes = 0;
  (void)ForEachRow(db, path,
                   "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()",
                   [&](Columns& c) { file_bytes = c.Int(); });
  rows.reserve(RowsHint(db, path, max_rowid_sql, file_bytes));
}

// The version that wrote the file (meta key stallscope_version).
Status ReadWrittenBy(sqlite3* db, const std::string& path, Timeline& timeline) {
  return ForEachRow(db, path, "SELECT value FROM meta WHERE key = 'stallscope_version'",
                    [&](Columns& c) { timeline.written_by = c.Text(); });
}

// Table run: the run's facts, and job_identity where the file has it.
Status ReadRunRow(sqlite3* db, const std::string& path, Timeline& timeline) {
  Status st = ForEachRow(
      db, path,
      "SELECT command, hostname, started_utc, start_monotonic_seconds, interval_seconds, "
      "root_pid, cpu_count, mem_total_bytes, cgroup_limit_bytes, data_device, duration_seconds, "
      "exit_code, exit_signal, oom_killed FROM run WHERE id = 1",
      [&](Columns& c) {
        RunInfo& r = timeline.info;
        r.command = c.Text();
        r.hostname = c.Text();
        r.started_utc = c.Text();
        r.start_monotonic_seconds = c.Real();
        r.interval_seconds = c.Real();
        r.root_pid = c.Int32();
        r.cpu_count = c.Int32();
        r.mem_total_bytes = c.Bytes();
        r.cgroup_limit_bytes = c.Optional<uint64_t>();
        r.data_device = c.Text();
        r.duration_seconds = c.Optional<double>();
        r.exit_code = c.Optional<int>();
        r.exit_signal = c.Optional<int>();
        r.oom_killed = c.Bool();
      });
  if (!st.ok()) return st;
  return ReadJobIdentity(db, path, timeline.info);
}

// Table node, where the file has it: files written before it and the
// samples' wall clock lack both (they came together).
Status ReadNode(sqlite3* db, const std::string& path, Timeline& timeline) {
  Result<bool> has_node = HasTable(db, path, "node");
  if (!has_node.ok() || !*has_node) return has_node.status();
  Result<bool> has_net_interface = HasColumn(db, path, "node", "net_interface");
  if (!has_net_interface.ok()) return has_net_interface.status();
  const std::string node_sql =
      std::string(
          "SELECT node_rank, nnodes, procs_per_node, world_size, master_addr, "
          "master_port, launcher_job, source, start_realtime_seconds, "
          "clock_offset_seconds, clock_round_trip_seconds") +
      (*has_net_interface ? ", net_interface" : "") + " FROM node WHERE id = 1";
  return ForEachRow(db, path, node_sql.c_str(), [&](Columns& c) {
    NodeInfo& n = timeline.node.emplace();
    n.node_rank = c.Optional<int>();
    n.nnodes = c.Optional<int>();
    n.procs_per_node = c.Optional<int>();
    n.world_size = c.Optional<int>();
    n.master_addr = c.Text();
    n.master_port = c.Optional<int>();
    n.launcher_job = c.Text();
    n.source = c.Text();
    n.start_realtime_seconds = c.Real();
    n.clock_offset_seconds = c.Optional<double>();
    n.clock_round_trip_seconds = c.Optional<double>();
    if (*has_net_interface) n.net_interface = c.Text();
  });
}

// Table samples: files written before the job's interface and its rates
// lack the last two columns, those before the wall clock the one before.
Status ReadSamples(sqlite3* db, const std::string& path, Timeline& timeline) {
  Result<bool> realtime = HasColumn(db, path, "samples", "realtime_seconds");
  if (!realtime.ok()) return realtime.status();
  Result<bool> net = HasColumn(db, path, "samples", "net_rx_bytes_per_s");
  if (!net.ok()) return net.status();
  const bool has_realtime = *realtime, has_net = *net;
  Reserve(db, path, timeline.samples, "SELECT max(rowid) FROM samples");
  return ForEachRow(
      db, path,
      has_net        ? "SELECT t_seconds, processes, tree_rss_bytes, tree_pss_bytes, "
                       "tree_cpu_percent, loader_cpu_percent, mem_available_bytes, "
                       "swap_used_bytes, swap_in_pages_per_s, swap_out_pages_per_s, "
                       "cpu_busy_percent, cpu_iowait_percent, disk_util_percent, "
                       "disk_await_ms, disk_read_kib_per_s, steps_per_s, data_wait_fraction, "
                       "realtime_seconds, net_rx_bytes_per_s, net_tx_bytes_per_s "
                       "FROM samples ORDER BY interval"
      : has_realtime ? "SELECT t_seconds, processes, tree_rss_bytes, tree_pss_bytes, "
                       "tree_cpu_percent, loader_cpu_percent, mem_available_bytes, "
                       "swap_used_bytes, swap_in_pages_per_s, swap_out_pages_per_s, "
                       "cpu_busy_percent, cpu_iowait_percent, disk_util_percent, disk_await_ms, "
                       "disk_read_kib_per_s, steps_per_s, data_wait_fraction, realtime_seconds "
                       "FROM samples ORDER BY interval"
                     : "SELECT t_seconds, processes, tree_rss_bytes, tree_pss_bytes, "
                       "tree_cpu_percent, loader_cpu_percent, mem_available_bytes, "
                       "swap_used_bytes, swap_in_pages_per_s, swap_out_pages_per_s, "
                       "cpu_busy_percent, cpu_iowait_percent, disk_util_percent, disk_await_ms, "
                       "disk_read_kib_per_s, steps_per_s, data_wait_fraction "
                       "FROM samples ORDER BY interval",
      [&](Columns& c) {
        TimelineSample& s = timeline.samples.emplace_back();
        s.t = c.Real();
        s.processes = c.Int32();
        s.tree_rss_bytes = c.Bytes();
        s.tree_pss_bytes = c.Bytes();
        s.tree_cpu_percent = c.Real();
        s.loader_cpu_percent = c.Real();
        s.mem_available_bytes = c.Bytes();
        s.swap_used_bytes = c.Bytes();
        s.swap_in_pages_per_s = c.Real();
        s.swap_out_pages_per_s = c.Real();
        s.cpu_busy_percent = c.Real();
        s.cpu_iowait_percent = c.Real();
        s.disk_util_percent = c.Real();
        s.disk_await_ms = c.Real();
        s.disk_read_kib_per_s = c.Real();
        s.steps_per_s = c.Real();
        s.data_wait_fraction = c.Real();
        if (has_realtime) s.realtime_seconds = c.Optional<double>();
        if (has_net) {
          s.net_rx_bytes_per_s = c.Optional<double>();
          s.net_tx_bytes_per_s = c.Optional<double>();
        }
      });
}

// Table processes: files written before the processes' run delay and
// reads lack those columns; those written before their writes lack the
// last two.
Status ReadProcesses(sqlite3* db, const std::string& path, Timeline& timeline) {
  bool has_run_delay = false, has_writes = false;
  Status st = ForEachRow(
      db, path,
      "SELECT name FROM pragma_table_info('processes') WHERE name IN "
      "('run_delay_percent', 'write_kib_per_s')",
      [&](Columns& c) { (c.Text() == "write_kib_per_s" ? has_writes : has_run_delay) = true; });
  if (!st.ok()) return st;
  has_writes = has_writes && has_run_delay;  // the writes came after
  // rowid order is the order the writer appended them.
  Reserve(db, path, timeline.processes, "SELECT max(rowid) FROM processes");
  return ForEachRow(db, path,
                    has_writes      ? "SELECT t_seconds, pid, ppid, comm, rss_bytes, cpu_percent, "
                                      "run_delay_percent, read_kib_per_s, rchar_kib_per_s, "
                                      "write_kib_per_s, wchar_kib_per_s "
                                      "FROM processes ORDER BY rowid"
                    : has_run_delay ? "SELECT t_seconds, pid, ppid, comm, rss_bytes, cpu_percent, "
                                      "run_delay_percent, read_kib_per_s, rchar_kib_per_s "
                                      "FROM processes ORDER BY rowid"
                                    : "SELECT t_seconds, pid, ppid, comm, rss_bytes, cpu_percent "
                                      "FROM processes ORDER BY rowid",
                    [&](Columns& c) {
                      ProcessPoint& p = timeline.processes.emplace_back();
                      p.t = c.Real();
                      p.pid = c.Int32();
                      p.ppid = c.Int32();
                      p.comm = c.Text();
                      p.rss_bytes = c.Bytes();
                      p.cpu_percent = c.Real();
                      if (has_run_delay) {
                        p.run_delay_percent = c.Optional<double>();
                        p.read_kib_per_s = c.Optional<double>();
                        p.rchar_kib_per_s = c.Optional<double>();
                      }
                      if (has_writes) {
                        p.write_kib_per_s = c.Optional<double>();
                        p.wchar_kib_per_s = c.Optional<double>();
                      }
                    });
}

// Table steps: one row per training step per rank.
Status ReadSteps(sqlite3* db, const std::string& path, Timeline& timeline) {
  Reserve(db, path, timeline.steps, "SELECT max(rowid) FROM steps");
  return ForEachRow(db, path,
                    "SELECT rank, step, t_seconds, wait_seconds, step_seconds "
                    "FROM steps ORDER BY rowid",
                    [&](Columns& c) {
                      StepEvent& e = timeline.steps.emplace_back();
                      e.rank = c.Int32();
                      e.step = c.Int();
                      e.t = c.Real();
                      e.wait_seconds = c.Real();
                      e.step_seconds = c.Real();
                    });
}

// Table epochs: each rank's epoch marks.
Status ReadEpochs(sqlite3* db, const std::string& path, Timeline& timeline) {
  return ForEachRow(db, path, "SELECT rank, epoch, t_seconds FROM epochs ORDER BY rowid",
                    [&](Columns& c) {
                      EpochEvent& e = timeline.epochs.emplace_back();
                      e.rank = c.Int32();
                      e.epoch = c.Int32();
                      e.t = c.Real();
                    });
}

// Table loaders: each DataLoader's settings.
Status ReadLoaders(sqlite3* db, const std::string& path, Timeline& timeline) {
  return ForEachRow(db, path,
                    "SELECT rank, pid, batch_size, num_workers, pin_memory, prefetch_factor, "
                    "persistent_workers, dataset_length, gpu_available FROM loaders ORDER BY rowid",
                    [&](Columns& c) {
                      LoaderConfig& l = timeline.loaders.emplace_back();
                      l.rank = c.Int32();
                      l.pid = c.Int32();
                      l.batch_size = c.Int32();
                      l.num_workers = c.Int32();
                      l.pin_memory = c.Bool();
                      l.prefetch_factor = c.Int32();
                      l.persistent_workers = c.Bool();
                      l.dataset_length = c.Int();
                      l.gpu_available = c.Bool();
                    });
}

// Table port_counters: files written before it lack the table: no rows.
Status ReadPortCounters(sqlite3* db, const std::string& path, Timeline& timeline) {
  Result<bool> has_ports = HasTable(db, path, "port_counters");
  if (!has_ports.ok() || !*has_ports) return has_ports.status();
  return ForEachRow(db, path,
                    "SELECT t_seconds, port, rdma, packets, rx_errors, tx_errors, rx_drops, "
                    "tx_drops, symbol_errors, link_downed, rcv_errors FROM port_counters "
                    "ORDER BY rowid",
                    [&](Columns& c) {
                      PortCounterPoint& p = timeline.port_counters.emplace_back();
                      p.t = c.Real();
                      p.port = c.Text();
                      p.rdma = c.Bool();
                      p.packets = c.Bytes();
                      p.rx_errors = c.Bytes();
                      p.tx_errors = c.Bytes();
                      p.rx_drops = c.Bytes();
                      p.tx_drops = c.Bytes();
                      p.symbol_errors = c.Bytes();
                      p.link_downed = c.Bytes();
                      p.rcv_errors = c.Bytes();
                    });
}

// Tables step_sync and ranks: files written before per-rank records
// existed lack them.
Status ReadRankRecords(sqlite3* db, const std::string& path, Timeline& timeline) {
  bool has_sync = false, has_ranks = false;
  Status st = ForEachRow(db, path,
                         "SELECT name FROM sqlite_master WHERE type = 'table' AND "
                         "name IN ('step_sync', 'ranks')",
                         [&](Columns& c) {
                           std::string name = c.Text();
                           (name == "ranks" ? has_ranks : has_sync) = true;
                         });
  if (!st.ok()) return st;
  if (has_sync) {
    Reserve(db, path, timeline.step_syncs, "SELECT max(rowid) FROM step_sync");
    st = ForEachRow(db, path,
                    "SELECT rank, step, sync_seconds, cpu_seconds FROM step_sync ORDER BY rowid",
                    [&](Columns& c) {
                      StepSync& e = timeline.step_syncs.emplace_back();
                      e.rank = c.Int32();
                      e.step = c.Int();
                      e.sync_seconds = c.Real();
                      e.cpu_seconds = c.Real();
                    });
    if (!st.ok()) return st;
  }
  if (has_ranks) {
    st = ForEachRow(db, path,
                    "SELECT pid, rank, local_rank, world_size, hostname FROM ranks ORDER BY rowid",
                    [&](Columns& c) {
                      RankInfo& r = timeline.ranks.emplace_back();
                      r.pid = c.Int32();
                      r.rank = c.Int32();
                      r.local_rank = c.Int32();
                      r.world_size = c.Int32();
                      r.hostname = c.Text();
                    });
    if (!st.ok()) return st;
  }
  return Status::Ok();
}

// Table allocations: only runs whose hook traced allocations have it.
Status ReadAllocations(sqlite3* db, const std::string& path, Timeline& timeline) {
  Result<bool> has_allocations = HasTable(db, path, "allocations");
  if (!has_allocations.ok() || !*has_allocations) return has_allocations.status();
  return ForEachRow(db, path,
                    "SELECT t_seconds, rank, pid, kind, bytes, count, grew_bytes, location, text "
                    "FROM allocations ORDER BY rowid",
                    [&](Columns& c) {
                      AllocationReport& a = timeline.allocations.emplace_back();
                      a.t = c.Real();
                      a.rank = c.Int32();
                      a.pid = c.Int32();
                      a.kind = c.Text();
                      a.bytes = c.Int();
                      a.count = c.Int();
                      a.grew_bytes = c.Int();
                      a.where = c.Text();
                      a.text = c.Text();
                    });
}

// Table bucket_sync: created with its first rows (stallscope.ddp), absent
// in older files.
Status ReadBucketSyncs(sqlite3* db, const std::string& path, Timeline& timeline) {
  Result<bool> has = HasTable(db, path, "bucket_sync");
  if (!has.ok()) return has.status();
  timeline.bucket_syncs_recorded = *has;
  Status st;
  if (timeline.bucket_syncs_recorded) {
    Reserve(db, path, timeline.bucket_syncs, "SELECT max(rowid) FROM bucket_sync");
    st = ForEachRow(db, path,
                    "SELECT rank, step, bucket, launch_seconds, done_seconds FROM bucket_sync "
                    "ORDER BY rowid",
                    [&](Columns& c) {
                      BucketSync& b = timeline.bucket_syncs.emplace_back();
                      b.rank = c.Int32();
                      b.step = c.Int();
                      b.bucket = c.Int32();
                      b.launch_seconds = c.Real();
                      b.done_seconds = c.Real();
                    });
  }
  return st;
}

// Table congestion_counters: created with its first rows, so absent both
// in older files and in runs on hosts whose ports count no congestion.
Status ReadCongestion(sqlite3* db, const std::string& path, Timeline& timeline) {
  Result<bool> has_congestion = HasTable(db, path, "congestion_counters");
  if (!has_congestion.ok() || !*has_congestion) return has_congestion.status();
  return ForEachRow(db, path,
                    "SELECT t_seconds, port, rdma, pause_rx, pause_tx, ecn_marked, cnp_sent, "
                    "cnp_handled, buffer_drops, allowance_exceeded, xmit_wait_ticks, xmit_words, "
                    "has_pause, has_ecn_cnp, has_drops, has_xmit_wait FROM congestion_counters "
                    "ORDER BY rowid",
                    [&](Columns& c) {
                      CongestionPoint& p = timeline.congestion.emplace_back();
                      p.t = c.Real();
                      p.port = c.Text();
                      p.rdma = c.Bool();
                      NicCongestion& n = p.counters;
                      n.pause_rx = c.Bytes();
                      n.pause_tx = c.Bytes();
                      n.ecn_marked = c.Bytes();
                      n.cnp_sent = c.Bytes();
                      n.cnp_handled = c.Bytes();
                      n.buffer_drops = c.Bytes();
                      n.allowance_exceeded = c.Bytes();
                      n.xmit_wait_ticks = c.Bytes();
                      n.xmit_words = c.Bytes();
                      n.has_pause = c.Bool();
                      n.has_ecn_cnp = c.Bool();
                      n.has_drops = c.Bool();
                      n.has_xmit_wait = c.Bool();
                    });
}

// Table memory_peaks: files written before it lack the table.
Status ReadMemoryPeaks(sqlite3* db, const std::string& path, Timeline& timeline) {
  Result<bool> has = HasTable(db, path, "memory_peaks");
  if (!has.ok()) return has.status();
  timeline.memory_peaks_recorded = *has;
  Status st;
  if (timeline.memory_peaks_recorded) {
    st = ForEachRow(db, path, "SELECT source, pid, bytes, detail FROM memory_peaks ORDER BY rowid",
                    [&](Columns& c) {
                      MemoryPeak& p = timeline.memory_peaks.emplace_back();
                      p.source = c.Text();
                      p.pid = c.Int32();
                      p.bytes = c.Bytes();
                      p.detail = c.Text();
                    });
  }
  return st;
}

// Table kernel_events: files written before it lack the table.
Status ReadKernelEvents(sqlite3* db, const std::string& path, Timeline& timeline) {
  Result<bool> has = HasTable(db, path, "kernel_events");
  if (!has.ok()) return has.status();
  timeline.kernel_events_recorded = *has;
  Status st;
  if (timeline.kernel_events_recorded) {
    st = ForEachRow(
        db, path,
        "SELECT kind, t_seconds, device, xid, pid, process, message FROM kernel_events "
        "ORDER BY rowid",
        [&](Columns& c) {
          std::string kind = c.Text();
          std::optional<double> t = c.Optional<double>();
          std::string device = c.Text();
          std::optional<int> xid = c.Optional<int>();
          std::optional<int> pid = c.Optional<int>();
          std::string process = c.Text();
          std::string message = c.Text();
          if (kind == "xid" && xid) {
            timeline.xids.push_back(
                {*xid, std::move(device), pid, std::move(process), t, 0, std::move(message)});
          } else if (kind == "port") {
            timeline.port_events.push_back({std::move(device), t, 0, std::move(message)});
          }  // a kind of a newer version: not ours to read
        });
  }
  return st;
}

// Tables inputs and other_processes: files written before inputs existed
// lack both.
Status ReadInputs(sqlite3* db, const std::string& path, Timeline& timeline) {
  bool has_other = false;
  Status st = ForEachRow(db, path,
                         "SELECT name FROM sqlite_master WHERE type = 'table' AND "
                         "name IN ('inputs', 'other_processes')",
                         [&](Columns& c) {
                           std::string name = c.Text();
                           (name == "inputs" ? timeline.inputs_recorded : has_other) = true;
                         });
  if (!st.ok()) return st;
  if (timeline.inputs_recorded) {
    st = ForEachRow(db, path,
                    "SELECT path, role, deleted, readers, samples, first_t_seconds, "
                    "last_t_seconds, size_bytes, max_position, fs_type, remote, device, format, "
                    "archive, compressed, method FROM inputs ORDER BY rowid",
                    [&](Columns& c) {
                      InputSeen& f = timeline.inputs.emplace_back();
                      f.path = c.Text();
                      f.role = c.Text();
                      f.deleted = c.Bool();
                      f.readers = c.Int32();
                      f.samples = c.Int();
                      f.first_t = c.Real();
                      f.last_t = c.Real();
                      f.size_bytes = c.Bytes();
                      f.max_position = c.Bytes();
                      f.fs_type = c.Text();
                      f.remote = c.Bool();
                      f.device = c.Text();
                      f.format = c.Text();
                      f.archive = c.Bool();
                      f.compressed = c.Bool();
                      f.method = c.Text();
                    });
    if (!st.ok()) return st;
  }
  if (has_other) {
    st = ForEachRow(db, path,
                    "SELECT t_seconds, pid, comm, cpu_percent FROM other_processes ORDER BY rowid",
                    [&](Columns& c) {
                      OtherProcessPoint& p = timeline.other_processes.emplace_back();
                      p.t = c.Real();
                      p.pid = c.Int32();
                      p.comm = c.Text();
                      p.cpu_percent = c.Real();
                    });
    if (!st.ok()) return st;
  }
  return Status::Ok();
}

Status ReadGpuSamples(sqlite3* db, const std::string& path, Timeline& timeline) {
  return store::ReadGpuSamples(db, path, timeline);
}

// The run file's tables, read in this order into one Timeline.
using TableReader = Status (*)(sqlite3* db, const std::string& path, Timeline& timeline);
constexpr TableReader kTableReaders[] = {
    ReadWrittenBy,       ReadRunRow,      ReadNode,        ReadSamples,      ReadProcesses,
    ReadSteps,           ReadEpochs,      ReadLoaders,     ReadPortCounters, ReadRankRecords,
    ReadGpuSamples,      ReadAllocations, ReadRankStops,   ReadPhaseSpans,   ReadHostSyncs,
    ReadBucketSyncs,     ReadCongestion,  ReadMemoryPeaks, ReadKernelEvents, ReadInputs,
    ReadBoundarySamples,
};

Result<Timeline> ReadRunFile(const std::string& path) {
  Result<Database> opened = OpenRunFile(path);
  if (!opened.ok()) return opened.status();
  sqlite3* db = opened->get();
  // One read transaction: a consistent view while a writer keeps appending.
  if (sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr) != SQLITE_OK) {
    return store::SqliteError(path, db, "cannot read");
  }
  Timeline timeline;
  for (TableReader read : kTableReaders) {
    if (Status st = read(db, path, timeline); !st.ok()) return st;
  }
  sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
  return timeline;
}

}  // namespace

Result<std::string> ReadBaseline(const std::string& path) {
  Result<Database> opened = OpenRunFile(path);
  if (!opened.ok()) return opened.status();
  std::optional<std::string> json;
  Status st = ForEachRow(opened->get(), path, "SELECT snapshot_json FROM baseline WHERE id = 1",
                         [&](Columns& c) { json = c.Text(); });
  if (!st.ok()) return st;
  if (!json.has_value()) {
    return Status::NotFound(path + ": no baseline snapshot (the run stopped before one was taken)");
  }
  return *std::move(json);
}

Result<StoredFindings> ReadStoredFindings(const std::string& path) {
  Result<Database> opened = OpenRunFile(path);
  if (!opened.ok()) return opened.status();
  sqlite3* db = opened->get();
  StoredFindings stored;
  bool have_tables = false;
  Status st =
      ForEachRow(db, path, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'findings'",
                 [&](Columns&) { have_tables = true; });
  if (!st.ok() || !have_tables) return st.ok() ? Result<StoredFindings>(stored) : st;
  Status bad = Status::Ok();
  int64_t row = 0;
  st = ForEachRow(
      db, path,
      "SELECT id, layer, severity, summary, evidence_json, next, impact_json FROM findings "
      "ORDER BY rowid",
      [&](Columns& c) {
        ++row;
        if (!bad.ok()) return;
        const std::string what = path + ": findings row " + std::to_string(row);
        Finding f;
        f.id = c.Text();
        std::string layer = c.Text(), severity = c.Text();
        f.summary = c.Text();
        std::string evidence = c.Text();
        f.next = c.Text();
        std::optional<std::string> impact;
        if (c.IsNull()) {
          c.Skip();
        } else {
          impact = c.Text();
        }
        std::optional<Layer> l = LayerFromName(layer);
        std::optional<Severity> s = SeverityFromName(severity);
        if (!l || !s) {
          bad = Status::InvalidArgument(what + ": layer \"" + layer + "\" or severity \"" +
                                        severity + "\" is not one stallscope knows");
          return;
        }
        f.layer = *l;
        f.severity = *s;
        Result<std::vector<Evidence>> ev = store::EvidenceFromJsonText(evidence, what);
        if (!ev.ok()) {
          bad = ev.status();
          return;
        }
        f.evidence = std::move(*ev);
        if (impact) {
          Result<Impact> im = store::ImpactFromJsonText(*impact, what);
          if (!im.ok()) {
            bad = im.status();
            return;
          }
          f.impact = std::move(*im);
        }
        stored.findings.push_back(std::move(f));
      });
  if (!st.ok()) return st;
  if (!bad.ok()) return bad;
  st = ForEachRow(db, path, "SELECT text FROM notes ORDER BY rowid",
                  [&](Columns& c) { stored.notes.push_back(c.Text()); });
  if (!st.ok()) return st;
  return stored;
}

}  // namespace stallscope
