// Python stacks as faulthandler writes them (faulthandler.dump_traceback
// with all_threads, or faulthandler.register on a signal): the stallscope
// hook arms it so that `run` can ask a rank where it is when no rank
// finishes a step (record/rank_watch.h). And /proc/PID/wchan, the kernel
// function a sleeping process waits in. Pure parsers, thread-safe.
//
//   Thread 0x00007f3a1bfff640 (most recent call first):
//     File "/usr/lib/python3.11/threading.py", line 320 in wait
//
//   Current thread 0x00007f3a2c1b5000 (most recent call first):
//     File "/home/u/train.py", line 57 in train
//     File "/home/u/train.py", line 90 in <module>
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stallscope {

struct PythonFrame {
  std::string file;
  int64_t line = 0;
  std::string function;
  std::string Where() const;  // "file:line in function"
};

struct PythonThreadStack {
  uint64_t thread_id = 0;           // pthread_self, as faulthandler prints it
  bool current = false;             // "Current thread": the one that took the signal
  std::vector<PythonFrame> frames;  // innermost first
};

// Every thread's stack of the LAST dump in `text` (a file the hook appends
// one dump to per signal); lines it does not know are skipped. Empty when
// `text` holds no dump. At most kMaxThreads threads of kMaxFrames frames.
std::vector<PythonThreadStack> ParseFaulthandlerDump(std::string_view text);
inline constexpr size_t kMaxStackThreads = 256;
inline constexpr size_t kMaxStackFrames = 256;

// The thread `thread_id` (the hook's main thread), else the current one,
// else the first; nullopt when there is none.
std::optional<PythonThreadStack> MainThreadStack(const std::vector<PythonThreadStack>& threads,
                                                 uint64_t thread_id);

// The innermost frame of the job's own code: the first frame outside
// Python's standard library, torch and stallscope's hook; the innermost
// frame when all are there; nullopt for no frames.
std::optional<PythonFrame> JobFrame(const PythonThreadStack& stack);

// True for a frame of torch.distributed (an all_reduce, a barrier, a
// store's wait): a wait on the other ranks. DDP's gradient all-reduces run
// inside backward, which Python cannot tell from compute: the hook's ring
// says those (RankState::collective_since_t).
bool InCollectiveFrame(const PythonThreadStack& stack);

}  // namespace stallscope
