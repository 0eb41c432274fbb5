// Rendering `bench h2d` results: a bandwidth table per GPU (rows: direction,
// host memory, NUMA node; columns: copy sizes) with the pinned/pageable and
// remote/local ratios and what they mean, and the "bench" object of the
// JSON (schema stallscope.bench_h2d/1) that sits beside the
// stallscope.report/1 fields in `--json` output. Pure; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "sample/h2d.h"

namespace stallscope {

// 1048576 -> "1 MiB", 1536 -> "1536 B": exact sizes, as the flags give them.
std::string SizeLabel(uint64_t bytes);
std::string RenderH2dText(const H2dResult& result);
nlohmann::ordered_json H2dToJson(const H2dResult& result);

}  // namespace stallscope
