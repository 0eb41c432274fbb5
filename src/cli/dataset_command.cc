// `stallscope dataset PATH [--json] [--threads N]`: the census of a dataset
// folder (files, sizes, depth, file system, page cache, metadata latency) and
// the io findings on it (small files, remote file system, cold cache).
// On a remote mount the census runs in a child process with an idle
// deadline (probe/remote_path.h): each entry the walk reads and each sampled
// file restarts it, so a large live dataset completes while a dead server
// costs one deadline after its last answer; the command then reports what
// the mount table knows, without the census.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <ctime>
#include <memory>

#include "analyze/host/dataset_rules.h"
#include "analyze/report.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "core/child_call.h"
#include "core/file.h"
#include "core/host_clock.h"
#include "core/json_text.h"
#include "data/census.h"
#include "probe/meminfo.h"
#include "probe/remote_path.h"
#include "render/dataset.h"

namespace stallscope {
namespace {

struct DatasetFlags {
  std::string path;
  bool json = false;
  int threads = 0;
  int workers = 0;  // the job's DataLoader num_workers; 0: assume kAssumedLoaderWorkers
};

int Print(const ChildAnswer& answer) {
  std::fputs(answer.err.c_str(), stderr);
  std::fputs(answer.out.c_str(), stdout);
  return answer.exit_code;
}

// The census (or, when `given`, that one) judged and rendered: what the
// command prints, and its exit code.
ChildAnswer DatasetAnswer(const DatasetFlags& flags, const ChildProgress* child,
                          const DatasetCensus* given) {
  Result<DatasetCensus> census = given ? Result<DatasetCensus>(*given) : [&] {
    CensusOptions options;
    options.threads = flags.threads;
    if (child != nullptr) {
      options.step = [child](std::string_view what) { child->Step(what); };
      options.advance = [child] { child->Advance(); };
    }
    return TakeCensus(flags.path, options);
  }();
  if (!census.ok()) {
    const Status::Code code = census.status().code();
    const bool usage = code == Status::Code::kNotFound || code == Status::Code::kInvalidArgument;
    return {usage ? kExitUsage : kExitCouldNotRun, "",
            "stallscope dataset: " + census.status().message() + "\n"};
  }
  DatasetContext context;
  if (flags.workers > 0) context.loader_workers = flags.workers;
  std::vector<std::string> notes = census->notes;
  if (Result<MemInfo> memory = ReadMemInfo(Root("/")); memory.ok()) {
    context.memory_total_bytes = memory->total_bytes;
  } else {
    notes.push_back("memory size unknown (" + memory.status().message() +
                    "): io.cold_cache assumes the data fits in the page cache");
  }
  if (census->residency.sampled) {
    notes.push_back(fmt::format("page-cache residency from a random sample of {} of {} files",
                                census->residency.files_checked + census->residency.files_failed,
                                census->files));
  }
  Report report = ReportOf(CheckDataset(*census, context), {Layer::kIo}, notes);
  if (flags.json) {
    ReportHeader header{"dataset", HostName(), UtcNow(), census->walk_seconds};
    return {kExitOk, JsonText(DatasetToJson(header, *census, report)) + "\n", ""};
  }
  return {kExitOk, RenderDatasetText(*census, report), ""};
}

}  // namespace

CommandRunner SetupDataset(CLI::App& app) {
  auto flags = std::make_shared<DatasetFlags>();
  app.add_option("PATH", flags->path, "the dataset folder (or one file)")->required();
  app.add_flag("--json", flags->json,
               "machine output (schema stallscope.report/1 plus a \"dataset\" object)");
  app.add_option("--threads", flags->threads,
                 "walker threads (default: twice the CPUs, 4 to 32; more helps on network file "
                 "systems)")
      ->check(CLI::Range(1, 1024));
  app.add_option("--workers", flags->workers,
                 "the job's DataLoader num_workers, for the per-epoch cost on a network file "
                 "system (default: 8)")
      ->check(CLI::Range(1, 1024));
  return [flags]() {
    std::optional<MountEntry> remote = RemoteMountHolding(Root("/"), flags->path);
    if (!remote) return Print(DatasetAnswer(*flags, nullptr, nullptr));
    const double deadline = RemoteCallDeadlineSeconds();
    Result<ChildAnswer> answer = [&] {
      ProgressLine progress(fmt::format("walking {}...", flags->path));
      return CallInChild(
          [&](const ChildProgress& child) { return DatasetAnswer(*flags, &child, nullptr); },
          deadline);
    }();
    if (answer.ok()) return Print(*answer);
    // The census is missing: say so, with what the mount table knows.
    DatasetCensus census;
    census.path = flags->path;
    census.resolved_path = flags->path;
    census.fs_type = remote->fs_type;
    census.mount_point = remote->mount_point;
    census.source = remote->source;
    census.mount_options = remote->mount_options + "," + remote->super_options;
    census.remote = true;
    const std::string note = fmt::format(
        "no answer from the {} within {:.0f} s to the {}: the census (files, sizes, page cache, "
        "open/stat latency) is missing; the file server or the link to it may be down",
        DescribeMount(*remote), deadline, answer.status().message());
    std::fprintf(stderr, "stallscope dataset: %s\n", note.c_str());
    census.notes.push_back(note);
    return Print(DatasetAnswer(*flags, nullptr, &census));
  };
}

}  // namespace stallscope
