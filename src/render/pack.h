// Rendering `pack`'s result: the text summary and the JSON
// (stallscope.pack_result/1) of what a pack did. Pure; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "sample/pack_index.h"

namespace stallscope {

// `src` packed into `out_dir` as `format`.
nlohmann::ordered_json PackResultJson(const std::string& src, const std::string& out_dir,
                                      PackFormat format, const PackSummary& summary);
std::string PackResultText(const std::string& src, const std::string& out_dir, PackFormat format,
                           const PackSummary& summary);

}  // namespace stallscope
