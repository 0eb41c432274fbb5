// `stallscope doctor`: the ordered triage of this host (and of a recorded
// run): memory -> io -> network -> distributed -> code, each layer's status
// with its evidence, the verdict, the next check for every finding, and the
// suspects-and-quick-checks table. Options add the dataset census and a
// short storage bench (--data), a recorded run's findings (--run), a saved
// host baseline to compare with (--baseline) or to write (--save-baseline),
// and the HTML page (--html). --quick runs no active benchmark.
// Every input is checked before anything is sampled, so bad usage costs
// nothing and leaves no file behind.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <memory>
#include <variant>

#include "analyze/alert_rules.h"
#include "analyze/baseline.h"
#include "analyze/catalog.h"
#include "analyze/dataset_rules.h"
#include "analyze/doctor_triage.h"
#include "analyze/gpu_rules.h"
#include "analyze/host_io_rules.h"
#include "analyze/memory_rules.h"
#include "analyze/nccl_log_host.h"
#include "analyze/network_rules.h"
#include "analyze/report.h"
#include "analyze/storage_rules.h"
#include "analyze/triage_table.h"
#include "bench/io_bench.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "cli/run_analysis.h"
#include "core/atomic_file.h"
#include "core/file.h"
#include "core/json_text.h"
#include "core/units.h"
#include "data/census.h"
#include "net/host_observation.h"
#include "probe/gpu_probe.h"
#include "probe/nccl_log_files.h"
#include "probe/snapshot.h"
#include "render/bench_io.h"
#include "render/doctor_json.h"
#include "render/doctor_text.h"
#include "render/html_report.h"
#include "render/prometheus_rules.h"
#include "render/report.h"

namespace stallscope {
namespace {

// The storage bench of --data: long enough to get past the first requests,
// short enough for the whole doctor to stay under 30 s.
constexpr uint64_t kDoctorBenchBytes = 256ull << 20;
constexpr double kDoctorBenchSeconds = 2.0;
constexpr uint64_t kDoctorBenchMetadataFiles = 256;
constexpr double kQuickIntervalSeconds = 0.25;

struct Flags {
  double interval = 1.0;
  bool json = false;
  bool rules = false;
  std::string format;  // --rules --format text|json|prometheus
  std::string window;  // --rules --format prometheus --window 5m
  bool quick = false;
  bool force = false;
  std::string data;
  std::vector<std::string> runs;
  std::string html;
  std::string baseline;
  std::string save_baseline;
  double drift_percent = kDriftDefaultShare * 100;
  std::vector<std::string> peers;
  std::vector<std::string> nccl_logs;  // --nccl-log FILE...
  std::string root = "/";              // --root DIR: a fixture or copied tree
};

// The inputs the user named, checked before any sampling.
struct Inputs {
  std::optional<HostBaseline> baseline;
  std::optional<RunAnalysis> run;
  std::vector<NcclLogFile> nccl_logs;
};

Result<Inputs> CheckInputs(const Flags& f) {
  if (!(f.interval > 0 && f.interval <= 3600)) {
    return Status::InvalidArgument(
        fmt::format("--interval {}: must be more than 0 and at most 3600 seconds", f.interval));
  }
  if (!(f.drift_percent > 0 && f.drift_percent < 100)) {
    return Status::InvalidArgument(
        fmt::format("--drift {}: must be a percentage between 0 and 100", f.drift_percent));
  }
  if (!f.data.empty() && ::access(f.data.c_str(), F_OK) != 0) {
    return Status::InvalidArgument(fmt::format("--data {}: no such file or directory", f.data));
  }
  if (!f.html.empty()) {
    if (Status s = CheckOutputPath(f.html, f.force, "--html"); !s.ok()) return s;
  }
  if (!f.save_baseline.empty()) {
    // Overwrite a baseline, never anything else (a typo must not eat a file).
    if (PathExists(f.save_baseline)) {
      Result<std::string> text = ReadFile(f.save_baseline);
      if (!text.ok() || !ParseBaseline(*text, f.save_baseline).ok()) {
        return Status::InvalidArgument(fmt::format(
            "--save-baseline {}: the file exists and is not a stallscope baseline; refusing to "
            "overwrite it",
            f.save_baseline));
      }
    }
    if (Status s = CheckOutputPath(f.save_baseline, true, "--save-baseline"); !s.ok()) return s;
  }
  Inputs in;
  if (!f.baseline.empty()) {
    Result<std::string> text = ReadFile(f.baseline);
    if (!text.ok()) {
      return Status::InvalidArgument("--baseline " + text.status().message());
    }
    Result<HostBaseline> parsed = ParseBaseline(*text, f.baseline);
    if (!parsed.ok()) return Status::InvalidArgument("--baseline " + parsed.status().message());
    in.baseline = std::move(*parsed);
  }
  if (!f.runs.empty()) {
    Result<RunAnalysis> run = AnalyzeRunFiles(f.runs);
    if (!run.ok()) return Status::InvalidArgument("--run " + run.status().message());
    in.run = std::move(*run);
  }
  for (const std::string& path : f.nccl_logs) {
    Result<NcclLogFile> log = ReadNcclLogFile(path, "--nccl-log");
    if (!log.ok()) return Status::InvalidArgument(log.status().message());
    in.nccl_logs.push_back(std::move(*log));
  }
  return in;
}

// --data: the census and, without --quick, the storage bench beside the data.
void CheckDataset(const Flags& f, const Snapshot& snapshot, Triage& t) {
  if (f.data.empty()) {
    t.notes.push_back("io: the dataset and its storage were not checked; pass --data PATH");
    return;
  }
  CensusOptions options;
  options.residency_sample_files = f.quick ? 1000 : 10000;
  options.latency_sample_files = f.quick ? 100 : 1000;
  options.latency_budget_seconds = f.quick ? 0.3 : 1.5;
  Result<DatasetCensus> census = [&] {
    ProgressLine progress(fmt::format("walking {}...", f.data));
    return TakeCensus(f.data, options);
  }();
  TriageCensus(f.data, census, snapshot.after.memory.total_bytes, t);
  if (f.quick) {
    t.notes.push_back("io: --quick: no storage bench; run without it or `stallscope bench io " +
                      ShellQuote(f.data) + "`");
    return;
  }
  // The bench writes its test file beside the data: in PATH, or in the
  // directory of a file PATH.
  std::string dir = f.data;
  if (Status s = CheckIoBenchPath(dir); !s.ok()) {
    dir = f.data.find('/') == std::string::npos ? "." : f.data.substr(0, f.data.rfind('/'));
    if (dir.empty()) dir = "/";
  }
  if (Status s = CheckIoBenchPath(dir); !s.ok()) {
    t.notes.push_back("io: storage bench skipped: " + s.message());
    return;
  }
  IoBenchOptions bench;
  bench.path = dir;
  bench.size_bytes = kDoctorBenchBytes;
  bench.runtime_seconds = kDoctorBenchSeconds;
  bench.metadata_files = kDoctorBenchMetadataFiles;
  std::unique_ptr<ProgressLine> progress;
  bench.progress = [&progress](std::string_view text) {
    progress.reset();
    progress = std::make_unique<ProgressLine>(text);
  };
  Result<IoBenchResult> result = RunIoBench(bench);
  progress.reset();
  if (!result.ok()) {
    t.notes.push_back("io: storage bench of " + dir + ": " + result.status().message());
    return;
  }
  TriageStorageBench(*result, kDoctorBenchBytes, kDoctorBenchSeconds, t);
}

int Fail(const Status& s, bool usage) { return stallscope::Fail("doctor", s, usage); }

// --rules in the format asked for.
Result<std::string> RulesOutput(const Flags& f) {
  std::string format = f.format.empty() ? (f.json ? "json" : "text") : f.format;
  if (f.json && format != "json") {
    return Status::InvalidArgument("--json and --format " + format + ": give one of them");
  }
  if (!f.window.empty() && format != "prometheus") {
    return Status::InvalidArgument("--window is for --format prometheus");
  }
  if (format == "text") return RulesText();
  if (format == "json") return JsonText(RulesJson()) + "\n";
  if (format == "prometheus") {
    PrometheusRuleOptions options;
    if (!f.window.empty()) {
      Result<double> window = ParseAlertWindow(f.window);
      if (!window.ok()) return Status::InvalidArgument("--window " + window.status().message());
      options.window_seconds = *window;
    }
    return PrometheusRulesYaml(options);
  }
  return Status::InvalidArgument("--format " + format + ": expected text, json or prometheus");
}

}  // namespace

CommandRunner SetupDoctor(CLI::App& app) {
  auto flags = std::make_shared<Flags>();
  app.add_flag("--json", flags->json, "machine output (schema stallscope.report/1)");
  app.add_flag("--rules", flags->rules, "print the rule catalog: id, layer, threshold, source");
  app.add_option("--format", flags->format,
                 "with --rules: text (default), json, or prometheus (the triage as Prometheus "
                 "recording and alerting rules, deploy/prometheus/stallscope.rules.yml)");
  app.add_option("--window", flags->window,
                 "with --rules --format prometheus: the rate() window every duration is a "
                 "multiple of (default 5m)");
  CLI::Option* interval =
      app.add_option("--interval", flags->interval,
                     "seconds of sampling for swap and disk activity (--quick: 0.25)")
          ->capture_default_str();
  app.add_option("--peer", flags->peers,
                 "a host the job talks to (repeatable): the route to it is checked against "
                 "NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME, as MASTER_ADDR is");
  app.add_option("--data", flags->data,
                 "the dataset: its census (files, sizes, file system, page cache) and a short "
                 "storage bench beside it (256 MiB, 2 s a phase)");
  app.add_option("--nccl-log", flags->nccl_logs,
                 "an NCCL_DEBUG=INFO log of a job on this host (repeatable, or several files): "
                 "its network findings (sockets while RDMA is there, a loopback or container "
                 "interface) join the network layer");
  app.add_option("--run", flags->runs,
                 "a run file of `stallscope run`: its findings join the triage (repeatable: one "
                 "file per node of one job)")
      ->allow_extra_args(false);
  app.add_flag("--quick", flags->quick,
               "no active benchmark, a short sampling window: done in about a second");
  app.add_option("--html", flags->html, "also write the report as one self-contained HTML file");
  app.add_flag("--force", flags->force, "let --html overwrite an existing file");
  app.add_option("--baseline", flags->baseline,
                 "a baseline saved by --save-baseline: flag figures that fell below it");
  app.add_option("--save-baseline", flags->save_baseline,
                 "write this host's figures (memory, swap, disks, NICs, bench) as a baseline");
  app.add_option("--root", flags->root,
                 "read /proc, /sys and /dev under DIR instead of / (a copied host tree, a "
                 "test fixture)")
      ->capture_default_str();
  app.add_option("--drift", flags->drift_percent, "percent below the baseline that counts as drift")
      ->capture_default_str();
  return [flags, interval]() {
    const Flags& f = *flags;
    if (f.rules) {
      Result<std::string> out = RulesOutput(f);
      if (!out.ok()) return Fail(out.status(), true);
      std::fputs(out->c_str(), stdout);
      return kExitOk;
    }
    if (!f.format.empty() || !f.window.empty()) {
      return Fail(Status::InvalidArgument(
                      fmt::format("{} is for --rules (the doctor's own output: --json, --html)",
                                  f.format.empty() ? "--window" : "--format")),
                  true);
    }
    Result<Inputs> inputs = CheckInputs(f);
    if (!inputs.ok()) return Fail(inputs.status(), true);
    double window = f.quick && interval->count() == 0 ? kQuickIntervalSeconds : f.interval;

    const Root root(f.root);
    const net::RdmaBaseline rdma_before = net::ReadRdmaBaseline(root);
    Result<Snapshot> snapshot = [&] {
      ProgressLine progress(fmt::format("sampling the host for {:.1f} s...", window));
      return TakeSnapshot(root, SnapshotOptions{window});
    }();
    if (!snapshot.ok()) {
      return Fail(snapshot.status(), snapshot.status().code() == Status::Code::kInvalidArgument);
    }
    Triage t;
    t.notes = snapshot->notes;
    // The seed's order: memory, io, network, then distributed and code.
    TriageMemory(*snapshot, t);
    TriageHostDisks(*snapshot, t);
    CheckDataset(f, *snapshot, t);
    t.checked.push_back(Layer::kNetwork);
    t.Add(CheckNetwork(net::ObserveHostNetwork(root, *snapshot, f.peers, rdma_before)));
    if (!inputs->nccl_logs.empty()) {
      TriageNcclLogs(inputs->nccl_logs, ReadHostRdma(root, t.notes), t);
    }
    // --- gpu (owner: gpu): NVML findings (memory.gpu_near_full, code.*) ---
    if (snapshot->gpus.available) {
      t.Add(CheckGpuObservation(snapshot->gpus, GpuProcessNames(root, snapshot->gpus)));
    } else {
      t.notes.push_back("gpu: " + snapshot->gpus.absent_reason);
    }
    // --- end gpu ---
    if (inputs->run) TriageRun(std::move(*inputs->run), t);

    HostBaseline now = BaselineFromSnapshot(*snapshot, t.bench ? &*t.bench : nullptr);
    if (inputs->baseline) TriageBaseline(*inputs->baseline, now, f.drift_percent / 100, t);
    std::vector<std::pair<Layer, std::string>> why = WhyNotChecked(t);
    Report report = MakeReport(std::move(t.findings), t.checked, t.notes);

    if (!f.save_baseline.empty()) {
      if (Status s = WriteFileAtomically(f.save_baseline, BaselineToJson(now)); !s.ok()) {
        return Fail(s, false);
      }
    }
    if (!f.html.empty()) {
      std::string page = RenderDoctorHtml(*snapshot, report, t, why, now);
      if (Status s = WriteFileAtomically(f.html, page); !s.ok()) {
        return Fail(s, false);
      }
    }
    std::string out;
    if (f.json) {
      out = JsonText(DoctorJson(
                {&*snapshot, &report, &t, &why, f.baseline, f.drift_percent, f.save_baseline})) +
            "\n";
    } else {
      DoctorTextInput in{snapshot->hostname,
                         snapshot->time_utc,
                         snapshot->interval_seconds,
                         &report,
                         why,
                         t.facts};
      out = RenderDoctorText(in);
      if (!f.save_baseline.empty()) out += "baseline saved: " + f.save_baseline + "\n";
      if (!f.html.empty()) out += "html report: " + f.html + "\n";
    }
    std::fputs(out.c_str(), stdout);
    return kExitOk;
  };
}

}  // namespace stallscope
