// Reading a run file back (schema in store/run_file.h). Each call opens its
// own read-only connection: thread-safe, and safe while a writer in another
// process is appending.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "sample/finding.h"
#include "sample/timeline.h"
#include "store/run_file.h"

namespace stallscope {

// The whole run, in the order it was written. A file that is missing, is not
// SQLite, or is not a stallscope.timeline/1 run file is an error naming the
// path. A run whose writer was killed reads as every interval it committed;
// a writer killed before WriteRunInfo leaves `info` at its defaults.
Result<Timeline> ReadRun(const std::string& path);

// The baseline snapshot JSON as WriteBaseline stored it; NotFound when the
// run has none.
Result<std::string> ReadBaseline(const std::string& path);

// The findings and notes AppendFindings stored, in the order written; none
// for a run without them. A row that does not decode is an error naming the
// file and the row.
using StoredFindings = FindingsWithNotes;
Result<StoredFindings> ReadStoredFindings(const std::string& path);

}  // namespace stallscope
