// Asking the kernel how packets to a peer leave this host: which source
// address and interface the route uses, and that interface's MTU.
//
// A UDP socket connected to the peer sends nothing, but the kernel picks its
// route and source address right away (getsockname tells it); the
// interface is the one that holds that address (getifaddrs). This is what
// `ip route get ADDR` prints, without root and without netlink. Lives in
// src/net/ beside `net probe`, which reports the same route; `doctor` uses
// it for MASTER_ADDR. Stateless; thread-safe.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "sample/network.h"

namespace stallscope::net {

// A resolved peer: its socket address and its text form.
struct PeerAddress {
  sockaddr_storage address{};
  socklen_t length = 0;
  std::string text;  // "10.0.0.2" or "fd00::2"
};

// getaddrinfo on HOST (a name or a literal), first IPv4 then IPv6 answer;
// port set to `port`. InvalidArgument naming HOST when it does not resolve.
Result<PeerAddress> ResolvePeer(const std::string& host, uint16_t port);

// The text form of a socket address ("10.0.0.2"), without the port.
std::string AddressText(const sockaddr* address);

// The interface holding local address `address` (text form); empty if none.
std::string InterfaceOfAddress(const std::string& address);

// The MTU of interface `name` (SIOCGIFMTU); nullopt if it cannot be read.
std::optional<uint64_t> InterfaceMtu(const std::string& name);

// Where the kernel sends packets for `host`; `label` names the peer in
// findings ("MASTER_ADDR=node1"). Never fails: a failure is in .error.
PeerRoute RouteTo(const std::string& host, const std::string& label);

// The routes a job's peers take: MASTER_ADDR when set, then each of `peers`
// (labelled "--peer HOST").
std::vector<PeerRoute> RoutesForJob(const TrainingEnvironment& environment,
                                    const std::vector<std::string>& peers);

}  // namespace stallscope::net
