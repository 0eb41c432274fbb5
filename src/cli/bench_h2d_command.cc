// `stallscope bench h2d [--min-size 1MiB] [--max-size 1GiB] [--gpu N]
// [--json]`: loads the CUDA runtime (gpu/cuda_runtime.h), runs RunH2dBench
// and prints the table and verdict (render/bench_h2d.h). Without the CUDA
// runtime or without a GPU it prints one line and exits kExitNoGpu, so a
// script tells "nothing to measure here" from a failure.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <ctime>
#include <memory>

#include "analyze/report.h"
#include "bench/cuda_h2d.h"
#include "bench/cuda_h2d_run.h"
#include "bench/cuda_runtime.h"
#include "cli/bench_command.h"
#include "cli/progress.h"
#include "core/byte_size.h"
#include "core/host_clock.h"
#include "core/json_text.h"
#include "render/bench_h2d.h"
#include "render/report.h"

namespace stallscope {

CommandRunner SetupBenchH2d(CLI::App& app) {
  struct Flags {
    std::string min_size = "1MiB", max_size = "1GiB";
    std::optional<int> gpu;
    bool json = false;
  };
  auto f = std::make_shared<Flags>();
  app.add_option("--min-size", f->min_size, "smallest copy (sizes grow x4 up to --max-size)")
      ->capture_default_str();
  app.add_option("--max-size", f->max_size, "largest copy; host and GPU buffers of this size")
      ->capture_default_str();
  app.add_option("--gpu", f->gpu, "only this GPU (CUDA index; default: every GPU)");
  app.add_flag(
      "--json", f->json,
      "machine output: stallscope.report/1 with a \"bench\" object (stallscope.bench_h2d/1)");
  return [f]() {
    auto usage = [](const std::string& message) {
      std::fprintf(stderr, "stallscope bench h2d: %s\n", message.c_str());
      return kExitUsage;
    };
    H2dOptions options;
    std::optional<uint64_t> min = ParseByteSize(f->min_size);
    if (!min || *min == 0)
      return usage(fmt::format("--min-size {}: not a size > 0 (examples: 1MiB, 64K)", f->min_size));
    std::optional<uint64_t> max = ParseByteSize(f->max_size);
    if (!max || *max == 0)
      return usage(
          fmt::format("--max-size {}: not a size > 0 (examples: 1GiB, 256M)", f->max_size));
    options.min_size_bytes = *min;
    options.max_size_bytes = *max;
    if (Result<std::vector<uint64_t>> sizes = H2dSizes(*min, *max); !sizes.ok())
      return usage(sizes.status().message());
    if (f->gpu && *f->gpu < 0) return usage(fmt::format("--gpu {}: must be >= 0", *f->gpu));
    options.device = f->gpu;

    Result<std::unique_ptr<CudaRuntime>> cuda = CudaRuntime::Load();
    if (!cuda.ok()) {
      std::fprintf(stderr, "stallscope bench h2d: %s\n", cuda.status().message().c_str());
      return kExitNoGpu;
    }
    std::unique_ptr<ProgressLine> progress;
    options.progress = [&progress](std::string_view text) {
      progress.reset();
      progress = std::make_unique<ProgressLine>(text);
    };
    std::string time_utc = UtcNow();
    Result<H2dResult> result = RunH2dBench(**cuda, options);
    progress.reset();
    if (!result.ok()) {
      std::fprintf(stderr, "stallscope bench h2d: %s\n", result.status().message().c_str());
      if (result.status().code() == Status::Code::kInvalidArgument) return kExitUsage;
      return kExitNoGpu;
    }
    bool measured = false;
    std::vector<std::string> notes;
    for (const H2dGpu& gpu : result->gpus) {
      measured = measured || !gpu.samples.empty();
      for (const std::string& note : gpu.notes)
        notes.push_back(fmt::format("GPU {}: {}", gpu.index, note));
    }
    Report report = MakeReport({}, {}, notes);
    ReportHeader header{"bench h2d", HostName(), time_utc, result->total_seconds};
    std::string out;
    if (f->json) {
      nlohmann::ordered_json json = ReportToJson(header, report);
      json["bench"] = H2dToJson(*result);
      out = JsonText(json) + "\n";
    } else {
      out = RenderH2dText(*result);
    }
    std::fputs(out.c_str(), stdout);
    return measured ? kExitOk : kExitCouldNotRun;
  };
}

}  // namespace stallscope
