// Work that may never return, run in a child process with a deadline.
//
// A thread that calls stat() or readdir() on a network file system whose
// server went away sits in an uninterruptible kernel wait: no signal ends it,
// not even SIGKILL, and a process does not exit while one of its threads is
// stuck so. Only a child process can be abandoned. CallInChild forks, runs
// the work in the child and reads what it answers through a pipe; the child
// holds none of the caller's files (its stdin and stderr are /dev/null, its
// stdout the pipe, every other descriptor closed), so a child stuck for good
// keeps no pipe of the caller's open. At the deadline the caller sends it
// SIGKILL (it dies when the wait ends, if ever), does not wait for it, and
// learns which step the child was on (the work names its steps).
// Call it from a single-threaded process, or with work that allocates
// nothing, as with any fork(). Thread-compatible.
#pragma once

#include <functional>
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

// The work calls `step` before each call that may not return ("stat
// /data"); only its last 255 bytes are kept.
using ChildStep = std::function<void(std::string_view what)>;
using ChildWork = std::function<ChildAnswer(const ChildStep& step)>;

// When the child answered: its answer. Unavailable when it did not answer
// within `deadline_seconds`: the message is the last step it named (or
// "starting"). Unavailable also when it died without answering (its signal
// or exit code named), or fork/pipe failed.
Result<ChildAnswer> CallInChild(const ChildWork& work, double deadline_seconds);

}  // namespace stallscope
