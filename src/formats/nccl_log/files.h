// NCCL log files read for `doctor --nccl-log`, `run --nccl-log` and the
// files a job run under `stallscope run` wrote to NCCL_DEBUG_FILE; and this
// host's name and Active RDMA ports as NCCL's log lines name them (shared
// with `nccl-log`). Touches only the files named and /sys/class/infiniband
// under the root; thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/file.h"
#include "core/status.h"
#include "sample/nccl_log.h"

namespace stallscope {

// The host name cut at the first '.', as NCCL prints it.
std::string ShortHostname(const Root& root);

// This host's Active RDMA ports, or nullopt with a note saying why unknown.
std::optional<HostRdmaPorts> ReadHostRdma(const Root& root, std::vector<std::string>& notes);

// One log read in one streaming pass; errors name `flag` and the file
// ("--nccl-log x.log: cannot open x.log: No such file or directory").
Result<NcclLogFile> ReadNcclLogFile(const std::string& path, std::string_view flag);

// NCCL_DEBUG_FILE as a glob: %h becomes `hostname` (as NCCL expands it),
// %p any pid (the job's processes have pids this side does not know), and
// the rest is matched literally.
std::string NcclDebugFileGlob(std::string_view pattern, std::string_view hostname);

// What a file matching NCCL_DEBUG_FILE was before the job started, so that
// afterwards the job's own files are told from an older run's by what
// changed, not by clock stamps (a file made in the same clock tick as the
// run's start has the same time).
struct DebugFileState {
  std::string path;
  uint64_t inode = 0;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
};

// The regular files matching NcclDebugFileGlob(pattern, hostname) now, by name.
std::vector<DebugFileState> ListNcclDebugFiles(std::string_view pattern, std::string_view hostname);

// The files of `after` the job wrote: new since `before`, replaced (another
// inode at the path), truncated or grown, or modified (another mtime).
// Pure; by name.
std::vector<std::string> DebugFilesWritten(const std::vector<DebugFileState>& before,
                                           const std::vector<DebugFileState>& after);

}  // namespace stallscope
