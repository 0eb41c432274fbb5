// The run file's gpu_samples table: one row per GPU per interval, written by
// RunWriter::AppendGpuSamples (store/gpu_samples.cc) and read back into
// Timeline::gpus. The table is created with the first GPU rows, so a run on
// a host without GPUs has none; readers treat a missing table as no rows.
// Columns are documented in docs/timeline-schema.md. Internal to store/.
#pragma once

#include <string>

#include "core/status.h"
#include "sample/timeline.h"

struct sqlite3;

namespace stallscope::store {

// Reads every gpu_samples row (none when the table is absent) into
// timeline.gpus, in the order written, on a connection already open.
Status ReadGpuSamples(sqlite3* db, const std::string& path, Timeline& timeline);

// "4242:1000000000,4343:500000000" and back; bad entries are skipped.
std::string FormatGpuProcesses(const std::vector<GpuProcess>& processes);
std::vector<GpuProcess> ParseGpuProcesses(const std::string& text);

}  // namespace stallscope::store
