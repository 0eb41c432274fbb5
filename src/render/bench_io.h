// Rendering `bench io` results: the measurement table for people and the
// "bench" object of the JSON (schema stallscope.bench_io/1), which sits
// beside the stallscope.report/1 fields (verdict, findings) in `--json`
// output. Pure; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "analyze/host/storage_rules.h"
#include "sample/io_bench.h"

namespace stallscope {

std::string RenderIoBenchText(const IoBenchResult& result, const StorageThresholds& thresholds);
nlohmann::ordered_json IoBenchToJson(const IoBenchResult& result,
                                     const StorageThresholds& thresholds);

}  // namespace stallscope
