// `stallscope bench io PATH [--size 20G] [--runtime 30] [--jobs 4]
// [--iodepth 1] [--files 4096] [--keep] [--buffered] [--json]
// [--min-seq-mbps 500] [--min-rand-iops 5000]`: wires the flags to
// RunIoBench (bench/io_bench.h), the verdict to CheckStorageSpeed and prints.
// SIGINT/SIGTERM end the run early; the test file is removed all the same.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <memory>

#include "analyze/host/storage_rules.h"
#include "analyze/report.h"
#include "bench/io_bench.h"
#include "cli/bench_command.h"
#include "cli/progress.h"
#include "core/byte_size.h"
#include "core/host_clock.h"
#include "core/json_text.h"
#include "render/bench_io.h"
#include "render/report.h"

namespace stallscope {
namespace {

std::atomic<bool> g_stop{false};

extern "C" void OnStopSignal(int) { g_stop.store(true); }

// SIGINT and SIGTERM set g_stop while it lives.
class StopOnSignals {
 public:
  StopOnSignals() {
    struct sigaction action {};
    action.sa_handler = OnStopSignal;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGINT, &action, &old_int_);
    ::sigaction(SIGTERM, &action, &old_term_);
  }
  ~StopOnSignals() {
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
  }

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

}  // namespace

CommandRunner SetupBenchIo(CLI::App& app) {
  struct Flags {
    std::string path;
    std::string size = "20G";
    IoBenchOptions options;
    double min_seq_mbps = kStorageSlowSequentialBytesPerSecond / 1e6;
    double min_rand_iops = kStorageSlowRandomIops;
    bool json = false;
  };
  auto flags = std::make_shared<Flags>();
  IoBenchOptions& o = flags->options;
  app.add_option("PATH", flags->path, "directory on the storage to test")->required();
  app.add_option("--size", flags->size,
                 "test file size (binary units as fio: 20G = 20 GiB); at most half the free space")
      ->capture_default_str();
  app.add_option("--runtime", o.runtime_seconds, "seconds of each read phase (fio --runtime)")
      ->capture_default_str();
  app.add_option("--jobs", o.jobs, "parallel readers (fio --numjobs)")->capture_default_str();
  app.add_option("--iodepth", o.iodepth, "reads in flight per job (fio --iodepth)")
      ->capture_default_str();
  app.add_option("--files", o.metadata_files,
                 "small files for the metadata phase (create/open/stat/readdir/unlink); 0 skips it")
      ->capture_default_str();
  app.add_flag("--keep", o.keep, "keep the test file for the next run (it is reused when present)");
  app.add_flag("--buffered", o.buffered,
               "read through the page cache (after dropping the file's pages) even where "
               "O_DIRECT works");
  app.add_option("--min-seq-mbps", flags->min_seq_mbps,
                 "sequential threshold in MB/s for io.storage_slow (default 500)")
      ->capture_default_str();
  app.add_option("--min-rand-iops", flags->min_rand_iops,
                 "random 4 KiB threshold in IOPS for io.storage_slow (default 5000)")
      ->capture_default_str();
  app.add_flag(
      "--json", flags->json,
      "machine output: stallscope.report/1 with a \"bench\" object (stallscope.bench_io/1)");
  return [flags]() {
    auto usage = [](const std::string& message) {
      std::fprintf(stderr, "stallscope bench io: %s\n", message.c_str());
      return kExitUsage;
    };
    IoBenchOptions options = flags->options;
    options.path = flags->path;
    std::optional<uint64_t> size = ParseByteSize(flags->size);
    if (!size)
      return usage(fmt::format("--size {}: not a size (examples: 20G, 512M, 1GiB)", flags->size));
    options.size_bytes = *size;
    if (!(flags->min_seq_mbps >= 0))
      return usage(fmt::format("--min-seq-mbps {}: must be >= 0", flags->min_seq_mbps));
    if (!(flags->min_rand_iops >= 0))
      return usage(fmt::format("--min-rand-iops {}: must be >= 0", flags->min_rand_iops));
    if (Status s = ValidateIoBenchOptions(options); !s.ok()) return usage(s.message());
    if (Status s = CheckIoBenchPath(options.path); !s.ok()) return usage(s.message());
    StorageThresholds thresholds{flags->min_seq_mbps * 1e6, flags->min_rand_iops};

    g_stop.store(false);
    StopOnSignals signals;
    options.stop = &g_stop;
    std::unique_ptr<ProgressLine> progress;
    options.progress = [&progress](std::string_view text) {
      progress.reset();
      progress = std::make_unique<ProgressLine>(text);
    };
    std::string time_utc = UtcNow();
    Result<IoBenchResult> result = RunIoBench(options);
    progress.reset();
    if (!result.ok()) {
      if (g_stop.load()) {
        std::fprintf(stderr, "stallscope bench io: interrupted; the test file %s\n",
                     options.keep ? "is kept if it was complete" : "was removed");
        return kExitCouldNotRun;
      }
      std::fprintf(stderr, "stallscope bench io: %s\n", result.status().message().c_str());
      bool bad_flag = result.status().code() == Status::Code::kInvalidArgument;
      return bad_flag ? kExitUsage : kExitCouldNotRun;
    }
    Report report =
        ReportOf(CheckStorageSpeed(SpeedOf(*result), thresholds), {Layer::kIo}, result->notes);
    ReportHeader header{"bench io", HostName(), time_utc, result->total_seconds};
    std::string out;
    if (flags->json) {
      nlohmann::ordered_json json = ReportToJson(header, report);
      json["bench"] = IoBenchToJson(*result, thresholds);
      out = JsonText(json) + "\n";
    } else {
      out = RenderIoBenchText(*result, thresholds) + "\n" + RenderReportText(header, report);
    }
    std::fputs(out.c_str(), stdout);
    return kExitOk;
  };
}

}  // namespace stallscope
