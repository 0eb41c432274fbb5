#include "cli/run_analysis.h"

#include "analyze/job_analysis.h"
#include "cli/commands.h"
#include "core/atomic_file.h"
#include "core/json_text.h"
#include "render/run_report.h"
#include "store/run_reader.h"

namespace stallscope {

Result<RunAnalysis> AnalyzeRunFile(const std::string& path) {
  Result<Timeline> timeline = ReadRun(path);
  if (!timeline.ok()) return timeline.status();
  std::optional<std::string> baseline;
  if (Result<std::string> read = ReadBaseline(path); read.ok()) baseline = std::move(*read);
  return AnalyzeRun(path, std::move(*timeline), std::move(baseline), ReadStoredFindings(path));
}

Result<RunAnalysis> AnalyzeRunFiles(const std::vector<std::string>& paths) {
  if (paths.size() == 1) return AnalyzeRunFile(paths.front());
  std::vector<RunAnalysis> nodes;
  for (const std::string& path : paths) {
    Result<RunAnalysis> one = AnalyzeRunFile(path);
    if (!one.ok()) return one.status();
    nodes.push_back(std::move(*one));
  }
  return AnalyzeJob(std::move(nodes));
}

Status WriteRunHtml(const RunAnalysis& run, const std::string& html_path) {
  return WriteFileAtomically(html_path, RenderRunHtml(run));
}

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
