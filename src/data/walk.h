// A parallel walk of a directory tree: what `stallscope dataset` (and any
// other census of a dataset folder) is built on.
//
// A pool of threads shares one stack of directories still to read. A worker
// takes a directory, reads it with getdents64 into its own buffer, classifies
// each entry by d_type (fstatat only for regular files, for their size, and
// for entries whose d_type the file system does not fill in), hands the
// entries to its own WalkVisitor and pushes the subdirectories back. There is
// no recursion, so depth is limited by nothing but memory; a directory whose
// path is longer than PATH_MAX is opened component by component. Symbolic
// links are reported, never followed; a directory that cannot be opened or
// read is reported to the visitor and the walk goes on. Mount points below
// the root are crossed, as find does by default.
//
// Each worker calls only its own visitor, so visitors need no locks; the
// caller merges them after Walk returns. Walk itself is thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "core/status.h"

namespace stallscope {

enum class EntryKind { kFile, kDirectory, kSymlink, kOther };

// What the walk's fstatat saw of a regular file.
struct FileFacts {
  uint64_t size = 0;
  int64_t mtime_ns = 0;  // st_mtim in nanoseconds since the epoch
};

// Receives what one worker saw. `dir` is the path of the directory holding
// the entry (the root as given, then "root/a/b"); depth is 1 for the root's
// own entries.
class WalkVisitor {
 public:
  virtual ~WalkVisitor() = default;
  virtual void File(std::string_view dir, std::string_view name, int depth,
                    const FileFacts& file) = 0;
  // A directory below the root (the root itself is not reported). Returns
  // whether to descend into it (pack leaves out hidden folders and its
  // output folder).
  virtual bool Directory(std::string_view dir, std::string_view name, int depth) = 0;
  // Symbolic links, sockets, fifos, devices: counted, not followed.
  virtual void NotFollowed(std::string_view dir, std::string_view name, int depth,
                           EntryKind kind) = 0;
  // A directory that could not be opened or read, or an entry that could not
  // be stat'ed (errno `err`); the walk goes on without it.
  virtual void Unreadable(std::string_view path, int err) = 0;
};

// Walks the directory `root` with one thread per visitor. Fails only when
// the root itself cannot be opened as a directory (the error names it).
Status Walk(const std::string& root, std::span<WalkVisitor* const> visitors);

// dir + "/" + name, with no second '/' when dir already ends in one.
std::string JoinPath(std::string_view dir, std::string_view name);

// The threads a walk uses by default: enough to keep several directory reads
// in flight on a network file system, not so many that a warm local walk
// spends its time on locks.
int DefaultWalkThreads();

// One entry of a getdents64 buffer.
struct DirentRecord {
  std::string_view name;
  unsigned char type = 0;  // DT_REG, DT_DIR, DT_LNK, DT_UNKNOWN, ...
};

// Splits a getdents64 buffer (struct linux_dirent64 records) into entries,
// calling `on_entry(record)` for each, "." and ".." included. Pure and
// bounds-checked: a record whose length is shorter than its header, runs past
// the buffer or has an unterminated name ends the parse with an error.
template <typename F>
Status ParseDirents(std::span<const char> buffer, F&& on_entry);

// Non-template core of ParseDirents: the record at `offset`; its length in
// `*record_length`. Exposed for the template above and the fuzz target.
Status ParseDirentAt(std::span<const char> buffer, size_t offset, DirentRecord* record,
                     size_t* record_length);

template <typename F>
Status ParseDirents(std::span<const char> buffer, F&& on_entry) {
  size_t offset = 0;
  while (offset < buffer.size()) {
    DirentRecord record;
    size_t length = 0;
    Status status = ParseDirentAt(buffer, offset, &record, &length);
    if (!status.ok()) return status;
    on_entry(record);
    offset += length;
  }
  return Status::Ok();
}

}  // namespace stallscope
