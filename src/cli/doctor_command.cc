// `stallscope doctor`: the ordered triage of this host (and of a recorded
// run): memory -> io -> network -> distributed -> code, each layer's status
// with its evidence, the verdict, the next check for every finding, and the
// suspects-and-quick-checks table. Options add the dataset census and a
// short storage bench (--data), a recorded run's findings (--run), a saved
// host baseline to compare with (--baseline) or to write (--save-baseline),
// and the HTML page (--html). --quick runs no active benchmark. --from F
// judges the node of a capture (app/node_capture.h) instead of this host.
// Every input is checked before anything is sampled, so bad usage costs
// nothing and leaves no file behind.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "analyze/host/baseline.h"
#include "analyze/host/doctor_triage.h"
#include "app/doctor_host.h"
#include "app/node_capture.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "core/atomic_file.h"
#include "core/json_text.h"
#include "render/doctor_json.h"
#include "render/doctor_text.h"
#include "render/html_report.h"
#include "render/report.h"

namespace stallscope {
namespace {

struct Flags {
  DoctorRequest request;
  bool json = false;
  bool rules = false;
  std::string format;      // --rules --format text|json|prometheus
  std::string window;      // --rules --format prometheus --window 5m
  std::string fail_on;     // --fail-on warning|critical: a pre-flight gate
  std::string root = "/";  // --root DIR: a fixture or copied tree
  std::string from;        // --from F: a capture (snapshot --capture)
};

constexpr double kQuickIntervalSeconds = 0.25;

int Fail(const Status& s, bool usage) { return stallscope::Fail("doctor", s, usage); }

// --fail-on's level: warning or critical; anything else is bad usage.
Result<std::optional<Severity>> FailOnLevel(const std::string& value) {
  if (value.empty()) return std::optional<Severity>();
  if (value == "warning") return std::optional<Severity>(Severity::kWarning);
  if (value == "critical") return std::optional<Severity>(Severity::kCritical);
  return Status::InvalidArgument("--fail-on " + value + ": expected warning or critical");
}

// Whether any finding reached `level` (a warning gate trips on a critical).
bool ReachedLevel(const Report& report, Severity level) {
  for (const Finding& finding : report.findings) {
    if (finding.severity >= level) return true;
  }
  return false;
}

}  // namespace

CommandRunner SetupDoctor(CLI::App& app) {
  auto flags = std::make_shared<Flags>();
  app.add_flag("--json", flags->json, "machine output (schema stallscope.report/1)");
  app.add_flag("--rules", flags->rules,
               "print the rule catalog: id, layer, threshold, reasoning, reference");
  app.add_option("--format", flags->format,
                 "with --rules: text (default), json, or prometheus (the triage as Prometheus "
                 "recording and alerting rules, deploy/prometheus/stallscope.rules.yml)");
  app.add_option("--window", flags->window,
                 "with --rules --format prometheus: the rate() window every duration is a "
                 "multiple of (default 5m)");
  CLI::Option* interval =
      app.add_option("--interval", flags->request.interval_seconds,
                     "seconds of sampling for swap and disk activity (--quick: 0.25)")
          ->capture_default_str();
  app.add_option("--peer", flags->request.peers,
                 "a host the job talks to (repeatable): the route to it is checked against "
                 "NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME, as MASTER_ADDR is");
  app.add_option("--data", flags->request.data,
                 "the dataset: its census (files, sizes, file system, page cache) and a short "
                 "storage bench beside it (256 MiB, 2 s a phase)");
  app.add_option("--nccl-log", flags->request.nccl_logs,
                 "an NCCL_DEBUG=INFO log of a job on this host (repeatable, or several files): "
                 "its network findings (sockets while RDMA is there, a loopback or container "
                 "interface) join the network layer");
  app.add_option("--run", flags->request.runs,
                 "a run file of `stallscope run`: its findings join the triage (repeatable: one "
                 "file per node of one job)")
      ->allow_extra_args(false);
  app.add_flag("--quick", flags->request.quick,
               "no active benchmark, a short sampling window: done in about a second");
  app.add_option("--html", flags->request.html,
                 "also write the report as one self-contained HTML file");
  app.add_flag("--force", flags->request.force, "let --html overwrite an existing file");
  app.add_option("--baseline", flags->request.baseline,
                 "a baseline saved by --save-baseline: flag figures that fell below it");
  app.add_option("--save-baseline", flags->request.save_baseline,
                 "write this host's figures (memory, swap, disks, NICs, bench) as a baseline");
  app.add_option("--root", flags->root,
                 "read /proc, /sys and /dev under DIR instead of / (a copied host tree, a "
                 "test fixture)")
      ->capture_default_str();
  app.add_option("--from", flags->from,
                 "judge the node of a capture (written by `snapshot --capture`) instead of this "
                 "host: the same triage, with what only a live node can measure said not checked");
  app.add_option("--fail-on", flags->fail_on,
                 "warning or critical: exit 4 when a finding reaches that level (a pre-flight "
                 "gate for a job script or CI); without it doctor exits 0 whatever it found");
  app.add_option("--drift", flags->request.drift_percent,
                 "percent below the baseline that counts as drift")
      ->capture_default_str();
  return [flags, interval]() {
    const Flags& f = *flags;
    Result<std::optional<Severity>> fail_on = FailOnLevel(f.fail_on);
    if (!fail_on.ok()) return Fail(fail_on.status(), true);
    if (f.rules && *fail_on) {
      return Fail(Status::InvalidArgument("--fail-on is for the doctor's check, not --rules"),
                  true);
    }
    if (f.rules) {
      Result<std::string> out = RulesOutput(f.format, f.json, f.window);
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
    DoctorRequest request = f.request;
    if (request.quick && interval->count() == 0) request.interval_seconds = kQuickIntervalSeconds;
    Root root(f.root);
    std::unique_ptr<OpenedCapture> capture;
    if (!f.from.empty()) {
      if (f.root != "/") {
        return Fail(Status::InvalidArgument("--from reads a capture: not with --root"), true);
      }
      Result<std::unique_ptr<OpenedCapture>> opened = OpenedCapture::Open(f.from);
      if (!opened.ok()) return Fail(opened.status(), false);
      capture = std::move(*opened);
      root = capture->root();
      request.replay = capture->replay();
    }
    Result<DoctorInputs> inputs = CheckDoctorInputs(root, request);
    if (!inputs.ok()) return Fail(inputs.status(), true);
    std::shared_ptr<ProgressLine> line;
    auto progress = [&line](std::string_view text) {
      line.reset();
      if (!text.empty()) line = std::make_shared<ProgressLine>(text);
    };
    Result<HostDiagnosis> diagnosis = DiagnoseHost(root, request, std::move(*inputs), progress);
    if (!diagnosis.ok()) {
      const Status& s = diagnosis.status();
      return Fail(s, s.code() == Status::Code::kInvalidArgument);
    }
    const Snapshot* snapshot = &diagnosis->snapshot;
    const Report& report = diagnosis->report;
    const Triage& t = diagnosis->triage;
    const std::vector<std::pair<Layer, std::string>>& why = diagnosis->why_not_checked;
    const HostBaseline& now = diagnosis->now;

    if (!f.request.save_baseline.empty()) {
      if (Status s = WriteFileAtomically(f.request.save_baseline, BaselineToJson(now)); !s.ok()) {
        return Fail(s, false);
      }
    }
    if (!f.request.html.empty()) {
      std::string page = RenderDoctorHtml(*snapshot, report, t, why, now);
      if (capture) page = capture->Named(std::move(page));
      if (Status s = WriteFileAtomically(f.request.html, page); !s.ok()) {
        return Fail(s, false);
      }
    }
    std::string out;
    if (f.json) {
      out = JsonText(DoctorJson({snapshot, &report, &t, &why, f.request.baseline,
                                 f.request.drift_percent, f.request.save_baseline})) +
            "\n";
    } else {
      DoctorTextInput in{snapshot->hostname,
                         snapshot->time_utc,
                         snapshot->interval_seconds,
                         &report,
                         why,
                         t.facts};
      out = RenderDoctorText(in);
      if (!f.request.save_baseline.empty())
        out += "baseline saved: " + f.request.save_baseline + "\n";
      if (!f.request.html.empty()) out += "html report: " + f.request.html + "\n";
    }
    if (capture) out = capture->Named(std::move(out));
    std::fputs(out.c_str(), stdout);
    if (*fail_on && ReachedLevel(report, **fail_on)) return kExitGateReached;
    return kExitOk;
  };
}

}  // namespace stallscope
