// The interface addresses of a capture: getifaddrs(3) answers from the
// kernel, not from a file, so a capture keeps them as the JSON file
// `stallscope/addresses.json` under its root ({"eth0": ["10.0.0.5/24",
// "fe80::1/64"], ...}, docs/captures.md), and the snapshot reads them back
// under a root that holds it. Pure; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"
#include "sample/network.h"

namespace stallscope {

inline constexpr const char* kAddressesCapturePath = "/stallscope/addresses.json";

std::string AddressesToCaptureJson(const InterfaceAddresses& addresses);

// ParseError naming `source` for text that is not such a file; an address
// that is not "ADDRESS/PREFIX" is a ParseError naming the interface.
Result<InterfaceAddresses> ParseCapturedAddresses(std::string_view text, std::string_view source);

}  // namespace stallscope
