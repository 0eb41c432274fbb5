// Reading PyTorch Flight Recorder dumps (NCCL backend) where a job wrote
// them: the pickle torch writes by default (TORCH_NCCL_DEBUG_INFO_TEMP_FILE,
// one file a rank, named PREFIX<rank>) or the JSON form (dump_json), into
// FlightRecorderDump (sample/flight_recorder.h). The pickle is read by
// pickle.h, which builds builtin values only and runs
// nothing; the JSON by json.h.
//
// Formats 2.0 to 2.10 are read (the versions torch's writer had when this was
// written; a newer minor adds fields and is read with a note). What each
// added: collective_seq_id and p2p_seq_id instead of seq_id (2.2), pg_status
// (2.3), thread_id/thread_name (2.8), comm_lib_version instead of
// nccl_version (2.10). A missing field takes the value the older writer
// implied; a field of the wrong type, a version of another major, or a dump
// without "version" is an error naming the file. Reading one dump visits at
// most kFrMaxValuesRead values (a memo can make one value appear many times).
//
// ParseFlightRecorderDump is pure (bytes in); ReadFlightRecorderDumps reads
// files. Thread-compatible.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "sample/flight_recorder.h"

namespace stallscope {

inline constexpr int kFrMajorVersion = 2;
inline constexpr int kFrNewestMinorKnown = 10;
// A dump of 2,000 entries with 64-frame stacks is under 20 MiB.
inline constexpr size_t kFrMaxDumpBytes = size_t{64} << 20;
inline constexpr size_t kFrMaxValuesRead = size_t{16} << 20;

// One rank's dump from its bytes: JSON when the first byte that is not blank
// is '{', else a pickle. `rank` comes from the caller (the file name).
Result<FlightRecorderDump> ParseFlightRecorderDump(std::string_view bytes, std::string_view source,
                                                   int64_t rank);

// The rank a file name gives: its last digits, as fr_trace reads them
// ("nccl_trace_rank_12" -> 12, "_dump_3" -> 3); nullopt without digits.
std::optional<int64_t> RankFromFileName(std::string_view name);

struct FlightRecorderDumps {
  std::vector<FlightRecorderDump> dumps;  // by rank
  std::vector<std::string> notes;         // files skipped, versions that differ
};

// Reads the dumps among `paths`: a file is one dump; a folder's files whose
// names end in digits, in it and below it, are dumps (others, such as logs,
// are passed over). Errors: a path that cannot be read, a dump that does not
// parse (file and byte offset), two dumps of one rank, no dump at all.
Result<FlightRecorderDumps> ReadFlightRecorderDumps(const std::vector<std::string>& paths);

}  // namespace stallscope
