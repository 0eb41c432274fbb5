// The input files a process has open, from /proc/PID/fd and /proc/PID/fdinfo:
// regular files open read-only (sockets, pipes, devices, /proc and files
// open for writing, a job's logs and checkpoints, are left out), each with
// how far it has been read, its size, the file system and device holding it
// in the process's own mount namespace (a container's), and what its first
// bytes say it is (sample/input_format.h).
//
// Files a loader opens and closes between two samples are not seen one by
// one; the caller aggregates what samples catch (issue 17: a folder of small
// files shows as its directory). On a live root the file is stat'ed and its
// head read through /proc/PID/fd/N, which reaches it across mount
// namespaces; on a fixture root through the link's target under the root.
// ParseFdinfo is pure (fuzzed). ReadOpenInputs is thread-safe given its
// own cache; OpenInputSampler is not (one per recording).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/file.h"
#include "core/status.h"
#include "probe/remote_file_facts.h"
#include "sample/input_format.h"

namespace stallscope {

struct Fdinfo {
  uint64_t pos = 0;
  uint32_t flags = 0;  // open(2) flags, from the file's octal "flags:"
};
// "pos:\t123\nflags:\t0100000\n..." ParseError naming `source` when pos or
// flags is missing or not a number.
Result<Fdinfo> ParseFdinfo(std::string_view text, std::string_view source);

struct OpenInputs {
  std::vector<OpenInput> files;  // by fd
  uint64_t skipped = 0;          // descriptors of other kinds, or open for writing
  uint64_t vanished = 0;         // closed between the listing and the read
  uint64_t capped = 0;           // past max_files
};

// What does not change while a file stays the same file: its mount, device
// and format, by (st_dev, st_ino, size). A sampler keeps one across samples
// so that a file seen before costs a readlink, an fdinfo read and a stat,
// not the process's mountinfo, sysfs and the file's head. Bounded: past
// max_entries it is cleared and fills again.
struct OpenInputCache {
  struct Facts {
    std::string fs_type;
    bool remote = false;
    uint32_t major = 0, minor = 0;
    std::string device;
    InputFormat format;
  };
  std::map<std::tuple<uint64_t, uint64_t, uint64_t>, Facts> facts;
  // A descriptor seen before, open read-only, with the same link text is
  // the same open file: its facts stand without a stat (the offset is read
  // anew from fdinfo; the size is as last read). `input` is empty for one
  // that was left out (a directory, a FIFO). Keyed by (pid, fd): a reused
  // pid whose descriptor names the same path read-only is that path.
  struct Seen {
    std::string target;
    std::optional<OpenInput> input;
  };
  std::map<std::pair<int32_t, int>, Seen> by_fd;
  // Files on a remote mount are stat'ed and read by its children, never
  // here (probe/remote_file_facts.h); without one they are recorded with
  // what /proc says (path, offset, mount), no size or format.
  std::unique_ptr<RemoteFileProber> remote_files;
  size_t max_entries = 4096;
  uint64_t hits = 0, misses = 0, fd_hits = 0;
};

// Which processes' descriptors a sample reads: of the pids that ran since
// the last sample, at most max_per_sample, those read longest ago first, so
// that in a large busy tree each is read every few samples and the cost of
// a sample stays bounded. Keeps the cache of ReadOpenInputs. Not
// thread-safe (one per recording).
class OpenInputSampler {
 public:
  explicit OpenInputSampler(Root root, size_t max_per_sample = 8);
  // The open inputs of the chosen pids, each with its pid. `ran` is the
  // pids that ran since the last call (all of them on the first).
  std::vector<OpenInput> Sample(const std::vector<int32_t>& ran);
  const OpenInputCache& cache() const { return cache_; }
  // The notes of remote mounts given up since the last call (one each).
  std::vector<std::string> TakeNotes() { return cache_.remote_files->TakeNotes(); }
  // The children asking remote mounts, alive now (kMaxRemoteProbeChildren at most).
  size_t remote_children() const { return cache_.remote_files->children(); }

 private:
  Root root_;
  size_t max_per_sample_;
  int64_t samples_ = 0;
  std::map<int32_t, int64_t> last_read_;  // pid -> the sample that read it
  OpenInputCache cache_;
};

// The open input files of `pid` under `root`. NotFound("pid N") when the
// process is gone; a descriptor that closes meanwhile is counted, not an
// error. `cache` may be null.
Result<OpenInputs> ReadOpenInputs(const Root& root, int32_t pid, OpenInputCache* cache = nullptr,
                                  size_t max_files = 256);

}  // namespace stallscope
