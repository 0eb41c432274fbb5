#include "store/run_schema.h"

#include <sqlite3.h>

#include <string>

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
