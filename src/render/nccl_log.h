// Rendering what `stallscope nccl-log` found: a per-rank table (host:pid,
// device, rank, NCCL version, network, interfaces, transport mix, init) with
// rings, algorithm choices and warnings, followed by the findings; and the
// same as JSON (schema stallscope.report/1 with an "nccl" object holding the
// parsed facts). Pure: a summary and a report in, a string out. Thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "render/report.h"
#include "sample/nccl_log.h"

namespace stallscope {

// Rows of the rank table printed before "... N more ranks" (JSON has all).
inline constexpr size_t kNcclTextMaxRows = 64;

// "P2P 24, NET/IB 8 (GDR 8)"; "-" when the rank printed no channel.
std::string NcclTransportMix(const NcclTransportCounts& t);

std::string RenderNcclLogText(std::string_view source, const NcclLogSummary& log,
                              const ReportHeader& header, const Report& report);
nlohmann::ordered_json NcclLogToJson(std::string_view source, const NcclLogSummary& log,
                                     const ReportHeader& header, const Report& report);

}  // namespace stallscope
