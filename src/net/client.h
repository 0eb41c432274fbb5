// `stallscope net probe HOST`: point-to-point measurements against a
// `net serve` peer (net/server.h), over the protocol of net/protocol.h.
//
//  - route: the local address and interface the kernel uses for HOST, and
//    that interface's MTU (net/route.h);
//  - the peer's interface and MTU, as the server reports them;
//  - round-trip latency: TCP ping-pongs (TCP_NODELAY), p50/p99;
//  - TCP throughput: one stream, then N parallel streams, each for a set
//    duration; bytes are those the server acknowledges having received;
//  - path MTU: UDP datagrams with don't-fragment set (IP_MTU_DISCOVER =
//    IP_PMTUDISC_DO), binary search of the largest payload the server
//    acknowledges (ping -M do -s SIZE, without root), and the kernel's own
//    path MTU (IP_MTU) on the connected socket afterwards.
// Blocking, bounded by timeouts; not thread-safe (it runs its own stream
// threads and joins them before returning).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "core/status.h"

namespace stallscope::net {

struct ProbeOptions {
  std::string host;
  uint16_t port = 0;
  double duration_seconds = 3.0;  // per throughput test
  int streams = 4;                // the parallel test; 1 skips it
  int pings = 200;                // latency samples
  double timeout_seconds = 5.0;   // connect and reply timeout
  bool throughput = true;         // false: latency and MTU only
};

struct ThroughputResult {
  int streams = 0;
  uint64_t bytes = 0;  // acknowledged by the server, all streams
  double seconds = 0;  // the longest stream, start to acknowledgement
  double bits_per_second = 0;
};

struct LatencyResult {
  int samples = 0;
  double min_us = 0;
  double p50_us = 0;
  double p99_us = 0;
  double max_us = 0;
};

struct PathMtuResult {
  bool measured = false;               // false: UDP probes got no answer at all
  uint64_t largest_payload = 0;        // UDP payload bytes acknowledged with DF set
  uint64_t path_mtu = 0;               // largest_payload + IP and UDP headers
  std::optional<uint64_t> kernel_mtu;  // IP_MTU of the connected socket
  int probes = 0;                      // datagrams sent
  std::string note;                    // why it is not measured, when not
};

struct ProbeResult {
  std::string host;     // as given
  std::string address;  // resolved
  uint16_t port = 0;
  std::string local_address;
  std::string local_interface;
  std::optional<uint64_t> local_mtu;
  std::string peer_interface;
  std::optional<uint64_t> peer_mtu;
  LatencyResult latency;
  std::optional<ThroughputResult> single;
  std::optional<ThroughputResult> parallel;
  PathMtuResult mtu;
};

// Runs every test in turn; `progress` (may be empty) hears what runs now.
// Unavailable (naming HOST:PORT) when no server answers; InvalidArgument
// for a HOST that does not resolve or a server that is busy.
Result<ProbeResult> RunProbe(const ProbeOptions& options,
                             const std::function<void(const std::string&)>& progress);

}  // namespace stallscope::net
