// The run file: one SQLite database per `stallscope run` / `watch`, holding
// the run's facts, its baseline snapshot and its timeline (sample/timeline.h).
// Schema "stallscope.timeline/1", documented table by table in
// docs/timeline-schema.md, so anyone can query a run with `sqlite3 RUN.db`.
//
// This header holds what writer and readers share (the schema's name and
// number); store/run_writer.h writes a run file, store/run_reader.h reads
// one back.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/status.h"

namespace stallscope {

// meta.schema of every run file this code writes and the only one it reads;
// PRAGMA user_version carries its number.
inline constexpr std::string_view kTimelineSchema = "stallscope.timeline/1";
inline constexpr int kTimelineSchemaVersion = 1;

// Whether this stallscope reads the run file at `path` whose meta.schema is
// `schema` and PRAGMA user_version `version`: OK for its own; for a file of
// a newer stallscope (a higher number in either) an error that says so and
// names the path and both schemas; for anything else, an error naming what
// the file holds. Every reader of run files (report, diff, history) calls it
// (store/run_schema.cc; pure).
Status CheckRunFileSchema(std::string_view path, std::string_view schema, int64_t version);

}  // namespace stallscope
