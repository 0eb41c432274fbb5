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
#include "sample/net_probe.h"

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

// Runs every test in turn; `progress` (may be empty) hears what runs now.
// Unavailable (naming HOST:PORT) when no server answers; InvalidArgument
// for a HOST that does not resolve or a server that is busy.
Result<ProbeResult> RunProbe(const ProbeOptions& options,
                             const std::function<void(const std::string&)>& progress);

}  // namespace stallscope::net
