// HostSampler: the host's moving counters (a HostSample of sample/snapshot.h)
// every interval, for `run` and `watch`, from files kept open between samples.
//
// The same files, parsers and contract as TakeHostSample (probe/snapshot.h):
// meminfo, vmstat and /proc/stat are required and their errors fail the
// sample; diskstats, net/dev and PSI degrade to notes. What differs is the
// cost: each file is opened once (O_CLOEXEC) and re-read from offset 0 with
// pread() on every later sample, into buffers that stop growing after the
// first sample. A file that does not exist (ENOENT: no PSI, no diskstats in a
// fixture) is not looked for again; other failures are retried on the next
// sample. Owns its descriptors (closed on destruction); movable;
// thread-compatible (one sample at a time).
#pragma once

#include <string>
#include <vector>

#include "core/file.h"
#include "core/status.h"
#include "probe/proc_file.h"
#include "sample/snapshot.h"

namespace stallscope {

class HostSampler {
 public:
  explicit HostSampler(const Root& root);

  // One moment of the counters; optional sources add notes on failure
  // (notes may be null).
  Result<HostSample> Sample(std::vector<std::string>* notes);

  // Descriptors held now (for tests and the benchmark).
  int open_files() const;

 private:
  // One file under the root: its path (for errors) and its descriptor.
  struct Source {
    std::string path;
    ReadUntil until = ReadUntil::kShortRead;
    ProcFile file;
    bool absent = false;  // ENOENT once: not looked for again
  };
  // 0 or errno; the text lands in buffer_.
  int Read(Source& source);

  Source meminfo_, vmstat_, stat_, diskstats_, net_dev_;
  Source pressure_[4];  // cpu, memory, io, irq
  FileBuffer buffer_;
};

}  // namespace stallscope
