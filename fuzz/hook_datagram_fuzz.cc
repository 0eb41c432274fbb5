// Fuzzes the hook datagram parser: whatever a job sends on the socket must
// never crash `run`, and every event it yields must be well formed.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "record/hook_receiver.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  stallscope::HookEvents events;
  stallscope::ParseHookDatagram(std::string_view(reinterpret_cast<const char*>(data), size),
                                1'000'000'000, events);
  for (const stallscope::StepEvent& e : events.steps) {
    if (e.wait_seconds < 0 || e.step_seconds < 0) std::abort();
  }
  for (const stallscope::StepSync& e : events.syncs) {
    if (e.sync_seconds < 0 || e.cpu_seconds < 0) std::abort();
  }
  return 0;
}
