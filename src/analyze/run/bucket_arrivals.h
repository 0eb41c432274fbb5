// Who enters each gradient bucket's all-reduce last, in a recorded
// data-parallel run (the hook's bucket records, stallscope.ddp(model)): for
// each step and bucket every rank reported, the rank whose launch came last
// (the bucket's arrival) and how long the others waited for it (the arrival
// less their own launch). gloo completes a bucket on every rank when the
// last rank has entered and the data has moved, so the launches name the
// rank the others wait for bucket by bucket, where the step's sync total
// only says who waited least.
//
// Clocks: the times of one run file are seconds since its recorder's start
// on its host's CLOCK_MONOTONIC, so its ranks' launches compare as written;
// the files of several nodes are aligned on the completions (the median,
// over the buckets, of a file's ranks' completion less the bucket's median
// completion). Records come from gloo jobs only: on NCCL a bucket's future
// completes at enqueue (the hook sends none). Each rank's first steps
// (rank_rules.h's warm-up) are left out.
// Pure; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sample/timeline.h"

namespace stallscope {

struct BucketArrivals {
  uint64_t buckets = 0;                 // (step, bucket) pairs every rank reported
  uint64_t steps = 0;                   // distinct steps among them
  std::map<int, uint64_t> last_in;      // per rank: buckets it entered last
  std::map<int, double> others_wait_s;  // per rank: the others' mean wait in those, summed
  bool aligned = false;                 // more than one host: clocks aligned on the completions
};

// Over the records of every part (a run file each, null: none). Empty
// (buckets 0) when fewer than two ranks reported buckets.
BucketArrivals FindBucketArrivals(const std::vector<const std::vector<BucketSync>*>& parts,
                                  int64_t warmup_steps);

}  // namespace stallscope
