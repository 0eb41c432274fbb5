#include "store/run_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <type_traits>

#include "core/version.h"
#include "store/run_file.h"
#include "store/run_schema.h"
#include "store/stored_findings.h"

namespace stallscope {
namespace {

// SQLite keeps the files of a database beside it under these suffixes.
constexpr const char* kSideFiles[] = {"-wal", "-shm", "-journal"};

// The -wal is checkpointed into the file once it holds this many pages.
constexpr int kCheckpointPages = 1000;
// How long a write waits for a lock held by someone else (a `sqlite3 RUN.db`
// session writing to the file) before the interval fails.
constexpr int kBusyTimeoutMs = 2000;

// Binds the parameters of one statement in order; keeps the first error.
class Binder {
 public:
  explicit Binder(sqlite3_stmt* statement) : statement_(statement) {}

  Binder& Int(int64_t value) {
    if (rc_ == SQLITE_OK) rc_ = sqlite3_bind_int64(statement_, index_, value);
    ++index_;
    return *this;
  }
  // Sizes are unsigned in the structs and signed in SQLite: stored as the
  // same 64 bits, so any value round-trips (and anything real is < 2^63).
  Binder& Bytes(uint64_t value) { return Int(static_cast<int64_t>(value)); }
  Binder& Bool(bool value) { return Int(value ? 1 : 0); }
  Binder& Real(double value) {
    if (rc_ == SQLITE_OK) rc_ = sqlite3_bind_double(statement_, index_, value);
    ++index_;
    return *this;
  }
  Binder& Text(const std::string& value) {
    // SQLITE_STATIC: the string outlives the step that follows the binding.
    if (rc_ == SQLITE_OK) {
      rc_ = sqlite3_bind_text(statement_, index_, value.c_str(), static_cast<int>(value.size()),
                              SQLITE_STATIC);
    }
    ++index_;
    return *this;
  }
  // A temporary would be gone before the step that reads it.
  Binder& Text(std::string&&) = delete;
  Binder& Text(const char*) = delete;
  template <typename T>
  Binder& Optional(const std::optional<T>& value) {
    if (value.has_value()) {
      if constexpr (std::is_floating_point_v<T>) {
        return Real(*value);
      } else {
        return Int(static_cast<int64_t>(*value));
      }
    }
    if (rc_ == SQLITE_OK) rc_ = sqlite3_bind_null(statement_, index_);
    ++index_;
    return *this;
  }
  Binder& Null() {
    if (rc_ == SQLITE_OK) rc_ = sqlite3_bind_null(statement_, index_);
    ++index_;
    return *this;
  }
  bool ok() const { return rc_ == SQLITE_OK; }

 private:
  sqlite3_stmt* statement_;
  int index_ = 1;
  int rc_ = SQLITE_OK;
};

// Removes `path` if it is there; a file that cannot be removed is an error.
Status RemoveIfPresent(const std::string& path) {
  if (unlink(path.c_str()) == 0 || errno == ENOENT) return Status::Ok();
  return Status::FromErrno(path + ": cannot remove", errno);
}

void RemoveRunFiles(const std::string& path) {
  unlink(path.c_str());
  for (const char* suffix : kSideFiles) unlink((path + suffix).c_str());
}

}  // namespace

void RunWriter::CloseDatabase::operator()(sqlite3* db) const { sqlite3_close_v2(db); }

void RunWriter::CloseFile::operator()(int* fd) const {
  close(*fd);
  delete fd;
}

namespace {

// Fails when another writer holds the lock on an existing `path`.
Status CheckNotRecorded(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return Status::Ok();  // absent, or not ours to lock: Create says why
  const bool held = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  close(fd);
  if (held) {
    return Status::Unavailable(path +
                               " is being recorded by another stallscope run; name another "
                               "--out, or wait until that run ends");
  }
  return Status::Ok();
}

}  // namespace

void RunWriter::FinalizeStatement::operator()(sqlite3_stmt* statement) const {
  sqlite3_finalize(statement);
}

Result<RunWriter> RunWriter::Create(const std::string& path, bool force) {
  if (path.empty()) return Status::InvalidArgument("the run file path is empty");
  if (Status free = CheckNotRecorded(path); !free.ok()) return free;
  if (force) {
    for (const std::string& file :
         {path, path + kSideFiles[0], path + kSideFiles[1], path + kSideFiles[2]}) {
      if (Status removed = RemoveIfPresent(file); !removed.ok()) return removed;
    }
  }
  // Creating the file ourselves, exclusively, is the no-overwrite check
  // (without a window between test and use) and gives the errno of an
  // unwritable or missing directory before SQLite is involved.
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (errno == EEXIST) {
      struct stat info;
      if (stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) {
        return Status::InvalidArgument(path + " is a directory; name a file for the run");
      }
      return Status::InvalidArgument(path + " exists; pass --force to overwrite");
    }
    return Status::FromErrno(path + ": cannot create the run file", errno);
  }
  // Locked before SQLite opens it, so no other `run` replaces it meanwhile.
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    Status status = Status::FromErrno(path + ": cannot lock the run file", errno);
    close(fd);
    unlink(path.c_str());
    return status;
  }
  // A -wal left beside a file that no longer exists is not replayed into
  // this one: SQLite deletes the -wal of an empty database when it opens it.

  RunWriter writer;
  writer.path_ = path;
  writer.lock_.reset(new int(fd));
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr);
  writer.db_.reset(db);
  Status status = rc == SQLITE_OK ? Status::Ok() : writer.Fail("cannot open");
  if (status.ok()) status = writer.Prepare();
  if (!status.ok()) {
    (void)writer.Close();
    RemoveRunFiles(path);
    return status;
  }
  return writer;
}

Status RunWriter::Prepare() {
  sqlite3* db = db_.get();
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  // WAL: readers never block the sampler, and a commit is one append to the
  // -wal file, which survives the process being killed. synchronous=NORMAL
  // skips the fsync per commit; only a power cut can lose the last commits.
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v2(db, "PRAGMA journal_mode=WAL", -1, &raw, nullptr) != SQLITE_OK) {
    return Fail("cannot set journal_mode=WAL");
  }
  Statement journal(raw);
  if (sqlite3_step(journal.get()) != SQLITE_ROW) return Fail("cannot set journal_mode=WAL");
  std::string mode = reinterpret_cast<const char*>(sqlite3_column_text(journal.get(), 0));
  if (mode != "wal") {
    return Status::Unavailable(path_ + ": SQLite cannot use a write-ahead log here (journal mode " +
                               mode + "); put the run file on a local file system");
  }
  journal.reset();

  std::string schema = "BEGIN;\n";
  schema += store::kCreateTables;
  // Made empty now, filled when the job ends: a run stopped before that
  // still says its inputs were looked for (none kept).
  schema += store::kCreateInputs;
  schema += "INSERT INTO meta (key, value) VALUES ('schema', '";
  schema += kTimelineSchema;
  schema += "');\nINSERT INTO meta (key, value) VALUES ('stallscope_version', '";
  schema += Version();
  schema += "');\nPRAGMA user_version = " + std::to_string(kTimelineSchemaVersion) + ";\nCOMMIT;";
  // The log is folded into the file whenever it passes kCheckpointPages
  // pages (4 MiB at SQLite's 4 KiB page), by the commit that passed it, so
  // it stays that small however long the run (docs/timeline-schema.md).
  const std::string checkpoint = "PRAGMA wal_autocheckpoint=" + std::to_string(kCheckpointPages);
  if (sqlite3_exec(db, checkpoint.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK ||
      sqlite3_exec(db, "PRAGMA synchronous=NORMAL", nullptr, nullptr, nullptr) != SQLITE_OK ||
      sqlite3_exec(db, schema.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
    return Fail("cannot create the tables");
  }

  struct {
    Statement* statement;
    const char* sql;
  } const statements[] = {
      {&begin_, "BEGIN IMMEDIATE"},
      {&commit_, "COMMIT"},
      {&rollback_, "ROLLBACK"},
      {&insert_run_,
       "INSERT OR REPLACE INTO run (id, command, hostname, started_utc, start_monotonic_seconds, "
       "interval_seconds, root_pid, cpu_count, mem_total_bytes, cgroup_limit_bytes, data_device, "
       "duration_seconds, exit_code, exit_signal, oom_killed) "
       "VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"},
      {&insert_baseline_, "INSERT OR REPLACE INTO baseline (id, snapshot_json) VALUES (1, ?)"},
      {&insert_sample_,
       "INSERT INTO samples (interval, t_seconds, processes, tree_rss_bytes, tree_pss_bytes, "
       "tree_cpu_percent, loader_cpu_percent, mem_available_bytes, swap_used_bytes, "
       "swap_in_pages_per_s, swap_out_pages_per_s, cpu_busy_percent, cpu_iowait_percent, "
       "disk_util_percent, disk_await_ms, disk_read_kib_per_s, steps_per_s, data_wait_fraction, "
       "realtime_seconds, net_rx_bytes_per_s, net_tx_bytes_per_s) "
       "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"},
      {&insert_process_,
       "INSERT INTO processes (interval, t_seconds, pid, ppid, comm, rss_bytes, cpu_percent, "
       "run_delay_percent, read_kib_per_s, rchar_kib_per_s, write_kib_per_s, wchar_kib_per_s) "
       "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"},
      {&insert_step_,
       "INSERT INTO steps (interval, rank, step, t_seconds, wait_seconds, step_seconds) "
       "VALUES (?, ?, ?, ?, ?, ?)"},
      {&insert_epoch_, "INSERT INTO epochs (interval, rank, epoch, t_seconds) VALUES (?, ?, ?, ?)"},
      {&insert_loader_,
       "INSERT INTO loaders (interval, rank, pid, batch_size, num_workers, pin_memory, "
       "prefetch_factor, persistent_workers, dataset_length, gpu_available) "
       "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"},
      {&insert_port_,
       "INSERT INTO port_counters (interval, t_seconds, port, rdma, packets, rx_errors, "
       "tx_errors, rx_drops, tx_drops, symbol_errors, link_downed, rcv_errors) "
       "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"},
      {&insert_step_sync_,
       "INSERT INTO step_sync (interval, rank, step, sync_seconds, cpu_seconds) "
       "VALUES (?, ?, ?, ?, ?)"},
      {&insert_rank_,
       "INSERT INTO ranks (interval, pid, rank, local_rank, world_size, hostname) "
       "VALUES (?, ?, ?, ?, ?, ?)"},
  };
  for (const auto& [statement, sql] : statements) {
    raw = nullptr;
    // Prepared once, run every interval: with SQLite's page cache (its
    // default 2000 KiB limit, reached early) the writer's memory is the
    // same after a day as after a minute. PERSISTENT: they live that long.
    if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &raw, nullptr) != SQLITE_OK) {
      return Fail(std::string("cannot prepare ") + sql);
    }
    statement->reset(raw);
  }
  return Status::Ok();
}

RunWriter::~RunWriter() { (void)Close(); }

Status RunWriter::Checkpoint() {
  if (!db_) return Status::Ok();
  fold_failed_full_ = false;
  if (sqlite3_exec(db_.get(), "PRAGMA wal_checkpoint(TRUNCATE)", nullptr, nullptr, nullptr) !=
      SQLITE_OK) {
    const int code = sqlite3_errcode(db_.get()) & 0xff;
    fold_failed_full_ = code == SQLITE_FULL || sqlite3_system_errno(db_.get()) == ENOSPC;
    return Fail("cannot fold the -wal into the file");
  }
  return Status::Ok();
}

Status RunWriter::Close() {
  if (!db_) return Status::Ok();
  for (Statement* statement : {&begin_, &commit_, &rollback_, &insert_run_, &insert_baseline_,
                               &insert_sample_, &insert_process_, &insert_step_, &insert_epoch_,
                               &insert_loader_, &insert_port_, &insert_step_sync_, &insert_rank_}) {
    statement->reset();
  }
  // The last connection to close checkpoints the WAL into the file and
  // removes -wal and -shm, leaving one self-contained file.
  sqlite3* db = db_.release();
  if (sqlite3_close(db) != SQLITE_OK) {
    Status status = store::SqliteError(path_, db, "cannot close");
    sqlite3_close_v2(db);
    lock_.reset();
    return status;
  }
  lock_.reset();  // after the WAL is folded back: the file is complete
  // A -wal left with content after a fold that found no space: its pages
  // did not fit in the file.
  struct stat wal {};
  if (fold_failed_full_ && stat((path_ + "-wal").c_str(), &wal) == 0 && wal.st_size > 0) {
    return Status::Unavailable(path_ + ": its file system is full: the run's last part stays in " +
                               path_ + "-wal beside it; copy both files together (" + path_ +
                               " alone reads as malformed), or "
                               "free space and run: sqlite3 " +
                               path_ + " 'PRAGMA wal_checkpoint(TRUNCATE)'");
  }
  return Status::Ok();
}

Status RunWriter::Fail(std::string_view what) const {
  return store::SqliteError(path_, db_.get(), what);
}

Status RunWriter::Step(sqlite3_stmt* statement, std::string_view what) {
  int rc = sqlite3_step(statement);
  Status status =
      rc == SQLITE_DONE || rc == SQLITE_ROW ? Status::Ok() : Fail(what);  // before reset
  sqlite3_reset(statement);
  return status;
}

Status RunWriter::WriteRunInfo(const RunInfo& info) {
  if (!db_) return Status::InvalidArgument(path_ + ": the run file is closed");
  Binder bind(insert_run_.get());
  bind.Text(info.command)
      .Text(info.hostname)
      .Text(info.started_utc)
      .Real(info.start_monotonic_seconds)
      .Real(info.interval_seconds)
      .Int(info.root_pid)
      .Int(info.cpu_count)
      .Bytes(info.mem_total_bytes)
      .Optional(info.cgroup_limit_bytes)
      .Text(info.data_device)
      .Optional(info.duration_seconds)
      .Optional(info.exit_code)
      .Optional(info.exit_signal)
      .Bool(info.oom_killed);
  if (!bind.ok()) return Fail("cannot bind the run row");
  if (Status st = Step(insert_run_.get(), "cannot write the run row"); !st.ok()) return st;
  const std::string argv =
      nlohmann::json(info.argv).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return AppendRows(
      "job's identity", store::kCreateJobIdentity,
      "INSERT OR REPLACE INTO job_identity (id, argv_json, uid, cwd, job_name, job_name_from, "
      "script, program) VALUES (1, ?, ?, ?, ?, ?, ?, ?)",
      1, [&](sqlite3_stmt* statement, size_t) {
        Binder b(statement);
        return b.Text(argv)
            .Optional(info.uid)
            .Text(info.cwd)
            .Text(info.job_name)
            .Text(info.job_name_from)
            .Text(info.script)
            .Text(info.program)
            .ok();
      });
}

Status RunWriter::WriteBaseline(const std::string& snapshot_json) {
  if (!db_) return Status::InvalidArgument(path_ + ": the run file is closed");
  Binder bind(insert_baseline_.get());
  if (!bind.Text(snapshot_json).ok()) return Fail("cannot bind the baseline");
  return Step(insert_baseline_.get(), "cannot write the baseline");
}

Status RunWriter::AppendInterval(const TimelineSample& sample,
                                 std::span<const ProcessPoint> processes,
                                 std::span<const StepEvent> steps,
                                 std::span<const EpochEvent> epochs,
                                 std::span<const LoaderConfig> loaders,
                                 std::span<const PortCounterPoint> ports,
                                 std::span<const RankInfo> ranks, std::span<const StepSync> syncs) {
  if (!db_) return Status::InvalidArgument(path_ + ": the run file is closed");
  if (Status begun = Step(begin_.get(), "cannot begin an interval"); !begun.ok()) return begun;
  Status status = InsertInterval(sample, processes, steps, epochs, loaders, ports, ranks, syncs);
  if (status.ok()) status = Step(commit_.get(), "cannot commit an interval");
  if (!status.ok()) {
    // A failed COMMIT leaves the transaction open; end it so that the next
    // interval starts clean. A failed ROLLBACK has nothing left to undo.
    if (!sqlite3_get_autocommit(db_.get())) (void)Step(rollback_.get(), "cannot roll back");
    return status;
  }
  ++next_interval_;
  return Status::Ok();
}

Status RunWriter::InsertInterval(const TimelineSample& s, std::span<const ProcessPoint> processes,
                                 std::span<const StepEvent> steps,
                                 std::span<const EpochEvent> epochs,
                                 std::span<const LoaderConfig> loaders,
                                 std::span<const PortCounterPoint> ports,
                                 std::span<const RankInfo> ranks, std::span<const StepSync> syncs) {
  const int64_t interval = next_interval_;
  Binder sample(insert_sample_.get());
  sample.Int(interval)
      .Real(s.t)
      .Int(s.processes)
      .Bytes(s.tree_rss_bytes)
      .Bytes(s.tree_pss_bytes)
      .Real(s.tree_cpu_percent)
      .Real(s.loader_cpu_percent)
      .Bytes(s.mem_available_bytes)
      .Bytes(s.swap_used_bytes)
      .Real(s.swap_in_pages_per_s)
      .Real(s.swap_out_pages_per_s)
      .Real(s.cpu_busy_percent)
      .Real(s.cpu_iowait_percent)
      .Real(s.disk_util_percent)
      .Real(s.disk_await_ms)
      .Real(s.disk_read_kib_per_s)
      .Real(s.steps_per_s)
      .Real(s.data_wait_fraction)
      .Optional(s.realtime_seconds)
      .Optional(s.net_rx_bytes_per_s)
      .Optional(s.net_tx_bytes_per_s);
  if (!sample.ok()) return Fail("cannot bind a sample");
  if (Status st = Step(insert_sample_.get(), "cannot write a sample"); !st.ok()) return st;

  // Each row of one table: bind it, step, and name the table's row on failure.
  auto insert_each = [&](sqlite3_stmt* statement, const auto& rows, std::string_view what,
                         auto bind_row) -> Status {
    for (const auto& row : rows) {
      Binder bind(statement);
      bind_row(bind, row);
      if (!bind.ok()) return Fail("cannot bind " + std::string(what));
      if (Status st = Step(statement, "cannot write " + std::string(what)); !st.ok()) return st;
    }
    return Status::Ok();
  };
  Status st = insert_each(insert_process_.get(), processes, "a process point",
                          [&](Binder& bind, const ProcessPoint& p) {
                            bind.Int(interval)
                                .Real(p.t)
                                .Int(p.pid)
                                .Int(p.ppid)
                                .Text(p.comm)
                                .Bytes(p.rss_bytes)
                                .Real(p.cpu_percent)
                                .Optional(p.run_delay_percent)
                                .Optional(p.read_kib_per_s)
                                .Optional(p.rchar_kib_per_s)
                                .Optional(p.write_kib_per_s)
                                .Optional(p.wchar_kib_per_s);
                          });
  if (!st.ok()) return st;
  st = insert_each(insert_step_.get(), steps, "a step", [&](Binder& bind, const StepEvent& e) {
    bind.Int(interval).Int(e.rank).Int(e.step).Real(e.t).Real(e.wait_seconds).Real(e.step_seconds);
  });
  if (!st.ok()) return st;
  st = insert_each(
      insert_step_sync_.get(), syncs, "a step's sync", [&](Binder& bind, const StepSync& e) {
        bind.Int(interval).Int(e.rank).Int(e.step).Real(e.sync_seconds).Real(e.cpu_seconds);
      });
  if (!st.ok()) return st;
  st = insert_each(insert_rank_.get(), ranks, "a rank", [&](Binder& bind, const RankInfo& r) {
    bind.Int(interval).Int(r.pid).Int(r.rank).Int(r.local_rank).Int(r.world_size).Text(r.hostname);
  });
  if (!st.ok()) return st;
  st = insert_each(insert_epoch_.get(), epochs, "an epoch", [&](Binder& bind, const EpochEvent& e) {
    bind.Int(interval).Int(e.rank).Int(e.epoch).Real(e.t);
  });
  if (!st.ok()) return st;
  st = insert_each(insert_loader_.get(), loaders, "a loader",
                   [&](Binder& bind, const LoaderConfig& l) {
                     bind.Int(interval)
                         .Int(l.rank)
                         .Int(l.pid)
                         .Int(l.batch_size)
                         .Int(l.num_workers)
                         .Bool(l.pin_memory)
                         .Int(l.prefetch_factor)
                         .Bool(l.persistent_workers)
                         .Int(l.dataset_length)
                         .Bool(l.gpu_available);
                   });
  if (!st.ok()) return st;
  return insert_each(insert_port_.get(), ports, "port counters",
                     [&](Binder& bind, const PortCounterPoint& p) {
                       bind.Int(interval)
                           .Real(p.t)
                           .Text(p.port)
                           .Bool(p.rdma)
                           .Bytes(p.packets)
                           .Bytes(p.rx_errors)
                           .Bytes(p.tx_errors)
                           .Bytes(p.rx_drops)
                           .Bytes(p.tx_drops)
                           .Bytes(p.symbol_errors)
                           .Bytes(p.link_downed)
                           .Bytes(p.rcv_errors);
                     });
}

Status RunWriter::AppendFindings(std::string_view source, std::span<const Finding> findings,
                                 std::span<const std::string> notes) {
  if (!db_) return Status::InvalidArgument(path_ + ": the run file is closed");
  if (findings.empty() && notes.empty()) return Status::Ok();
  sqlite3* db = db_.get();
  // The tables are made in the same transaction as their rows: a failure
  // leaves neither behind.
  if (Status begun = Step(begin_.get(), "cannot begin the findings"); !begun.ok()) return begun;
  // Prepared here rather than kept: called once, after the last interval.
  auto prepare = [&](const char* sql, Statement& out) {
    sqlite3_stmt* raw = nullptr;
    int rc = sqlite3_prepare_v2(db, sql, -1, &raw, nullptr);
    out.reset(raw);
    return rc == SQLITE_OK;
  };
  Statement insert_finding, insert_note;
  Status st = Status::Ok();
  if (sqlite3_exec(db, std::string(store::kCreateStoredFindings).c_str(), nullptr, nullptr,
                   nullptr) != SQLITE_OK) {
    st = Fail("cannot create the findings and notes tables");
  } else if (!prepare("INSERT INTO findings (source, id, layer, severity, summary, "
                      "evidence_json, next, impact_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                      insert_finding) ||
             !prepare("INSERT INTO notes (source, text) VALUES (?, ?)", insert_note)) {
    st = Fail("cannot prepare the findings inserts");
  }
  const std::string from(source);
  for (size_t i = 0; st.ok() && i < findings.size(); ++i) {
    const Finding& f = findings[i];
    const std::string layer(LayerName(f.layer)), severity(SeverityName(f.severity));
    const std::string evidence = store::EvidenceToJsonText(f.evidence);
    const std::string impact = f.impact ? store::ImpactToJsonText(*f.impact) : "";
    Binder bind(insert_finding.get());
    bind.Text(from).Text(f.id).Text(layer).Text(severity).Text(f.summary).Text(evidence).Text(
        f.next);
    if (f.impact) {
      bind.Text(impact);
    } else {
      bind.Null();
    }
    st = bind.ok() ? Step(insert_finding.get(), "cannot write a finding")
                   : Fail("cannot bind a finding");
  }
  for (size_t i = 0; st.ok() && i < notes.size(); ++i) {
    Binder bind(insert_note.get());
    bind.Text(from).Text(notes[i]);
    st = bind.ok() ? Step(insert_note.get(), "cannot write a note") : Fail("cannot bind a note");
  }
  if (st.ok()) st = Step(commit_.get(), "cannot commit the findings");
  if (!st.ok()) (void)Step(rollback_.get(), "cannot roll back the findings");
  return st;
}

Status RunWriter::AppendRows(std::string_view what, std::string_view create, const char* insert,
                             size_t rows, const std::function<bool(sqlite3_stmt*, size_t)>& bind) {
  if (!db_) return Status::InvalidArgument(path_ + ": the run file is closed");
  sqlite3* db = db_.get();
  const std::string name(what);
  if (Status begun = Step(begin_.get(), "cannot begin the " + name); !begun.ok()) return begun;
  Status st = Status::Ok();
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_exec(db, std::string(create).c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
    st = Fail("cannot create the table of the " + name);
  } else if (sqlite3_prepare_v2(db, insert, -1, &raw, nullptr) != SQLITE_OK) {
    st = Fail("cannot prepare the insert of the " + name);
  }
  Statement statement(raw);
  for (size_t i = 0; st.ok() && i < rows; ++i) {
    st = bind(statement.get(), i) ? Step(statement.get(), "cannot write the " + name)
                                  : Fail("cannot bind the " + name);
  }
  if (st.ok()) st = Step(commit_.get(), "cannot commit the " + name);
  if (!st.ok()) (void)Step(rollback_.get(), "cannot roll back the " + name);
  return st;
}

Status RunWriter::WriteNode(const NodeInfo& node) {
  return AppendRows(
      "node", store::kCreateNode,
      "INSERT OR REPLACE INTO node (id, node_rank, nnodes, procs_per_node, world_size, "
      "master_addr, master_port, launcher_job, source, start_realtime_seconds, "
      "clock_offset_seconds, clock_round_trip_seconds, net_interface) "
      "VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      1, [&](sqlite3_stmt* statement, size_t) {
        Binder bind(statement);
        return bind.Optional(node.node_rank)
            .Optional(node.nnodes)
            .Optional(node.procs_per_node)
            .Optional(node.world_size)
            .Text(node.master_addr)
            .Optional(node.master_port)
            .Text(node.launcher_job)
            .Text(node.source)
            .Real(node.start_realtime_seconds)
            .Optional(node.clock_offset_seconds)
            .Optional(node.clock_round_trip_seconds)
            .Text(node.net_interface)
            .ok();
      });
}

Status RunWriter::AppendMemoryPeaks(std::span<const MemoryPeak> peaks) {
  return AppendRows("memory peaks", store::kCreateMemoryPeaks,
                    "INSERT INTO memory_peaks (source, pid, bytes, detail) VALUES (?, ?, ?, ?)",
                    peaks.size(), [&](sqlite3_stmt* statement, size_t i) {
                      Binder bind(statement);
                      const MemoryPeak& p = peaks[i];
                      return bind.Text(p.source).Int(p.pid).Bytes(p.bytes).Text(p.detail).ok();
                    });
}

Status RunWriter::AppendRankStops(std::span<const RankStop> stops,
                                  std::span<const RankState> states) {
  Status st = AppendRows(
      "ranks' stops", store::kCreateRankStops,
      "INSERT INTO rank_stops (pid, rank, t_seconds, how, exit_code, signal, detail, source) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
      stops.size(), [&](sqlite3_stmt* statement, size_t i) {
        const RankStop& s = stops[i];
        Binder bind(statement);
        return bind.Int(s.pid)
            .Int(s.rank)
            .Real(s.t)
            .Text(s.how)
            .Optional(s.exit_code)
            .Optional(s.signal)
            .Text(s.detail)
            .Text(s.source)
            .ok();
      });
  if (!st.ok()) return st;
  return AppendRows(
      "ranks' states", store::kCreateRankStates,
      "INSERT INTO rank_states (t_seconds, reason, pid, rank, steps, last_step_seconds, "
      "collective_since_seconds, state, wchan, threads, cpu_seconds, frame, stack, "
      "stack_unchanged) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      states.size(), [&](sqlite3_stmt* statement, size_t i) {
        const RankState& r = states[i];
        Binder bind(statement);
        return bind.Real(r.t)
            .Text(r.reason)
            .Int(r.pid)
            .Int(r.rank)
            .Int(r.steps)
            .Optional(r.last_step_t)
            .Optional(r.collective_since_t)
            .Text(r.state)
            .Text(r.wchan)
            .Int(r.threads)
            .Optional(r.cpu_seconds)
            .Text(r.frame)
            .Text(r.stack)
            .Optional(r.stack_unchanged)
            .ok();
      });
}

Status RunWriter::AppendKernelEvents(std::span<const GpuXid> xids,
                                     std::span<const PortLogEvent> ports) {
  // Bound as SQLITE_STATIC: the texts must outlive the step.
  static const std::string kXid = "xid", kPort = "port", kNone;
  return AppendRows(
      "kernel events", store::kCreateKernelEvents,
      "INSERT INTO kernel_events (kind, t_seconds, device, xid, pid, process, message) "
      "VALUES (?, ?, ?, ?, ?, ?, ?)",
      xids.size() + ports.size(), [&](sqlite3_stmt* statement, size_t i) {
        Binder bind(statement);
        if (i < xids.size()) {
          const GpuXid& x = xids[i];
          return bind.Text(kXid)
              .Optional(x.monotonic_seconds)
              .Text(x.bus_id)
              .Int(x.xid)
              .Optional(x.pid)
              .Text(x.process)
              .Text(x.message)
              .ok();
        }
        const PortLogEvent& p = ports[i - xids.size()];
        return bind.Text(kPort)
            .Optional(p.monotonic_seconds)
            .Text(p.device)
            .Null()
            .Null()
            .Text(kNone)
            .Text(p.message)
            .ok();
      });
}

Status RunWriter::AppendInputs(std::span<const InputSeen> inputs) {
  return AppendRows(
      "inputs", store::kCreateInputs,
      "INSERT INTO inputs (path, role, deleted, readers, samples, first_t_seconds, "
      "last_t_seconds, size_bytes, max_position, fs_type, remote, device, format, archive, "
      "compressed, method) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      inputs.size(), [&](sqlite3_stmt* statement, size_t i) {
        const InputSeen& f = inputs[i];
        Binder bind(statement);
        return bind.Text(f.path)
            .Text(f.role)
            .Bool(f.deleted)
            .Int(f.readers)
            .Int(f.samples)
            .Real(f.first_t)
            .Real(f.last_t)
            .Bytes(f.size_bytes)
            .Bytes(f.max_position)
            .Text(f.fs_type)
            .Bool(f.remote)
            .Text(f.device)
            .Text(f.format)
            .Bool(f.archive)
            .Bool(f.compressed)
            .Text(f.method)
            .ok();
      });
}

Status RunWriter::AppendOtherProcesses(std::span<const OtherProcessPoint> points) {
  if (points.empty() || next_interval_ == 0) {
    return db_ ? Status::Ok() : Status::InvalidArgument(path_ + ": the run file is closed");
  }
  const int64_t interval = next_interval_ - 1;  // the interval just appended
  return AppendRows(
      "other processes", store::kCreateOtherProcesses,
      "INSERT INTO other_processes (interval, t_seconds, pid, comm, cpu_percent) "
      "VALUES (?, ?, ?, ?, ?)",
      points.size(), [&](sqlite3_stmt* statement, size_t i) {
        const OtherProcessPoint& p = points[i];
        Binder bind(statement);
        return bind.Int(interval).Real(p.t).Int(p.pid).Text(p.comm).Real(p.cpu_percent).ok();
      });
}

Status RunWriter::AppendBuckets(std::span<const BucketSync> buckets) {
  if (buckets.empty() || next_interval_ == 0) {
    return db_ ? Status::Ok() : Status::InvalidArgument(path_ + ": the run file is closed");
  }
  const int64_t interval = next_interval_ - 1;  // the interval just appended
  return AppendRows("bucket all-reduces", store::kCreateBucketSync,
                    "INSERT INTO bucket_sync (interval, rank, step, bucket, launch_seconds, "
                    "done_seconds) VALUES (?, ?, ?, ?, ?, ?)",
                    buckets.size(), [&](sqlite3_stmt* statement, size_t i) {
                      const BucketSync& b = buckets[i];
                      Binder bind(statement);
                      return bind.Int(interval)
                          .Int(b.rank)
                          .Int(b.step)
                          .Int(b.bucket)
                          .Real(b.launch_seconds)
                          .Real(b.done_seconds)
                          .ok();
                    });
}

Status RunWriter::AppendPhaseSpans(std::span<const PhaseSpan> spans) {
  return AppendRows(
      "checkpoints and evaluation loops", store::kCreatePhaseSpans,
      "INSERT INTO phase_spans (pid, rank, kind, start_seconds, end_seconds) VALUES "
      "(?, ?, ?, ?, ?)",
      spans.size(), [&](sqlite3_stmt* statement, size_t i) {
        const PhaseSpan& s = spans[i];
        Binder bind(statement);
        return bind.Int(s.pid).Int(s.rank).Text(s.kind).Real(s.start_t).Real(s.end_t).ok();
      });
}

Status RunWriter::AppendHostSyncs(std::span<const HostSync> syncs) {
  return AppendRows("host syncs", store::kCreateHostSyncs,
                    "INSERT INTO host_syncs (rank, step, seconds, calls) VALUES (?, ?, ?, ?)",
                    syncs.size(), [&](sqlite3_stmt* statement, size_t i) {
                      const HostSync& h = syncs[i];
                      Binder bind(statement);
                      return bind.Int(h.rank).Int(h.step).Real(h.seconds).Int(h.calls).ok();
                    });
}

Status RunWriter::AppendCongestion(std::span<const CongestionPoint> points) {
  if (points.empty() || next_interval_ == 0) {
    return db_ ? Status::Ok() : Status::InvalidArgument(path_ + ": the run file is closed");
  }
  const int64_t interval = next_interval_ - 1;  // the interval just appended
  return AppendRows(
      "congestion counters", store::kCreateCongestionCounters,
      "INSERT INTO congestion_counters (interval, t_seconds, port, rdma, pause_rx, pause_tx, "
      "ecn_marked, cnp_sent, cnp_handled, buffer_drops, allowance_exceeded, xmit_wait_ticks, "
      "xmit_words, has_pause, has_ecn_cnp, has_drops, has_xmit_wait) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      points.size(), [&](sqlite3_stmt* statement, size_t i) {
        const CongestionPoint& p = points[i];
        const NicCongestion& c = p.counters;
        Binder bind(statement);
        return bind.Int(interval)
            .Real(p.t)
            .Text(p.port)
            .Bool(p.rdma)
            .Bytes(c.pause_rx)
            .Bytes(c.pause_tx)
            .Bytes(c.ecn_marked)
            .Bytes(c.cnp_sent)
            .Bytes(c.cnp_handled)
            .Bytes(c.buffer_drops)
            .Bytes(c.allowance_exceeded)
            .Bytes(c.xmit_wait_ticks)
            .Bytes(c.xmit_words)
            .Bool(c.has_pause)
            .Bool(c.has_ecn_cnp)
            .Bool(c.has_drops)
            .Bool(c.has_xmit_wait)
            .ok();
      });
}

Status RunWriter::AppendBoundarySample(const BoundarySample& sample) {
  // One row per disk; a sample without disks still has its row.
  const size_t rows = std::max<size_t>(1, sample.disk_read_bytes.size());
  Status st = AppendRows(
      "boundary samples", store::kCreateBoundarySamples,
      "INSERT INTO boundary_samples (boundary, interval, t_seconds, epoch, processes, "
      "tree_rss_bytes, tree_cpu_seconds, tree_read_bytes, disk, disk_read_bytes) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      rows, [&](sqlite3_stmt* statement, size_t i) {
        Binder bind(statement);
        bind.Int(next_boundary_)
            .Int(next_interval_)
            .Real(sample.t)
            .Optional(sample.epoch)
            .Int(sample.processes)
            .Bytes(sample.tree_rss_bytes)
            .Real(sample.tree_cpu_seconds)
            .Optional(sample.tree_read_bytes);
        if (i < sample.disk_read_bytes.size()) {
          bind.Text(sample.disk_read_bytes[i].first).Bytes(sample.disk_read_bytes[i].second);
        } else {
          static const std::string kNoDisk;
          bind.Text(kNoDisk).Null();
        }
        return bind.ok();
      });
  if (st.ok()) ++next_boundary_;
  return st;
}

Status RunWriter::AppendAllocations(std::span<const AllocationReport> reports) {
  if (reports.empty() || next_interval_ == 0) {
    return db_ ? Status::Ok() : Status::InvalidArgument(path_ + ": the run file is closed");
  }
  const int64_t interval = next_interval_ - 1;  // the interval just appended
  return AppendRows("allocation reports", store::kCreateAllocations,
                    "INSERT INTO allocations (interval, t_seconds, rank, pid, kind, bytes, count, "
                    "grew_bytes, location, text) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    reports.size(), [&](sqlite3_stmt* statement, size_t i) {
                      const AllocationReport& a = reports[i];
                      Binder bind(statement);
                      return bind.Int(interval)
                          .Real(a.t)
                          .Int(a.rank)
                          .Int(a.pid)
                          .Text(a.kind)
                          .Int(a.bytes)
                          .Int(a.count)
                          .Int(a.grew_bytes)
                          .Text(a.where)
                          .Text(a.text)
                          .ok();
                    });
}

}  // namespace stallscope
