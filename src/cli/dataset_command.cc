// `stallscope dataset PATH [--json] [--threads N]`: the census of a dataset
// folder (files, sizes, depth, file system, page cache, metadata latency) and
// the io findings on it (small files, remote file system, cold cache).
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <ctime>
#include <memory>

#include "analyze/dataset_rules.h"
#include "analyze/report.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "core/file.h"
#include "core/host_clock.h"
#include "core/json_text.h"
#include "data/census.h"
#include "probe/meminfo.h"
#include "render/dataset.h"

namespace stallscope {
CommandRunner SetupDataset(CLI::App& app) {
  struct Flags {
    std::string path;
    bool json = false;
    int threads = 0;
  };
  auto flags = std::make_shared<Flags>();
  app.add_option("PATH", flags->path, "the dataset folder (or one file)")->required();
  app.add_flag("--json", flags->json,
               "machine output (schema stallscope.report/1 plus a \"dataset\" object)");
  app.add_option("--threads", flags->threads,
                 "walker threads (default: twice the CPUs, 4 to 32; more helps on network file "
                 "systems)")
      ->check(CLI::Range(1, 1024));
  return [flags]() {
    CensusOptions options;
    options.threads = flags->threads;
    Result<DatasetCensus> census = [&] {
      ProgressLine progress(fmt::format("walking {}...", flags->path));
      return TakeCensus(flags->path, options);
    }();
    if (!census.ok()) {
      const Status::Code code = census.status().code();
      const bool usage = code == Status::Code::kNotFound || code == Status::Code::kInvalidArgument;
      std::fprintf(stderr, "stallscope dataset: %s\n", census.status().message().c_str());
      return usage ? kExitUsage : kExitCouldNotRun;
    }
    DatasetContext context;
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
    std::string out;
    if (flags->json) {
      ReportHeader header{"dataset", HostName(), UtcNow(), census->walk_seconds};
      out = JsonText(DatasetToJson(header, *census, report)) + "\n";
    } else {
      out = RenderDatasetText(*census, report);
    }
    std::fputs(out.c_str(), stdout);
    return kExitOk;
  };
}

}  // namespace stallscope
