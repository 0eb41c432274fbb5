#include "cli/run_analysis.h"

#include "app/run_files.h"
#include "cli/commands.h"
#include "core/json_text.h"
#include "render/run_report.h"

namespace stallscope {

int PrintRunReport(const char* command, const RunAnalysis& run, bool json, std::FILE* text_out,
                   const std::vector<NcclLogFile>& nccl_logs) {
  if (json) {
    std::fputs((JsonText(RunReportJson(command, run, nccl_logs)) + "\n").c_str(), stdout);
  } else {
    std::fputs(RenderRunReportText(command, run).c_str(), text_out);
  }
  return kExitOk;
}

int PrintRunReport(const char* command, const std::string& path, bool json, std::FILE* text_out,
                   const std::vector<NcclLogFile>& nccl_logs, StoredFindings unsaved) {
  Result<RunAnalysis> run = AnalyzeRunFile(path);
  if (!run.ok()) {
    std::fprintf(stderr, "stallscope: %s\n", run.status().message().c_str());
    return kExitCouldNotRun;
  }
  for (Finding& f : unsaved.findings) run->findings.push_back(std::move(f));
  for (std::string& n : unsaved.notes) run->notes.push_back(std::move(n));
  return PrintRunReport(command, *run, json, text_out, nccl_logs);
}

}  // namespace stallscope
