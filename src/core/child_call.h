// Work that may never return, run in a child process with an idle deadline.
//
// A thread that calls stat() or readdir() on a network file system whose
// server went away sits in an uninterruptible kernel wait: no signal ends it,
// not even SIGKILL, and a process does not exit while one of its threads is
// stuck so. Only a child process can be abandoned. CallInChild forks, runs
// the work in the child and reads what it answers through a pipe; the child
// holds none of the caller's files (its stdin and stderr are /dev/null, its
// stdout the pipe, every other descriptor closed), so a child stuck for good
// keeps no pipe of the caller's open.
//
// The deadline is an idle one: the work bumps a counter (ChildProgress::
// Advance) in a page it shares with the caller after each call that
// answered, and each bump restarts the deadline. A large but live dataset on
// a slow server goes on for as long as it keeps answering; a dead one is
// given up one deadline after its last answer. Then the caller sends the
// child SIGKILL (it dies when the wait ends, if ever), does not wait for it,
// and learns which step the child was on (the work names its steps). A
// child given up or dropped is reaped without blocking once it ended: by
// its ChildCall (ReapIfEnded) while that lives, then by every later Start
// and Poll in the process, so a long-lived caller gathers no zombies.
//
// Fork safety: the child runs the caller's code after fork() without exec,
// so in a threaded caller a lock another thread held at the fork stays held
// in the child. The callers cannot be proved single-threaded: on a GPU host
// `doctor --data` (app/doctor_data.h), and `run`, `watch` and the exporter
// through the remote file prober (probe/remote_file_facts.h), have loaded
// NVML by then, which may run threads of its own; `dataset` has none (its
// thread pools run in the child, and joined pools elsewhere end before any
// fork). So the children rely only on what glibc keeps usable in the child
// of a threaded process: system calls, and malloc (glibc's fork takes
// malloc's locks and resets them in the child; also the stdio list lock
// and the dynamic loader's lock). They must not touch stdio streams,
// setlocale, time zones, NSS lookups or dlopen'ed libraries (NVML, CUDA),
// whose locks are not reset. The work given here is single-purpose (a stat
// and a read; a census, a bench: files, syscalls and memory) and writes its
// answer with write(2); ChildCall.ChildOfAThreadedCallerAllocates checks
// the malloc part. An exec'd helper would lift the rule but would have to
// carry the work across exec; not worth it while the work stays this
// narrow. Thread-compatible; ReapAbandonedChildren is thread-safe.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace stallscope {

// What the work in the child answers: an exit code and two texts.
struct ChildAnswer {
  int exit_code = 0;
  std::string out;
  std::string err;
};

struct ChildPage;  // the page the child shares with the caller

// What the work tells the caller while it runs. Step is called by one
// thread at a time; Advance from any thread (lock-free).
class ChildProgress {
 public:
  explicit ChildProgress(ChildPage* page = nullptr) : page_(page) {}
  // Before each call that may not return ("stat /data"); only its last 255
  // bytes are kept.
  void Step(std::string_view what) const;
  // After each call that answered (an entry read, a file stat'ed): restarts
  // the caller's deadline.
  void Advance() const;

 private:
  ChildPage* page_;
};

using ChildWork = std::function<ChildAnswer(const ChildProgress& progress)>;

// When the child answered: its answer. Unavailable when it made no progress
// for `idle_deadline_seconds`: the message is the last step it named (or
// "starting"). Unavailable also when it died without answering (its signal
// or exit code named), or fork/pipe failed.
Result<ChildAnswer> CallInChild(const ChildWork& work, double idle_deadline_seconds);

// One child started and polled without blocking: for a caller that must go
// on with other work meanwhile (a sampling loop, the exporter). Move-only;
// destroying one whose child was not reaped kills it (SIGKILL) and leaves
// it to the reaping of later calls (see above).
class ChildCall {
 public:
  // Forks the child. The error of mmap, pipe or fork.
  static Result<ChildCall> Start(const ChildWork& work);
  ChildCall(ChildCall&& other) noexcept;
  ChildCall& operator=(ChildCall&& other) noexcept;
  ~ChildCall();
  // Reads what the child wrote so far. nullopt while it runs and made
  // progress within `idle_deadline_seconds`; else what CallInChild returns:
  // its answer, or Unavailable naming its last step (then it is given up:
  // SIGKILL sent, pid() still names it until ReapIfEnded).
  std::optional<Result<ChildAnswer>> Poll(double idle_deadline_seconds);
  // For a child given up: waits for it without blocking; true once it
  // ended (then pid() is -1). Never true while the child still runs.
  bool ReapIfEnded();
  // The pipe the answer comes on (-1 once done): for poll(2).
  int fd() const { return fd_; }
  pid_t pid() const { return pid_; }

 private:
  ChildCall() = default;
  void Release();
  pid_t pid_ = -1;
  int fd_ = -1;
  ChildPage* page_ = nullptr;
  std::string text_;
  uint64_t answered_ = 0;
  std::chrono::steady_clock::time_point last_progress_;
};

// Reaps, without blocking, the children given up or dropped whose
// ChildCall is gone and that ended since; how many are still alive (stuck).
// Start and Poll call it; thread-safe.
size_t ReapAbandonedChildren();

// The child's descriptors, as CallInChild sets them; exposed for tests.
// Closes every descriptor from `lowest` up with close_range(2); where that
// fails (ENOSYS before Linux 5.9, EPERM under an older seccomp filter), with
// close(2) on each up to the descriptor limit. `close_range_call` stands in
// for the system call (nullptr: the real one). Async-signal-safe.
using CloseRangeCall = int (*)(unsigned first, unsigned last, int flags);
void CloseDescriptorsFrom(int lowest, CloseRangeCall close_range_call = nullptr);
// stdin and stderr to `null_path` (/dev/null), stdout to `out_fd`, then every
// other descriptor closed. When `null_path` cannot be opened, 0 and 2 are
// closed instead. Async-signal-safe.
void SetChildDescriptors(int out_fd, const char* null_path = "/dev/null",
                         CloseRangeCall close_range_call = nullptr);

}  // namespace stallscope
