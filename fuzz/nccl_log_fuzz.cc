// libFuzzer target: the streaming NCCL log parser and its rules. The input is
// fed whole and, a second time, in uneven chunks, which must give the same
// summary (the chunk boundaries fall mid-line).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "analyze/nccl_log.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  stallscope::NcclLogSummary whole = stallscope::ParseNcclLog(text);
  stallscope::NcclLogParser parser;
  size_t step = 1 + (size % 13);
  for (size_t at = 0; at < size; at += step) parser.Feed(text.substr(at, step));
  stallscope::NcclLogSummary chunked = parser.Finish();
  if (whole.nccl_lines != chunked.nccl_lines || whole.ranks.size() != chunked.ranks.size() ||
      whole.warn_lines != chunked.warn_lines || whole.bytes != chunked.bytes) {
    abort();
  }
  stallscope::HostRdmaPorts host{"node1", {"mlx5_0:1 InfiniBand"}};
  (void)stallscope::CheckNcclLog(whole, host);
  (void)stallscope::CheckNcclLog(whole, std::nullopt);
  for (const auto& p : whole.processes) (void)p.Name();
  (void)stallscope::ParseNcclInterfaces(text);
  return 0;
}
