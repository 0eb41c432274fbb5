// ProcessTreeSampler: the process tree of a running job, sampled every
// interval by `run` and `watch`. It gives what ReadProcessTree
// (probe/process_tree.h) gives, for a fraction of the CPU, by remembering
// what it learnt in earlier samples:
//
// - Discovery. A pid's stat is read once, when it first appears, for its
//   parent and start time. Which pids are new: the first sample and every
//   slow sample list all of /proc; the others read the last pid handed out
//   (/proc/loadavg) and list only the /proc entries above the previous one
//   (seeking the directory to them), so a sample where no process was
//   created lists nothing. A new process whose parent is a member is a
//   member, so DataLoader workers and torchrun children that started since
//   the last sample appear in this one. A pid whose /proc entry changed inode
//   since the last full listing, or that comes back in a range of new pids,
//   is read again: a different start time makes it a new process (the pid
//   was reused). Only the kernel's procfs in this process's own pid
//   namespace is listed by ranges; elsewhere (a fixture root) every sample
//   lists all of /proc. A process created with an explicitly chosen pid
//   (clone3 set_tid, CRIU) is found by the next full listing.
// - Membership is sticky: a member whose parent exits is reparented by the
//   kernel (to init or a subreaper outside the tree) and stays a member
//   until it exits. It is listed after the root's subtree, as the root of
//   its own subtree. Non-members never become members: a process's parent
//   changes only by such reparenting, never to a member.
// - Reading. A member's stat (CPU times, state, parent, RSS), io (bytes
//   read and written) and schedstat (time on a CPU and waiting for one)
//   are read every sample through descriptors kept open (io and schedstat
//   carried over when the member had no CPU tick since; io is still read
//   in D state and on every slow sample). A single-threaded member whose
//   schedstat did not move did not run: its stat and io are carried over
//   (but on slow samples, and when its parent left the tree: reparented)
//   and re-read from offset 0; a member that exits fails that read (ESRCH)
//   and is dropped, its descriptors closed. Its status (VmPeak, VmHWM,
//   VmLck, VmPin, VmSwap) and smaps_rollup (PSS, the costly one: the kernel
//   walks every mapping) are read when it is first seen and on every
//   slow_every-th sample (10 by default), also through kept descriptors; in
//   between, the last values are carried over. A member that stayed quiet
//   since those were read (no CPU tick, no page fault, the same RSS, and no
//   process joined or left the tree) keeps them for up to quiet_slow_every
//   slow samples more: an idle process's status cannot have moved, and its
//   PSS only through sharers outside the tree. Its cmdline is read when it
//   is first seen and again when its comm changes (an exec). Past
//   max_open_files, files are read with open/read/close; slow files are kept
//   only while under half the budget is in use, so the per-sample ones keep
//   theirs. The stat read that identified a new pid is its first sample's.
// - Counting, per sample. ProcessTree::vanished counts the members that
//   exited since the previous sample and the listed pids that were gone
//   before their stat could be read (as ReadProcessTree counts them);
//   unreadable counts the newly listed pids whose stat is refused or
//   malformed, and the members whose files are. Neither is an error.
//
// Processes come out root first, then depth-first with siblings in pid
// order, as ReadProcessTree orders them. Sample() is NotFound("pid N") when
// the root is gone (or its pid now names another process). A stat line
// without the RSS field (a truncated fixture) takes RSS from status instead.
//
// Owns its descriptors (all O_CLOEXEC; closed when their process vanishes
// and on destruction). Movable; thread-compatible (one sample at a time).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/file.h"
#include "core/status.h"
#include "probe/proc_file.h"
#include "probe/process_tree.h"
#include "sample/process.h"

namespace stallscope {

// The pids handed out after `before` up to `now` (the last pid of
// /proc/loadavg at two moments), as inclusive [first, last] ranges. Pids go
// upwards and wrap around at pid_max, so a smaller `now` means two ranges:
// above `before`, and from the bottom up to `now`. Empty when equal.
std::vector<std::pair<int32_t, int32_t>> NewPidRanges(int32_t before, int32_t now);

// How many more samples a pid that adopt could not judge is asked again,
// and how many such pids are kept at once (bounded memory).
inline constexpr int kAdoptRetries = 10;
inline constexpr size_t kMaxUndecided = 4096;

struct ProcessSamplerOptions {
  int64_t clock_ticks_per_second = 0;  // 0: ClockTicksPerSecond() of probe/cpu_stat.h
  uint64_t page_size_bytes = 0;        // 0: sysconf(_SC_PAGESIZE)
  // status and smaps_rollup every slow_every-th sample (1: every sample).
  // They change slowly (VmPeak, VmHWM, VmLck/VmPin move when memory is
  // mapped or pinned) and smaps_rollup costs more than all the other files
  // together on a large process; the leak rule looks at RSS, read every time.
  int slow_every = 10;
  // A quiet member (no CPU tick, no page fault and the same RSS since its
  // slow files were last read, in a tree no process joined or left since)
  // has them read only every quiet_slow_every-th slow sample: what they
  // hold cannot have moved but through another process's sharing (PSS), and
  // that is bounded by this. 1: every slow sample, as for the others.
  int quiet_slow_every = 6;
  bool read_cmdline = true;
  bool read_io = true;
  bool read_schedstat = true;  // every sample, as stat and io
  bool read_pss = true;
  // Descriptors kept between samples: 3 per member read every sample (stat,
  // io, schedstat), 2 more for the slow files (status, smaps_rollup). Never more than
  // half the RLIMIT_NOFILE soft limit, so the tool itself keeps room to work.
  int max_open_files = 5 * 512;
  // Processes that join by themselves, not by descent: a pid, first seen,
  // that is not a child of a member is made a member (the root of its own
  // subtree) when this says so (a Slurm job's processes:
  // probe/slurm_job.h). Asked once per pid; nullopt (cannot tell yet: a
  // task between its fork and its exec) asks again at each of the next
  // kAdoptRetries samples. With it, root_pid may be 0 (no root): Sample()
  // then never fails for a missing root, and gives an empty tree while no
  // process belongs.
  std::function<std::optional<bool>(int32_t pid)> adopt;
};

class ProcessTreeSampler {
 public:
  ProcessTreeSampler(const Root& root, int32_t root_pid, ProcessSamplerOptions options = {});

  // The tree now. Errors: NotFound("pid N") when the root is gone; the
  // error of opening /proc itself. `every_io`: every member's io read now,
  // not carried over from an earlier reading for one that ran under a clock
  // tick (a boundary sample, whose differences must be exact); such a
  // sample never reads the slow files, and the slow ones keep their
  // cadence.
  Result<ProcessTree> Sample(bool every_io = false);

  // Descriptors held now: the /proc directory and the members' kept files.
  int open_files() const { return open_files_ + proc_dir_.is_open() + loadavg_.is_open(); }
  // Samples that listed all of /proc (the first and the slow ones, or every
  // sample where only the new pids cannot be listed, as on a fixture root).
  int64_t full_listings() const { return full_listings_; }
  // Samples taken so far (slow fields are read when the samples other than
  // every_io ones are a multiple of slow_every, counting from 0).
  int64_t samples() const { return samples_; }
  // Slow reads skipped so far because the member was quiet.
  int64_t quiet_skips() const { return quiet_skips_; }
  // Member reads that found a single-threaded member's schedstat unchanged
  // and read nothing more of it (its stat and io carried over).
  int64_t idle_skips() const { return idle_skips_; }

 private:
  // A pid listed in /proc, as first read: what discovery needs.
  struct Known {
    int32_t pid = 0;
    uint64_t inode = 0;  // of /proc/PID when it was listed
    int32_t ppid = 0;
    uint64_t start_time_ticks = 0;
    bool readable = true;  // false: its stat is refused or malformed
    bool recheck = false;  // a member read under this pid vanished: read again
  };
  // A member of the tree: its kept files and its last sample.
  struct Member {
    ProcFile stat, io, schedstat, status, smaps_rollup;
    uint64_t start_time_ticks = 0;
    std::optional<ProcStat> first_stat;  // read by Identify in this sample
    bool rss_from_status = false;        // stat without RSS: status on every sample
    bool io_denied = false;              // retried on slow samples only
    bool schedstat_denied = false;       // the same
    std::string cmdline_comm;            // comm when cmdline was last read
    int64_t read_in = -1;                // the sample that last read it (-1: none yet)
    // What the stat showed when the slow files were last read, and when.
    uint64_t slow_cpu_ticks = 0, slow_faults = 0, slow_rss_pages = 0;
    uint64_t slow_membership = 0;  // membership_changes_ then
    int64_t slow_read_in = -1;
    bool visited = false;  // scratch for Order()
    ProcessSample sample;  // the slow fields carry over from here
  };
  using Members = std::map<int32_t, Member>;
  enum class Identity { kNew, kVanished, kUnreadable };

  // Finds the pids new since the last sample (all of /proc when `full`),
  // reads their stat, drops members that are gone; counts into tree.
  Status Discover(ProcessTree& tree, bool full);
  Status OpenProc();
  Status ListAll(ProcessTree& tree);
  Status ListNew(ProcessTree& tree);
  // The entries of /proc from `position` on, up to pid `last`, into
  // listing_, reading `bytes` of entries at a time. 0 or errno.
  int List(int64_t position, int32_t last, size_t bytes);
  void LearnPidOffset();
  // The last pid handed out in this pid namespace (/proc/loadavg).
  std::optional<int32_t> ReadLastPid();
  // A listed pid that is new or may be: identifies it against `old` (what
  // was known under that pid), queues it in new_ when it is a new process.
  Identity Consider(int32_t pid, uint64_t inode, const Known* old, ProcessTree& tree, Known* fresh);
  // Reads the stat of pid into *known; what came of it. A new pid's stat
  // file and parsed line wait in pending_ until admission takes or drops them.
  Identity Identify(int32_t pid, uint64_t inode, Known* known);
  // A pid no longer listed, or now another process: drops it if it was a
  // member (counted as vanished) and says so.
  bool Gone(const Known& known, ProcessTree& tree);
  // Makes members of the new pids whose parent is a member (or the root);
  // drops the pending files of the others.
  void AdmitNewMembers();
  void AdmitFromNew();
  void DropPending();
  // Asks adopt again about the pids it could not judge (options_.adopt).
  void RetryUndecided();
  // 0, or the errno that leaves the member out of this sample.
  // `may_skip`: an idle single-threaded member (schedstat unchanged) has
  // nothing more read.
  int ReadMember(int32_t pid, Member& member, bool slow, bool may_skip, bool every_io = false);
  // Its parent is a member, and not a zombie (a child of one is reparented
  // once it is reaped).
  bool ParentStays(const Member& member) const;
  // Reads one of a member's files, keeping it open while fewer than `keep`
  // descriptors are in use.
  int ReadKept(ProcFile& file, int32_t pid, const char* name, int keep);
  int ReadOnce(int32_t pid, const char* name, size_t max_bytes = kMaxProcFileBytes);
  // "PID/name", relative to the /proc directory; valid until the next call.
  const char* PathOf(int32_t pid, const char* name);
  Members::iterator Forget(Members::iterator member);
  // Copies the members read in this sample into tree, in tree order.
  void Order(ProcessTree& tree);
  void Visit(int32_t pid, ProcessTree& tree);

  std::string proc_path_;
  int32_t root_pid_ = 0;
  ProcessSamplerOptions options_;
  double ticks_per_second_ = 100;
  uint64_t page_size_bytes_ = 4096;
  int budget_ = 0;               // descriptors members may hold
  int64_t cadence_samples_ = 0;  // samples that count for slow_every (every_io ones do not)
  int open_files_ = 0;
  int64_t samples_ = 0;
  uint64_t membership_changes_ = 0;  // members admitted or dropped so far
  int64_t quiet_skips_ = 0;
  int64_t idle_skips_ = 0;
  std::vector<int32_t> idle_;  // scratch: the members idle this sample
  bool root_seen_ = false;     // the root was found once; later, only that process
  uint64_t root_start_time_ticks_ = 0;

  // /proc, and how new pids are found: after each sample, the last pid
  // handed out (loadavg's last field); the pids above it are the new ones,
  // listed from position pid + pid_offset_ (learnt from a full listing).
  ProcFile proc_dir_, loadavg_;
  bool range_listing_ = false;
  int64_t pid_offset_ = 0;
  int32_t last_pid_ = 0;
  int64_t full_listings_ = 0;
  struct Listed {
    int32_t pid;
    uint64_t inode;
    int64_t next_position;  // d_off: where the next entry starts
  };
  std::vector<Listed> listing_;  // pid order
  alignas(8) char dirents_[16384];
  std::vector<Known> known_, next_known_;  // pid order
  std::vector<Known> new_;                 // first seen this sample
  struct Pending {
    ProcFile stat;
    ProcStat parsed;
  };
  std::map<int32_t, Pending> pending_;  // new pids' stat, until admission
  struct Undecided {
    uint64_t start_time_ticks = 0;
    int tries_left = kAdoptRetries;
  };
  std::map<int32_t, Undecided> undecided_;  // adopt said "cannot tell yet"
  Members members_;
  FileBuffer buffer_;
  char path_[64] = {};
  // Scratch: (ppid, pid) pairs and a work list, for admission and order.
  std::vector<std::pair<int32_t, int32_t>> by_parent_;
  std::vector<int32_t> stack_;
};

}  // namespace stallscope
