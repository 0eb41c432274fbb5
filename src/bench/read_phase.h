// One timed read phase of `bench io`: `jobs` threads read one file for a
// fixed time, each keeping `iodepth` reads in flight, and every completed
// read's latency goes into a histogram.
//
// Sequential: 1 MiB reads, each job over its own slice, wrapping at its end
// (fio --rw=read --bs=1M --offset_increment=SLICE --size=SLICE --time_based).
// Random: 4 KiB reads at uniformly random aligned offsets over the whole
// file, with repeats, from a fresh seed each run (fio --rw=randread --bs=4k
// --norandommap --randrepeat=0 --time_based).
// The engine is io_uring (liburing), one ring per job, as fio's
// --ioengine=io_uring; where io_uring is refused (seccomp in containers,
// kernel.io_uring_disabled) RunReadPhase can use pread from jobs x iodepth
// threads instead, which the caller reports. The caller picks O_DIRECT or
// buffered. Reads that fail or come back short end the phase with an error
// naming the file and offset. Thread-safe: each call owns its threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "core/status.h"
#include "sample/io_bench.h"

namespace stallscope {

enum class ReadPattern { kSequential, kRandom };

struct ReadPhaseSpec {
  std::string file;
  uint64_t file_bytes = 0;  // reads stay below this
  bool direct = true;       // O_DIRECT
  ReadPattern pattern = ReadPattern::kSequential;
  ReadEngine engine = ReadEngine::kIoUring;
  unsigned jobs = 1;
  unsigned iodepth = 1;
  double runtime_seconds = 1;
  const std::atomic<bool>* stop = nullptr;  // set from a signal handler: end early
};

Result<ReadPhaseResult> RunReadPhase(const ReadPhaseSpec& spec);

// Whether this process may use io_uring: Ok, or the error of setting up a
// ring (e.g. "io_uring_queue_init: Operation not permitted").
Status ProbeIoUring();

}  // namespace stallscope
