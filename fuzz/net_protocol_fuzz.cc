// libFuzzer target for the net serve/probe wire protocol (net/protocol.h):
// any bytes, as a TCP message and as a padded UDP datagram. A message that
// parses must encode back to bytes that parse to the same type, and never
// to more than a header plus kMaxBodyBytes; an MtuAck never to more than
// kMaxMtuAckBytes (what keeps an answer no larger than its probe). The same
// bytes as text are an --allow list (net/admission.h): parsed or refused,
// never a crash, and a parsed list matches each of its own ranges.
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <variant>

#include "net/admission.h"
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
    if (std::holds_alternative<MtuAck>(*parsed) && again.size() > kMaxMtuAckBytes) std::abort();
    auto reparsed = ParseMessage(again);
    if (!reparsed.ok() || reparsed->index() != parsed->index()) std::abort();
  }
  auto allow = AllowList::Parse(std::string(reinterpret_cast<const char*>(data), size));
  if (allow.ok()) {
    for (const AddressRange& range : allow->ranges()) {
      if (!allow->Allows(range.base)) std::abort();
    }
  }
  return 0;
}
