// The census of a dataset folder: what `stallscope dataset PATH` measures.
//
// TakeCensus walks the tree in parallel (data/walk.h) and counts files,
// bytes, directories and a size histogram; finds the deepest path; names the
// file system and the block device behind it (probe/mounts.h and statfs);
// measures page-cache residency (data/residency.h) and open/stat latency on a
// uniform random sample of the files, and says when it sampled. The result
// (sample/dataset.h) is plain data that the pure rules in
// analyze/host/dataset_rules.h judge.
// TakeCensus touches the machine; the structs are thread-compatible.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "sample/dataset.h"

namespace stallscope {

struct CensusOptions {
  int threads = 0;  // 0: DefaultWalkThreads()
  // Residency is measured on every file up to this many, else on a uniform
  // random sample of this many (mmap + mincore per file costs about as much
  // as the walk's stat of it).
  size_t residency_sample_files = 10000;
  size_t latency_sample_files = 1000;
  double latency_budget_seconds = 2.0;  // stop measuring latency after this
  uint64_t seed = 0;                    // 0: random
  size_t unreadable_examples = 10;
  // Called before each kind of call on the data ("readdir/stat of the walk
  // of /data"), so a caller that gives up on a dead mount can name the call
  // that did not answer (core/child_call.h). May be empty.
  std::function<void(std::string_view what)> step;
  // Called after each call on the data that answered (an entry of the walk,
  // a sampled file measured), from any of the census's threads: what keeps
  // an idle deadline from expiring on a large but live dataset. May be empty.
  std::function<void()> advance;
};

// NotFound / PermissionDenied naming the path when it cannot be walked; a
// regular file PATH is a dataset of one file. What cannot be looked at
// inside the tree is counted, never fatal.
Result<DatasetCensus> TakeCensus(const std::string& path, const CensusOptions& options);

}  // namespace stallscope
