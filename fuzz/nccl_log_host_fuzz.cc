// libFuzzer target: what doctor and run take from an NCCL log. The line
// marks (first "via NET/Socket", first "NET/IB : Using" up to it) fed whole
// and in uneven chunks must equal a plain line-by-line search; the CUDA
// runtime of every line read as a version is digits and dots; the host
// network findings of the summary only ever carry network ids.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string_view>

#include "analyze/nccl_log/host.h"
#include "formats/nccl_log/nccl_log.h"

namespace {

struct Marks {
  uint64_t socket = 0;
  uint64_t ib = 0;
};

Marks Plain(std::string_view text) {
  Marks m;
  uint64_t line = 1;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    std::string_view l =
        text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    // A NET/IB line counts up to the socket line's needle, on its own line too.
    const size_t ib = l.find("NET/IB : Using"), socket = l.find("via NET/Socket");
    if (m.ib == 0 && ib != std::string_view::npos && ib < socket) m.ib = line;
    if (socket != std::string_view::npos) {
      m.socket = line;
      break;
    }
    if (end == std::string_view::npos) break;
    start = end + 1;
    ++line;
  }
  return m;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  Marks want = Plain(text);
  stallscope::NcclLineMarks whole;
  whole.Feed(text);
  stallscope::NcclLineMarks chunked;
  size_t step = 1 + (size % 17);
  for (size_t at = 0; at < size; at += step) chunked.Feed(text.substr(at, step));
  for (const stallscope::NcclLineMarks* m : {&whole, &chunked}) {
    if (m->first_socket_line() != want.socket || m->first_ib_line() != want.ib) abort();
  }
  for (size_t at = 0; at < size;) {
    size_t end = text.find('\n', at);
    std::string_view line = text.substr(at, end == std::string_view::npos ? size - at : end - at);
    for (char c : stallscope::NcclCudaRuntime(line)) {
      if (!((c >= '0' && c <= '9') || c == '.')) abort();
    }
    if (end == std::string_view::npos) break;
    at = end + 1;
  }
  stallscope::NcclLogFile log;
  log.path = "fuzz.log";
  log.summary = stallscope::ParseNcclLog(text);
  log.first_socket_line = want.socket;
  for (const auto& host : {std::optional<stallscope::HostRdmaPorts>(),
                           std::optional<stallscope::HostRdmaPorts>(
                               stallscope::HostRdmaPorts{"node1", {"mlx5_0:1 InfiniBand"}})}) {
    for (const stallscope::Finding& f : stallscope::NcclHostNetworkFindings(log, host).findings) {
      if (f.layer != stallscope::Layer::kNetwork) abort();
    }
  }
  (void)stallscope::DescribeNcclLogFile(log);
  return 0;
}
