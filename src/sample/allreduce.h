// What `bench allreduce` ran and measured, as plain data: the size sweep and
// iteration counts (AllreducePlan) and one row per size in nccl-tests'
// columns (AllreduceRow). bench/allreduce.h (RunAllreduce) builds the rows
// from the plan; render/allreduce.h renders them.
#pragma once

#include <cstdint>

namespace stallscope {

struct AllreducePlan {
  uint64_t begin_bytes = 8;
  uint64_t end_bytes = 128ull << 20;
  uint64_t factor = 2;
  int iterations = 20;
  int warmup = 5;
};

struct AllreduceRow {
  uint64_t size_bytes = 0;
  uint64_t count = 0;     // floats
  double time_us = 0;     // slowest rank's mean per iteration
  double algbw_gbps = 0;  // GB/s (1e9 bytes)
  double busbw_gbps = 0;
  int64_t wrong = 0;  // summed over ranks
};

}  // namespace stallscope
