#include "analyze/run/analysis.h"

#include "analyze/host/gpu_rules.h"
#include "analyze/host/network_rules.h"
#include "analyze/report.h"
#include "analyze/trace/rules.h"

namespace stallscope {
namespace {

// The evidence "source" a stored finding carries ("" without one).
std::string SourceOf(const Finding& f) {
  for (const Evidence& e : f.evidence) {
    if (e.name == "source") {
      if (const auto* s = std::get_if<std::string>(&e.value)) return *s;
    }
  }
  return "";
}

}  // namespace

RunAnalysis AnalyzeRun(std::string path, Timeline timeline,
                       std::optional<std::string> baseline_json,
                       const Result<FindingsWithNotes>& stored, bool node_of_job) {
  RunAnalysis run;
  run.path = std::move(path);
  run.timeline = std::move(timeline);
  if (run.timeline.steps.empty()) {
    run.notes.push_back(
        "no steps from the Python hook: wrap the loader with `for batch in "
        "stallscope.loader(loader)` for data-wait and epoch figures");
  }
  if (!run.timeline.inputs_recorded && !run.timeline.samples.empty()) {
    run.notes.push_back(
        "io: this run file predates what the loader read (table inputs) and the workers' "
        "run-queue delay: io.cpu_bound_loader judges from CPU alone and names no input; record "
        "again with this stallscope for both");
  }
  FindingsWithNotes judged = CheckRun(run.timeline, /*rank_rules=*/!node_of_job);
  run.findings = std::move(judged.findings);
  for (std::string& n : judged.notes) run.notes.push_back(std::move(n));
  run.checked = {Layer::kMemory, Layer::kIo, Layer::kNetwork};
  run.ranks = SummarizeRanks(run.timeline, run.timeline.info.hostname);
  if (run.ranks.size() >= 2) run.checked.push_back(Layer::kDistributed);
  run.epochs = SummarizeEpochs(run.timeline);
  run.time = BreakDownTime(run.timeline);
  // The network host rules judge the baseline the run file keeps.
  if (baseline_json) {
    run.baseline_json = std::move(*baseline_json);
    if (Result<NetworkObservation> network = NetworkFromBaseline(run.baseline_json); network.ok()) {
      FindingsWithNotes judged_network = CheckNetwork(*network);
      for (Finding& f : judged_network.findings) run.findings.push_back(std::move(f));
      for (std::string& n : judged_network.notes) run.notes.push_back(std::move(n));
    } else {
      run.notes.push_back("network: " + network.status().message());
    }
  }
  // What `run` concluded from outside the timeline (the job's NCCL logs,
  // its profiler traces: one finding per id with the hook's). A row that
  // does not decode is a note, as a bad baseline is: the timeline is still
  // worth its report.
  if (stored.ok()) {
    for (const Finding& f : stored->findings) {
      if (FromTrace(f)) {
        MergeTraceFinding(run.findings, f);
      } else if (SourceOf(f) == "flight-recorder") {
        // PyTorch's Flight Recorder dumps: one distributed.hang with the
        // recorder's own.
        MergeFinding(run.findings, f, "flight-recorder", "run");
      } else {
        // The job's NCCL logs: one finding with the baseline's of the same
        // id (network.wrong_interface, network.rdma_unused).
        MergeFinding(run.findings, f, "nccl-log", "run");
      }
    }
    for (const std::string& n : stored->notes) run.notes.push_back(n);
  } else {
    run.notes.push_back("stored findings: " + stored.status().message());
  }
  return run;
}

Report MakeRunReport(const RunAnalysis& run) {
  return MakeReport(run.findings, run.checked, run.notes);
}

}  // namespace stallscope
