#include "store/run_schema.h"

#include <sqlite3.h>

#include <string>

#include "core/text.h"
#include "store/run_file.h"

namespace stallscope {

namespace {

// N of "stallscope.timeline/N"; nullopt for another schema's name.
std::optional<int64_t> TimelineNumber(std::string_view schema) {
  constexpr std::string_view kFamily = "stallscope.timeline/";
  if (!schema.starts_with(kFamily)) return std::nullopt;
  return ParseInt(schema.substr(kFamily.size()));
}

}  // namespace

Status CheckRunFileSchema(std::string_view path, std::string_view schema, int64_t version) {
  if (schema == kTimelineSchema && version == kTimelineSchemaVersion) return Status::Ok();
  const std::string found = std::string(schema) + " (user_version " + std::to_string(version) + ")";
  const std::string ours = std::string(kTimelineSchema) + " (user_version " +
                           std::to_string(kTimelineSchemaVersion) + ")";
  std::optional<int64_t> number = TimelineNumber(schema);
  if (number && (*number > *TimelineNumber(kTimelineSchema) || version > kTimelineSchemaVersion)) {
    return Status::ParseError(path, 0,
                              "written by a newer stallscope: schema " + found +
                                  "; this stallscope reads " + ours +
                                  ". Read it with the stallscope that wrote it, or a newer one");
  }
  return Status::ParseError(
      path, 0, "schema " + found + " is not " + ours + ", the one this stallscope reads");
}

}  // namespace stallscope

namespace stallscope::store {

Status SqliteError(std::string_view path, sqlite3* db, std::string_view what) {
  std::string context(path);
  context += ": ";
  context += what;
  if (db == nullptr) return Status::Unavailable(context + ": out of memory");
  int code = sqlite3_errcode(db);
  if ((code & 0xff) == SQLITE_NOTADB) {
    return Status::ParseError(path, 0, "not a SQLite database (not a stallscope run file)");
  }
  context += ": ";
  context += sqlite3_errmsg(db);

  // The errno is only meaningful when the OS refused something; after other
  // errors it may be left over from a failure SQLite handled itself.
  bool os_error = (code & 0xff) == SQLITE_CANTOPEN || (code & 0xff) == SQLITE_IOERR ||
                  (code & 0xff) == SQLITE_FULL;
  int err = os_error ? sqlite3_system_errno(db) : 0;
  if (err != 0) return Status::FromErrno(context, err);
  return Status::Unavailable(context);
}

}  // namespace stallscope::store
