// `stallscope trace --diff CONTROL TEST [--json] [--rank N] [--step-range
// A:B]`: HTA's trace diff of two traces (each a file or a directory of
// per-rank traces), printed as text or stallscope.trace_diff/1 JSON
// (render/trace_diff.h). The trace command hands over to it.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace stallscope {

struct TraceDiffFlags {
  std::vector<std::string> paths;  // CONTROL, TEST
  bool json = false;
  std::optional<int> rank;
  std::string step_range;  // "" or A:B
  size_t threads = 0;      // --threads; 0: one a CPU
};

// The exit code.
int RunTraceDiff(const TraceDiffFlags& flags);

}  // namespace stallscope
