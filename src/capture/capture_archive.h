// A capture file: one node's evidence as a gzip-compressed tar archive
// (docs/captures.md). `manifest.json` first (schema stallscope.capture/1:
// the stallscope version, host, kernel, time, the sampling interval, what
// was captured and what was left out), then two trees of the files the
// probes read, laid out as under a probe root: `before/` (the first sample
// of every rate) and `node/` (everything else, and the second sample).
//
// Reading is strict about what could hurt the reader and lenient about what
// a newer stallscope may add: an entry that is not a file, directory or
// relative symbolic link inside its tree, a name with "..", an entry or a
// whole over the size limits, a truncated or corrupt archive are errors
// naming the file and the entry; a newer format or unknown top-level
// entries become notes. ParseCaptureArchive is pure (and fuzzed); the rest
// touches files. Thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace stallscope {

inline constexpr const char* kCaptureFormat = "stallscope.capture/1";
inline constexpr int kCaptureFormatVersion = 1;

// Limits a reader holds a capture to (a node's evidence is a few MiB).
inline constexpr uint64_t kCaptureMaxFileBytes = 256ull << 20;   // the archive
inline constexpr uint64_t kCaptureMaxEntryBytes = 8ull << 20;    // as core/file.h's ReadFile
inline constexpr uint64_t kCaptureMaxTotalBytes = 512ull << 20;  // unpacked
inline constexpr size_t kCaptureMaxEntries = 200000;

struct CaptureManifest {
  std::string format = kCaptureFormat;
  std::string stallscope_version;
  std::string host;
  std::string kernel;
  std::string time_utc;
  double interval_seconds = 0;
  double before_monotonic_seconds = 0;
  double after_monotonic_seconds = 0;
  std::vector<std::string> captured;      // what it holds, in words
  std::vector<std::string> not_captured;  // what a capture cannot hold
  std::vector<std::string> redacted;      // what was left out on purpose
  std::vector<std::string> node_notes;    // the node's snapshot's notes
};

struct CaptureEntry {
  enum class Kind { kFile, kDirectory, kLink };
  std::string path;  // "node/proc/meminfo"
  Kind kind = Kind::kFile;
  std::string data;  // a file's bytes, a link's target
};

struct CaptureContents {
  CaptureManifest manifest;
  std::vector<CaptureEntry> entries;  // the trees' entries, in archive order
  std::vector<std::string> notes;     // a newer format, entries not known
};

std::string ManifestToJson(const CaptureManifest& manifest);

// The archive's bytes (manifest first, then `entries` as given).
Result<std::string> BuildCaptureArchive(const CaptureManifest& manifest,
                                        const std::vector<CaptureEntry>& entries);

// `bytes` read from the file `source`; errors name it and the entry.
Result<CaptureContents> ParseCaptureArchive(std::string_view bytes, std::string_view source);

// The same, of the tar inside (exposed for ParseCaptureArchive's callers
// that hold an uncompressed tar).
Result<CaptureContents> ParseCaptureTar(std::string_view bytes, std::string_view source);

// The file at `path`, read and parsed (NotFound, too large: errors name it).
Result<CaptureContents> ReadCaptureFile(const std::string& path);

// Writes the trees' entries under `dir` (which exists and is empty): never
// through a symbolic link, never outside `dir`.
Status ExtractCapture(const CaptureContents& contents, const std::string& dir,
                      std::string_view source);

}  // namespace stallscope
