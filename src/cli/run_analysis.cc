#include "cli/run_analysis.h"

#include "core/atomic_file.h"
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

Status WriteRunHtml(const RunAnalysis& run, const std::string& html_path) {
  return WriteFileAtomically(html_path, RenderRunHtml(run));
}

}  // namespace stallscope
