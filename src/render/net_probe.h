// Rendering what `net probe` measured (sample/net_probe.h): a block of text in
// the words of ping/iperf3 users, and the "probe" object of its JSON
// (documented in docs/net-protocol.md, "Output"). The findings themselves
// are rendered by render/report.h. Pure; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "analyze/host/network_rules.h"
#include "sample/net_probe.h"

namespace stallscope {

std::string RenderNetProbeText(const net::ProbeResult& result);
nlohmann::ordered_json NetProbeToJson(const net::ProbeResult& result);

// The MTU figures of a probe, for CheckPathMtu.
MtuObservation MtuObservationOf(const net::ProbeResult& result);

}  // namespace stallscope
