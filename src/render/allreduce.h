// Rendering `bench allreduce`: the nccl-tests style table (size, count,
// type, redop, time, algbw, busbw, #wrong), the line-rate verdict, and the
// "bench" object (schema stallscope.bench_allreduce/1) that sits beside the
// stallscope.report/1 fields in --json output. Pure; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analyze/fleet/allreduce_rules.h"
#include "sample/allreduce.h"

namespace stallscope {

struct AllreduceRun {
  std::string backend;      // "mpi", "nccl"
  std::string description;  // "Open MPI v4.1.4, ..."
  int ranks = 0;
  std::vector<std::string> hosts;  // distinct, in rank order
  AllreducePlan plan;
  std::vector<AllreduceRow> rows;
  AllreduceJudgement judgement;
  std::optional<AllreduceLink> link;
};

// Mean busbw over the sizes, as nccl-tests' "Avg bus bandwidth".
double AverageBusBandwidth(const std::vector<AllreduceRow>& rows);

std::string RenderAllreduceText(const AllreduceRun& run);
nlohmann::ordered_json AllreduceToJson(const AllreduceRun& run);

}  // namespace stallscope
