// libFuzzer target: the Flight Recorder dump readers. The bytes go to the
// pickle reader of builtin values (every opcode that could import or run is
// refused; lengths, marks, nodes and the memo are bounded), to the JSON
// reader, and to the dump reader, which picks one by the first byte; every
// index a tree holds must point inside it. A dump that reads is analysed as
// two ranks of one job (itself and a copy that entered less), and rendered.
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "analyze/flight_recorder/finding.h"
#include "analyze/flight_recorder/rules.h"
#include "analyze/report.h"
#include "formats/flight_recorder/flight_recorder.h"
#include "formats/flight_recorder/json.h"
#include "formats/flight_recorder/pickle.h"
#include "render/flight_recorder.h"

namespace {

void CheckTree(const stallscope::Result<stallscope::FrValueTree>& tree) {
  if (!tree.ok()) {
    if (tree.status().message().empty()) abort();
    return;
  }
  const auto& nodes = tree->nodes;
  if (nodes.empty() || nodes.size() > stallscope::kPickleMaxNodes || tree->root >= nodes.size()) {
    abort();
  }
  for (const stallscope::FrValue& v : nodes) {
    for (uint32_t i : v.items) {
      if (i >= nodes.size()) abort();
    }
    if (v.kind == stallscope::FrValueKind::kDict && v.items.size() % 2 != 0) abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  CheckTree(stallscope::ParsePickle(bytes, "fuzz.pkl"));
  CheckTree(stallscope::ParseJsonValues(bytes, "fuzz.json"));
  stallscope::Result<stallscope::FlightRecorderDump> dump =
      stallscope::ParseFlightRecorderDump(bytes, "fuzz", 0);
  if (!dump.ok()) return 0;
  if (dump->version_major != stallscope::kFrMajorVersion) abort();
  std::vector<stallscope::FlightRecorderDump> dumps = {*dump, *dump};
  dumps[1].rank = 1;
  if (!dumps[1].entries.empty()) dumps[1].entries.pop_back();
  for (auto& s : dumps[1].statuses) {
    if (s.last_enqueued > INT64_MIN) s.last_enqueued -= 1;
  }
  stallscope::FlightRecorderAnalysis analysis = stallscope::AnalyzeFlightRecorder(dumps);
  stallscope::FindingsWithNotes judged = stallscope::FlightRecorderFindings(analysis);
  stallscope::Report report =
      stallscope::ReportOf(std::move(judged), {stallscope::Layer::kDistributed}, {});
  stallscope::ReportHeader header{"hang", "", "", 0};
  (void)stallscope::RenderHangText("fuzz", analysis, header, report);
  (void)stallscope::HangToJson("fuzz", analysis, header, report)
      .dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  return 0;
}
