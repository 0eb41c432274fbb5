// The JSON form of a Flight Recorder dump (torch's dump_json, or what
// `_dump_nccl_trace_json` returns) read into the same values a pickle gives
// (pickle.h): objects as dicts keyed by str, arrays as lists.
// Read through nlohmann's SAX parser, which keeps no recursion of its own;
// nesting is capped at kFrJsonMaxDepth and values at kPickleMaxNodes.
// Pure: text and a source name in, values or a Status naming the byte out.
// Thread-safe.
#pragma once

#include <cstddef>
#include <string_view>

#include "core/status.h"
#include "formats/flight_recorder/pickle.h"

namespace stallscope {

// A dump nests 5 deep; Python's json stops near 1,000.
inline constexpr size_t kFrJsonMaxDepth = 256;

// Errors: "SOURCE: byte N: what".
Result<FrValueTree> ParseJsonValues(std::string_view text, std::string_view source);

}  // namespace stallscope
