// RDMA ports: InfiniBand and RoCE, from /sys/class/infiniband.
//
// ReadInfinibandDevices lists every RDMA device (HCA) under a Root with its
// firmware, node GUID, and per port the state, physical state, rate, link
// layer (InfiniBand, or Ethernet for RoCE), LID, error and congestion counters
// (port_xmit_wait, the hw_counters of RoCE ports) and the netdev
// the port runs over. A host without RDMA has no /sys/class/infiniband: that
// is an empty list, not an error. The string parsers are pure so fuzz
// targets drive them; the reader passes each the file path as source.
// Stateless; thread-safe.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/file.h"
#include "core/status.h"
#include "sample/network.h"

namespace stallscope {

// `state` ("4: ACTIVE") or `phys_state` ("5: LinkUp", "3: Disabled").
Result<IbPortState> ParseIbPortState(std::string_view text, std::string_view source);

// `rate`: "100 Gb/sec (4X EDR)", "2.5 Gb/sec (1X SDR)" -> gbps and the text.
Result<IbRate> ParseIbRate(std::string_view text, std::string_view source);

// `lid`: a 16-bit hexadecimal number, "0x1a".
Result<uint32_t> ParseIbLid(std::string_view text, std::string_view source);

// Devices sorted by name, ports by number. Attributes the driver does not
// offer are empty or nullopt; one that reads but does not parse is a
// ParseError naming the file.
Result<std::vector<InfinibandDevice>> ReadInfinibandDevices(const Root& root);

}  // namespace stallscope
