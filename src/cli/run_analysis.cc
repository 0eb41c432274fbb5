#include "analyze/report.h"
#include "cli/run_analysis.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include "analyze/gpu_rules.h"
#include "analyze/network_rules.h"
#include "core/atomic_file.h"
#include "render/html_report.h"
#include "render/run_report.h"
#include "store/run_file.h"

namespace stallscope {

Result<RunAnalysis> AnalyzeRunFile(const std::string& path) {
  Result<Timeline> timeline = ReadRun(path);
  if (!timeline.ok()) return timeline.status();
  RunAnalysis run;
  run.path = path;
  run.timeline = std::move(*timeline);
  if (run.timeline.steps.empty()) {
    run.notes.push_back(
        "no steps from the Python hook: wrap the loader with `for batch in "
        "stallscope.loader(loader)` for data-wait and epoch figures");
  }
  run.findings = CheckRun(run.timeline);
  for (std::string& n : GpuRunNotes(run.timeline)) run.notes.push_back("gpu: " + n);
  for (std::string& n : AllocationTraceNotes(run.timeline)) run.notes.push_back(std::move(n));
  run.checked = {Layer::kMemory, Layer::kIo, Layer::kNetwork};
  run.ranks = SummarizeRanks(run.timeline, run.timeline.info.hostname);
  if (run.ranks.size() >= 2) run.checked.push_back(Layer::kDistributed);
  run.epochs = SummarizeEpochs(run.timeline);
  // The network host rules judge the baseline the run file keeps.
  if (Result<std::string> baseline = ReadBaseline(path); baseline.ok()) {
    run.baseline_json = *baseline;
    if (Result<NetworkObservation> network = NetworkFromBaseline(*baseline); network.ok()) {
      for (Finding& f : CheckNetwork(*network)) run.findings.push_back(std::move(f));
    } else {
      run.notes.push_back("network: " + network.status().message());
    }
  }
  // What `run` concluded from outside the timeline (the job's NCCL logs).
  // A row that does not decode is a note, as a bad baseline is: the timeline
  // is still worth its report.
  if (Result<StoredFindings> stored = ReadStoredFindings(path); stored.ok()) {
    for (Finding& f : stored->findings) run.findings.push_back(std::move(f));
    for (std::string& n : stored->notes) run.notes.push_back(std::move(n));
  } else {
    run.notes.push_back("stored findings: " + stored.status().message());
  }
  return run;
}

Report MakeRunReport(const RunAnalysis& run) {
  return MakeReport(run.findings, run.checked, run.notes);
}

Status CheckOutputPath(const std::string& path, bool force, std::string_view flag) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      return Status::InvalidArgument(fmt::format("{} {}: is a directory", flag, path));
    }
    if (!force) {
      return Status::InvalidArgument(
          fmt::format("{} {}: the file exists; pass --force to overwrite it", flag, path));
    }
  }
  std::string dir = path.find('/') == std::string::npos ? "." : path.substr(0, path.rfind('/'));
  if (dir.empty()) dir = "/";
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Status::NotFound(fmt::format("{} {}: no directory {}", flag, path, dir));
  }
  return Status::Ok();
}

Status WriteRunHtml(const RunAnalysis& run, const std::string& html_path) {
  Report report = MakeRunReport(run);
  const RunInfo& info = run.timeline.info;
  HtmlReportInput in;
  in.command = "report";
  in.host = info.hostname;
  in.time_utc = info.started_utc;
  in.report = &report;
  in.timeline = &run.timeline;
  in.run_file = run.path;
  in.snapshot_json = run.baseline_json;
  in.not_checked_why = {{Layer::kDistributed, "fewer than two ranks reported steps"},
                        {Layer::kCode, "no rule of the code layer fired on this run's data"}};
  in.facts = {{"command", info.command},
              {"ended", DescribeRunEnd(info, run.timeline.samples.size())},
              {"interval", fmt::format("{:.2f} s", info.interval_seconds)}};
  if (!info.data_device.empty()) in.facts.push_back({"data disk", info.data_device});
  return WriteFileAtomically(html_path, RenderHtmlReport(in));
}

}  // namespace stallscope
