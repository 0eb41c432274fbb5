// libFuzzer target: ParseKernelLog on any text; every kill it returns must be
// a positive pid, every Xid a number of at most 5 digits, every port event a
// named device, each with a message taken from the input; ParseOomKills says
// the same as ParseKernelLog's kills.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "probe/kernel_log.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  stallscope::KernelLogEvents events = stallscope::ParseKernelLog(text);
  for (const stallscope::OomKill& k : events.kills) {
    if (k.pid <= 0 || k.line == 0 || text.find(k.message) == std::string_view::npos) std::abort();
    (void)k.rss_bytes();
  }
  for (const stallscope::GpuXid& x : events.xids) {
    if (x.xid < 0 || x.xid > 99999 || x.line == 0 || x.bus_id.size() > 32 ||
        text.find(x.message) == std::string_view::npos)
      std::abort();
    (void)stallscope::XidMeaning(x.xid);
  }
  for (const stallscope::PortLogEvent& e : events.port_events) {
    if (e.line == 0 || text.find(e.message) == std::string_view::npos) std::abort();
  }
  if (stallscope::ParseOomKills(text).size() != events.kills.size()) std::abort();
  return 0;
}
