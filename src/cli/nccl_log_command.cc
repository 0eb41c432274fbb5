// `stallscope nccl-log FILE|- [--json] [--root DIR]`: reads an NCCL_DEBUG=INFO
// log (a file, or stdin for "-") in one streaming pass and prints the ranks'
// versions, interfaces, transports and init, then the findings. The RDMA
// ports of the host under --root (this host by default) are compared with the
// log's lines from the same hostname for network.rdma_unused.
#include <fcntl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <memory>

#include "analyze/nccl_log/rules.h"
#include "analyze/report.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "core/file.h"
#include "core/host_clock.h"
#include "core/json_text.h"
#include "formats/nccl_log/files.h"
#include "formats/nccl_log/nccl_log.h"
#include "render/nccl_log.h"

namespace stallscope {

CommandRunner SetupNcclLog(CLI::App& app) {
  struct Flags {
    std::string file;
    bool json = false;
    std::string root = "/";
  };
  auto flags = std::make_shared<Flags>();
  app.add_option("FILE", flags->file, "the log (NCCL_DEBUG=INFO output); - reads stdin")
      ->required();
  app.add_flag("--json", flags->json, "machine output (schema stallscope.report/1 plus \"nccl\")");
  app.add_option("--root", flags->root,
                 "the host whose RDMA ports the log is compared with (a fixture tree in tests)")
      ->capture_default_str();
  return [flags]() {
    bool stdin_input = flags->file == "-";
    std::string source = stdin_input ? "stdin" : flags->file;
    int fd = STDIN_FILENO;
    if (!stdin_input) {
      fd = open(flags->file.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) {
        Status s = Status::FromErrno("cannot open " + flags->file, errno);
        std::fprintf(stderr, "stallscope nccl-log: %s\n", s.message().c_str());
        return kExitCouldNotRun;
      }
    }
    Result<NcclLogSummary> log = [&] {
      ProgressLine progress("reading " + source + "...");
      return ReadNcclLog(fd, source);
    }();
    if (!stdin_input) close(fd);
    if (!log.ok()) {
      std::fprintf(stderr, "stallscope nccl-log: %s\n", log.status().message().c_str());
      return kExitCouldNotRun;
    }
    std::vector<std::string> notes;
    Root root(flags->root);
    std::optional<HostRdmaPorts> host = ReadHostRdma(root, notes);
    if (host) {
      bool in_log = false;
      for (const NcclProcess& p : log->processes) in_log |= p.host == host->hostname;
      if (!in_log && !log->processes.empty()) {
        notes.push_back("this host (" + host->hostname +
                        ") is not in the log: its RDMA ports were not compared with it");
      }
    }
    if (log->info_lines == 0 && log->nccl_lines > 0) {
      notes.push_back(
          "no NCCL INFO lines: run the job with NCCL_DEBUG=INFO for versions, "
          "interfaces, transports and init");
    }
    notes.push_back("memory and io layers are not judged from an NCCL log");
    FindingsWithNotes checked = CheckNcclLog(*log, host, source);
    notes.insert(notes.end(), checked.notes.begin(), checked.notes.end());
    Report report =
        MakeReport(std::move(checked.findings), {Layer::kNetwork, Layer::kDistributed}, notes);
    PreferNcclCause(report);
    ReportHeader header{"nccl-log", host ? host->hostname : "", UtcNow(), 0};
    std::string out = flags->json ? JsonText(NcclLogToJson(source, *log, header, report)) + "\n"
                                  : RenderNcclLogText(source, *log, header, report);
    std::fputs(out.c_str(), stdout);
    return kExitOk;
  };
}

}  // namespace stallscope
