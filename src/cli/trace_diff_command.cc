// `stallscope trace --diff`: checks the flags, reads both sides
// (app/trace_diff_files.h) and prints the diff.
#include "cli/trace_diff_command.h"

#include <cstdio>

#include "app/trace_diff_files.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "core/json_text.h"
#include "render/trace_diff.h"

namespace stallscope {

int RunTraceDiff(const TraceDiffFlags& flags) {
  if (flags.paths.size() != 2) {
    return Fail("trace",
                "--diff takes two traces, CONTROL then TEST (each a file or a directory of "
                "per-rank traces); got " +
                    std::to_string(flags.paths.size()),
                kExitUsage);
  }
  TraceDiffOptions options;
  if (!flags.step_range.empty()) {
    Result<TraceStepRange> range = ParseTraceStepRange(flags.step_range);
    if (!range.ok()) return Fail("trace", range.status(), /*usage=*/true);
    options.steps = *range;
  }
  Result<TraceDiff> diff = Status::Ok();
  {
    ProgressLine progress("reading the control and test traces...");
    diff = DiffTracePaths(flags.paths[0], flags.paths[1], flags.rank, options, flags.threads);
  }
  if (!diff.ok()) return Fail("trace", diff.status(), /*usage=*/false);
  std::string out =
      flags.json ? JsonText(TraceDiffToJson(*diff)) + "\n" : RenderTraceDiffText(*diff);
  std::fputs(out.c_str(), stdout);
  return kExitOk;
}

}  // namespace stallscope
