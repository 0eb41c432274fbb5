// `stallscope snapshot [--interval S] [--json]`: the host's baseline.
// `--capture F [--force]` also writes the node's evidence into one archive
// and prints the snapshot read back from it; `--from F` shows a capture
// taken elsewhere (app/node_capture.h).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "app/node_capture.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "core/file.h"
#include "core/json_text.h"
#include "probe/snapshot.h"
#include "render/snapshot.h"

namespace stallscope {
namespace {

struct Flags {
  double interval = 1.0;
  bool json = false;
  std::string root = "/";
  std::string capture;  // --capture F
  bool force = false;
  std::string from;  // --from F
};

int Fail(const Status& s) {
  bool usage = s.code() == Status::Code::kInvalidArgument;
  std::fprintf(stderr, "stallscope snapshot: %s\n", s.message().c_str());
  return usage ? kExitUsage : kExitCouldNotRun;
}

// --capture: the capture taken and written; --from (and --capture, once
// written): the snapshot read back from the file.
Result<Snapshot> SnapshotAsAsked(const Flags& f, CLI::Option* root_option,
                                 std::unique_ptr<OpenedCapture>& capture) {
  if (!f.from.empty() && (!f.capture.empty() || root_option->count() > 0)) {
    return Status::InvalidArgument("--from reads a capture: not with --capture or --root");
  }
  if (f.force && f.capture.empty()) return Status::InvalidArgument("--force is for --capture");
  if (f.capture.empty() && f.from.empty()) {
    ProgressLine progress(fmt::format("sampling the host for {:.1f} s...", f.interval));
    return TakeSnapshot(Root(f.root), SnapshotOptions{f.interval});
  }
  if (!f.capture.empty()) {
    if (!(f.interval > 0) || f.interval > 3600) {
      return Status::InvalidArgument(
          fmt::format("--interval {}: must be above 0 and at most 3600 seconds", f.interval));
    }
    std::shared_ptr<ProgressLine> line;
    auto progress = [&line](std::string_view text) {
      line.reset();
      if (!text.empty()) line = std::make_shared<ProgressLine>(text);
    };
    Result<CaptureWritten> written =
        TakeCapture(Root(f.root), f.capture, f.force, f.interval, progress);
    if (!written.ok()) return written.status();
    std::fprintf(stderr, "capture written: %s (%zu entries, %.1f KiB)\n", f.capture.c_str(),
                 written->entries, static_cast<double>(written->bytes) / 1024);
  }
  Result<std::unique_ptr<OpenedCapture>> opened =
      OpenedCapture::Open(f.from.empty() ? f.capture : f.from);
  if (!opened.ok()) return opened.status();
  capture = std::move(*opened);
  return SnapshotFromCapture(*capture);
}

}  // namespace

CommandRunner SetupSnapshot(CLI::App& app) {
  auto flags = std::make_shared<Flags>();
  app.add_option("--interval", flags->interval,
                 "seconds between the two samples that rates (iostat -x, swap) come from")
      ->capture_default_str();
  app.add_flag("--json", flags->json, "machine output (schema stallscope.snapshot/1)");
  CLI::Option* root =
      app.add_option("--root", flags->root,
                     "read /proc, /sys and /dev under DIR instead of / (a copied host tree, a "
                     "test fixture)")
          ->capture_default_str();
  app.add_option("--capture", flags->capture,
                 "also write this node's evidence (the files the probes read, NVML's answers) "
                 "into FILE, a .tar.gz that `doctor --from` and `snapshot --from` read anywhere; "
                 "prints the snapshot read back from it");
  app.add_flag("--force", flags->force, "let --capture overwrite an existing file");
  app.add_option("--from", flags->from,
                 "show the node of a capture (written by --capture) instead of this host");
  return [flags, root]() {
    std::unique_ptr<OpenedCapture> capture;
    Result<Snapshot> snapshot = SnapshotAsAsked(*flags, root, capture);
    if (!snapshot.ok()) return Fail(snapshot.status());
    std::string out =
        flags->json ? JsonText(SnapshotToJson(*snapshot)) + "\n" : RenderSnapshotText(*snapshot);
    if (capture) out = capture->Named(std::move(out));
    std::fputs(out.c_str(), stdout);
    return kExitOk;
  };
}

}  // namespace stallscope
