// io.input_bound's remote-file-system cause: when the files a run's loader
// was caught reading sit on a network file system (NFS, Lustre, a FUSE
// client of an object store, sshfs), the wait is named as io.remote_fs's,
// with the per-file cost the run measured and the gain packing would bring.
//
// The per-file cost is the loader workers' time per sample: a worker makes
// one batch per batch_size files, and num_workers of them run at once, so
// one file costs step time x num_workers / batch_size when the steps are
// input bound. Pure; thread-safe.
#pragma once

#include <optional>
#include <vector>

#include "analyze/run/inputs.h"
#include "sample/finding.h"
#include "sample/timeline.h"

namespace stallscope {

struct RemoteInputFacts {
  double wait_seconds = 0;  // over the counted steps of the worst rank
  double step_seconds = 0;
  int64_t steps = 0;
  std::optional<double> wait_per_epoch;
};

// Adds the cause to `input_bound` (evidence, summary, next) and returns true
// when the loader's most-read input is remote; leaves it alone otherwise.
bool AddRemoteFsCause(const std::vector<LoaderInput>& inputs, const LoaderConfig* loader,
                      const RemoteInputFacts& facts, Finding& input_bound);

}  // namespace stallscope
