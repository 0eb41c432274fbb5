// The size and first bytes of a file on a remote mount, asked from child
// processes that the sampling loop never waits for.
//
// `run`, `watch` and the exporter look at the files a job has open (probe/
// open_files.h): a stat and a read of the first bytes of each new one. On a
// remote mount whose server went away either call waits in the kernel for
// good (core/child_call.h), which would stop the sampling loop, or the
// exporter, with it. So for a file on a remote mount the sampler asks a
// RemoteFileProber, which starts a child process for the calls and answers
// from what the child sent on a later sample; until then the file is
// recorded without its size and format. A child that makes no progress for
// RemoteCallDeadlineSeconds() is given up: the mount is then dead for this
// prober (no more children for it), and one note names the mount and the
// call that did not answer.
//
// At most kMaxRemoteProbeChildren children live at a time, those given up
// included until they end (a child stuck in the kernel never does while the
// server stays away): a dead mount costs a fixed few processes, never one
// per sample. Asked while all are busy, the prober answers nothing, and the
// file is asked again on a later sample. Not thread-safe (one per sampler).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/child_call.h"
#include "probe/mounts.h"

namespace stallscope {

// Children alive at a time per prober (one per recording, one in the
// exporter): a few files asked at once keep a live mount's new files
// coming, and a dead mount holds at most this many stuck processes.
inline constexpr size_t kMaxRemoteProbeChildren = 4;

struct RemoteFileFacts {
  bool regular = false;
  uint64_t size = 0;
  uint64_t dev = 0, ino = 0;
  std::string head;  // the first kInputFormatHeadBytes
};

class RemoteFileProber {
 public:
  explicit RemoteFileProber(double idle_deadline_seconds,
                            size_t max_children = kMaxRemoteProbeChildren)
      : deadline_(idle_deadline_seconds), max_children_(max_children) {}
  // What a child found of `file` (the path to open, /proc/PID/fd/N on a live
  // root) named `shown` in notes, on `mount`; nullopt while a child is on it,
  // when the mount is dead or when every child is busy. Never blocks.
  std::optional<RemoteFileFacts> Facts(const std::string& file, const std::string& shown,
                                       const MountEntry& mount);
  // Collects the children's answers and reaps the given-up ones that ended.
  void Poll();
  // The notes given since the last call (one per dead mount).
  std::vector<std::string> TakeNotes();
  // Children alive now, given-up ones included.
  size_t children() const { return running_.size() + abandoned_.size(); }

 private:
  struct Running {
    ChildCall call;
    std::string mount_point;
    std::string mount_text;
  };
  double deadline_;
  size_t max_children_;
  std::map<std::string, Running> running_;           // by file
  std::map<std::string, RemoteFileFacts> answered_;  // by file, taken once
  std::vector<ChildCall> abandoned_;                 // given up, not yet ended
  std::set<std::string> dead_mounts_;
  std::vector<std::string> notes_;
};

}  // namespace stallscope
