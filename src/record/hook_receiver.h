// The receiving end of the Python hook (docs/hook-protocol.md): a Unix
// datagram socket in a private temporary directory, and the pure parser of
// its datagrams.
//
// HookReceiver owns the socket and its directory
// ($TMPDIR/stallscope-PID-XXXXXX) and removes both when destroyed; those a
// killed run left are removed by the next one (record/stale_sockets.h). Drain() reads every waiting
// datagram without blocking and turns them into timeline events, with times made relative to the
// run's start. Not thread-safe; one owner (the recorder loop).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "sample/timeline.h"

namespace stallscope {

struct HookEvents {
  std::vector<StepEvent> steps;
  std::vector<EpochEvent> epochs;
  std::vector<LoaderConfig> loaders;
  std::set<int> pids;                         // processes that said hello (the ranks)
  std::vector<RankInfo> ranks;                // their hello records, as they came
  std::vector<StepSync> syncs;                // stallscope.ddp(model): per step
  std::vector<BucketSync> buckets;            // stallscope.ddp(model): per bucket
  std::vector<PhaseSpan> spans;               // checkpoints and evaluation loops
  std::vector<HostSync> host_syncs;           // steps that waited for the GPU (CUDA)
  std::vector<AllocationReport> allocations;  // alloc_site / alloc_holder / alloc_note
  std::vector<RankStop> stops;  // bye / exception (hook), exit / sent_signal (launcher)
  std::string script;           // the first `script` record's: what the job runs
  int64_t dropped = 0;          // datagrams the hook reported it could not send
  int64_t malformed = 0;        // lines we could not read
};

// Parses one datagram into `into`. start_ns is the run's start on the
// monotonic clock; event times become seconds since then. Unknown record
// types are skipped (newer hooks); malformed lines are counted.
void ParseHookDatagram(std::string_view datagram, int64_t start_ns, HookEvents& into);

class HookReceiver {
 public:
  static Result<HookReceiver> Create();
  // Binds DIRECTORY/hook.sock in a folder the caller made (`watch
  // --hook-dir`: a place the job's environment names in advance). The
  // folder is the receiver's from then on: removed, with the socket and the
  // step rings, when it is destroyed (a folder that still holds other
  // files stays).
  static Result<HookReceiver> CreateIn(const std::string& directory);
  HookReceiver(HookReceiver&& other) noexcept;
  HookReceiver& operator=(HookReceiver&& other) noexcept;
  HookReceiver(const HookReceiver&) = delete;
  HookReceiver& operator=(const HookReceiver&) = delete;
  ~HookReceiver();

  const std::string& socket_path() const { return socket_path_; }
  // The folder of the socket, where the hook keeps its step rings
  // (record/rank_watch.h).
  const std::string& directory() const { return directory_; }
  int fd() const { return fd_; }
  // Reads every waiting datagram (never blocks).
  void Drain(int64_t start_ns, HookEvents& into);

 private:
  HookReceiver() = default;
  int fd_ = -1;
  std::string directory_;
  std::string socket_path_;
};

}  // namespace stallscope
