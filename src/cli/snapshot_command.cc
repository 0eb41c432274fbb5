// `stallscope snapshot [--interval S] [--json]`: the host's baseline.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cli/progress.h"
#include "core/file.h"
#include "core/json_text.h"
#include "probe/snapshot.h"
#include "render/snapshot.h"

namespace stallscope {

CommandRunner SetupSnapshot(CLI::App& app) {
  struct Flags {
    double interval = 1.0;
    bool json = false;
    std::string root = "/";
  };
  auto flags = std::make_shared<Flags>();
  app.add_option("--interval", flags->interval,
                 "seconds between the two samples that rates (iostat -x, swap) come from")
      ->capture_default_str();
  app.add_flag("--json", flags->json, "machine output (schema stallscope.snapshot/1)");
  app.add_option("--root", flags->root,
                 "read /proc, /sys and /dev under DIR instead of / (a copied host tree, a "
                 "test fixture)")
      ->capture_default_str();
  return [flags]() {
    Result<Snapshot> snapshot = [&] {
      ProgressLine progress(fmt::format("sampling the host for {:.1f} s...", flags->interval));
      return TakeSnapshot(Root(flags->root), SnapshotOptions{flags->interval});
    }();
    if (!snapshot.ok()) {
      bool usage = snapshot.status().code() == Status::Code::kInvalidArgument;
      std::fprintf(stderr, "stallscope snapshot: %s\n", snapshot.status().message().c_str());
      return usage ? kExitUsage : kExitCouldNotRun;
    }
    std::string out =
        flags->json ? JsonText(SnapshotToJson(*snapshot)) + "\n" : RenderSnapshotText(*snapshot);
    std::fputs(out.c_str(), stdout);
    return kExitOk;
  };
}

}  // namespace stallscope
