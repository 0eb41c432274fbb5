// Rendering `stallscope dataset`: the census for people (text) and for
// machines (the stallscope.report/1 findings contract plus a "dataset" object
// with the census). Pure: a census and its report in, a string out.
// Thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "render/report.h"
#include "sample/dataset.h"
#include "sample/finding.h"

namespace stallscope {

nlohmann::ordered_json DatasetCensusToJson(const DatasetCensus& census);
nlohmann::ordered_json DatasetToJson(const ReportHeader& header, const DatasetCensus& census,
                                     const Report& report);
std::string RenderDatasetText(const DatasetCensus& census, const Report& report);

}  // namespace stallscope
