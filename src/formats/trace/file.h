// Reading PyTorch profiler traces: one rank's Chrome-trace JSON, as Kineto
// writes it (`{"traceEvents": [...], "deviceProperties": [...],
// "distributedInfo": {...}}`, often gzipped) or as the legacy autograd
// profiler does (a bare list of events with `"pid": "CPU functions"`).
//
// The text is read once through RapidJSON's SAX reader (recursive, nesting
// stopped at 1,000 levels as Python's json.load stops it): whole in memory
// when it fits a bound (inflated by libdeflate), else streamed in 1 MiB
// blocks (inflated by zlib, several gzip members allowed);
// formats/trace/text.h says which. Memory beyond that text is the events kept
// (sample/trace.h says which, 48 bytes each) plus the names, each once.
// Numbers are read as text and converted with from_chars, so a time reads exactly as Python's
// float() reads it.
//
// Errors name the file and the byte offset (of the JSON text, and of the
// compressed file for gzip errors); an event missing a field is counted in
// `skipped_events`, never fatal. Thread-compatible: one call, one file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "sample/trace.h"

namespace stallscope {

// Which of HTA's rows are kept: those the analyses read (sample/trace.h says
// which), or every one (the trace diff counts every CPU op by name).
enum class TraceRows : uint8_t { kAnalysed, kEvery };

// How a trace is read: which rows, and how much text may be held whole.
struct TraceReading {
  TraceRows rows = TraceRows::kAnalysed;
  // The most bytes held whole at once (formats/trace/text.h): default a
  // quarter of MemAvailable, under 4 GiB; 0 streams every file.
  std::optional<uint64_t> whole_text_limit_bytes;
  // The threads that read a text held whole, a part each: at most this many
  // (nullopt: one a CPU this process may run on, at most
  // kMaxTraceParseThreads), each part of
  // `min_part_bytes` of text or more. A streamed text is read by one.
  std::optional<size_t> parse_threads;
  size_t min_part_bytes = size_t{4} << 20;
};

// The most threads a text is read by, unless TraceReading names more.
inline constexpr size_t kMaxTraceParseThreads = 8;

// A reader's threads: `asked` (--threads), else UsableCpus() (core/threads.h).
size_t TraceThreads(size_t asked);

// The parse threads each of `readers` files read at once gets of `budget`
// threads: 1 to kMaxTraceParseThreads.
size_t ParseThreadsEach(size_t budget, size_t readers);

// Reads the trace at `path` (JSON or gzip'd JSON).
Result<TraceFile> ReadTraceFile(const std::string& path, TraceRows rows = TraceRows::kAnalysed);
Result<TraceFile> ReadTraceFile(const std::string& path, const TraceReading& how);

// The same over bytes in memory (gzip'd or not); `source` names them in
// errors. For tests and the fuzzer.
Result<TraceFile> ParseTraceBytes(std::string_view bytes, std::string_view source,
                                  TraceRows rows = TraceRows::kAnalysed);
Result<TraceFile> ParseTraceBytes(std::string_view bytes, std::string_view source,
                                  const TraceReading& how);

// The trace files PATH names: PATH itself when it is a file, else the
// `*.json` and `*.gz` files directly in the directory (not recursive, as HTA
// reads a trace directory), sorted by name. Empty directory: an error.
Result<std::vector<std::string>> TraceFilesIn(const std::string& path);

}  // namespace stallscope
