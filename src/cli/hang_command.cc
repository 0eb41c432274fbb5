// `stallscope hang PATH... [--json]`: reads the PyTorch Flight Recorder dumps
// of a stuck job (a folder of per-rank files, or the files; pickle or JSON)
// and prints where its ranks diverge: per process group the collective some
// ranks never entered, the ranks missing from it and their last completed
// collective, ranks that stopped completing, sizes or dtypes that differ;
// then the finding distributed.hang. Exit 0 when it ran, whatever it found.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "analyze/flight_recorder/finding.h"
#include "analyze/flight_recorder/rules.h"
#include "analyze/report.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "core/host_clock.h"
#include "core/json_text.h"
#include "formats/flight_recorder/flight_recorder.h"
#include "render/flight_recorder.h"

namespace stallscope {

CommandRunner SetupHang(CLI::App& app) {
  struct Flags {
    std::vector<std::string> paths;
    bool json = false;
  };
  auto flags = std::make_shared<Flags>();
  app.add_option("PATH", flags->paths,
                 "the dumps: a folder of per-rank files (PREFIX<rank>), or the files")
      ->required();
  app.add_flag("--json", flags->json, "machine output (schema stallscope.hang/1)");
  return [flags]() {
    Result<FlightRecorderDumps> read = [&] {
      ProgressLine progress("reading Flight Recorder dumps...");
      return ReadFlightRecorderDumps(flags->paths);
    }();
    if (!read.ok()) return Fail("hang", read.status(), false);
    FlightRecorderAnalysis analysis = AnalyzeFlightRecorder(read->dumps);
    FindingsWithNotes judged = FlightRecorderFindings(analysis);
    std::vector<std::string> notes = read->notes;
    notes.push_back("memory, io and network layers are not judged from Flight Recorder dumps");
    Report report = ReportOf(std::move(judged), {Layer::kDistributed}, notes);
    ReportHeader header{"hang", "", UtcNow(), 0};
    std::string source;
    for (const std::string& p : flags->paths) source += (source.empty() ? "" : " ") + p;
    std::string out = flags->json ? JsonText(HangToJson(source, analysis, header, report)) + "\n"
                                  : RenderHangText(source, analysis, header, report);
    std::fputs(out.c_str(), stdout);
    return kExitOk;
  };
}

}  // namespace stallscope
