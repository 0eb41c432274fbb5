// Fuzzes the exporter's HTTP request-head parser (and, on the same bytes, the
// hook-record table and the exposition writer fed from it): whatever a client
// sends must never crash the exporter, a complete head must lie inside the
// buffer and the bound, and an error must carry a 4xx/5xx status.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "export/http_request.h"
#include "export/job_metrics.h"
#include "render/exposition.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  constexpr size_t kMax = 1024;
  stallscope::HttpParseResult r = stallscope::ParseHttpRequestHead(text, kMax);
  using State = stallscope::HttpParseResult::State;
  if (r.state == State::kComplete) {
    if (r.head.head_bytes > size || r.head.head_bytes > kMax + 2) std::abort();
    if (r.head.path.empty() || r.head.path[0] != '/') std::abort();
  } else if (r.state == State::kError) {
    if (r.status < 400 || r.status > 599 || r.reason.empty()) std::abort();
  } else if (size > kMax + 2) {
    std::abort();  // incomplete beyond the bound: the server would buffer forever
  }
  (void)stallscope::ParseListenAddress(text);
  // The same bytes as hook datagrams: the job table stays bounded and its
  // series render.
  stallscope::JobTable table(8, 300);
  table.Ingest(text, 1);
  if (table.processes().size() > 8) std::abort();
  stallscope::Exposition e;
  table.Emit(e, "h", 2);
  if (e.rejected() != 0) std::abort();
  (void)stallscope::RenderExposition(e.families());
  return 0;
}
