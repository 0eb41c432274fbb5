// Rendering `plan memory` and `plan loader`: a table and the assumptions for
// people, and JSON (schemas stallscope.plan_memory/1, stallscope.plan_loader/1)
// for machines. Pure; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "plan/loader_plan.h"
#include "plan/memory_plan.h"

namespace stallscope {

// At most `rows` layouts, best first; how many more there were is said.
std::string RenderMemoryPlanText(const MemoryPlan& plan, size_t rows);
nlohmann::ordered_json MemoryPlanToJson(const MemoryPlan& plan);

// `available_source` says where the available memory came from.
std::string RenderLoaderPlanText(const LoaderPlan& plan, const LoaderPlanInput& input,
                                 const std::string& available_source);
nlohmann::ordered_json LoaderPlanToJson(const LoaderPlan& plan, const LoaderPlanInput& input,
                                        const std::string& available_source);

}  // namespace stallscope
