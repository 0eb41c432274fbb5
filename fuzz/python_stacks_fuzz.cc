// libFuzzer target: ParseFaulthandlerDump takes any text (a stacks file a
// rank's faulthandler wrote, cut anywhere) and stays within its bounds; the
// frame pickers take what it gives.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "probe/python_stacks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto threads = stallscope::ParseFaulthandlerDump(text);
  if (threads.size() > stallscope::kMaxStackThreads) std::abort();
  for (const auto& t : threads) {
    if (t.frames.size() > stallscope::kMaxStackFrames) std::abort();
    if (auto f = stallscope::JobFrame(t)) (void)f->Where();
    (void)stallscope::InCollectiveFrame(t);
  }
  (void)stallscope::MainThreadStack(threads, size);
  return 0;
}
