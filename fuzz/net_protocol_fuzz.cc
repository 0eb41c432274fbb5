// libFuzzer target for the net serve/probe wire protocol (net/protocol.h):
// any bytes, as a TCP message and as a padded UDP datagram. A message that
// parses must encode back to bytes that parse to the same type, and never
// to more than a header plus kMaxBodyBytes.
#include <cstdint>
#include <cstdlib>
#include <span>

#include "net/protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace stallscope::net;
  std::span<const uint8_t> bytes(data, size);
  (void)ParseHeader(bytes);
  for (bool padding : {false, true}) {
    auto parsed = ParseMessage(bytes, padding);
    if (!parsed.ok()) continue;
    std::vector<uint8_t> again = Encode(*parsed);
    if (again.size() > kHeaderBytes + kMaxBodyBytes) std::abort();
    auto reparsed = ParseMessage(again);
    if (!reparsed.ok() || reparsed->index() != parsed->index()) std::abort();
  }
  return 0;
}
