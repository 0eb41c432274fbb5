// What a recorded run's loader read, and how its workers spent their time:
// the facts the io rules name in their evidence and `next` (io_rules.h).
// Pure; thread-safe.
//
// - WhatTheLoaderReads: the files the workers were caught holding open
//   (the ranks' when no loader has workers: num_workers=0), with the
//   interpreter's own files (Python modules, shared libraries, /usr and
//   /etc) left out. A file held open (caught in at least half the samples
//   of the time it was seen in, more than twice), an archive and a
//   compressed file stand as themselves; the other files (small files
//   opened and closed between samples) stand as their folders: a file
//   joins a folder that, widened to hold it, is at most one level above the
//   file's own (class folders under one root are one; train/ and val/ are
//   two), with how many files were caught in it.
// - WorkerLoad: per interval, the loader workers' CPU and run-queue delay
//   (schedstat), for io.cpu_bound_loader and io.cpu_contention.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sample/timeline.h"

namespace stallscope {

struct LoaderInput {
  std::string kind;  // "archive", "file" or "directory"
  std::string path;
  std::string role;         // "worker" or "rank": who was caught reading it
  int files = 1;            // directory: distinct files caught open in it
  int64_t samples = 0;      // summed over its files
  uint64_t size_bytes = 0;  // a file's size; a directory: of the files caught
  std::string fs_type;
  bool remote = false;
  std::string device;
  std::string format;  // InputSeen::format
  bool compressed = false;
  std::string method;
  // "/data/train.zip (zip, deflate, 1.2 GiB, ext4 on vda1)": for summaries.
  std::string Describe() const;
};

// Most-seen first; empty when nothing was caught (or the run file predates
// the inputs table).
std::vector<LoaderInput> WhatTheLoaderReads(const Timeline& timeline);

// The directory the loader's data is in, for the commands a `next` names
// (`stallscope dataset DIR`, `bench io DIR`, `pack DIR`): the most-seen
// input's own directory, or the folder holding its file; "DATA_DIR" when
// the run caught none.
std::string DataDirOf(const std::vector<LoaderInput>& inputs);

// The pids of the loader workers: processes whose parent is a rank (a
// loader's pid or a hello's), or, without the hook, the root's descendants
// (none for a run without a root: a Slurm job's processes).
std::set<int> WorkerPids(const Timeline& timeline);

// One interval's loader workers, from their process points at time t.
struct WorkerInterval {
  double t = 0;
  int workers = 0;
  double cpu_percent = 0;        // mean over the workers, of one CPU
  double run_delay_percent = 0;  // mean over the workers: waiting for a CPU
};
// Intervals where every worker's run delay was read; empty for older run
// files (no run delay) and runs without workers.
std::vector<WorkerInterval> WorkerLoad(const Timeline& timeline);

}  // namespace stallscope
